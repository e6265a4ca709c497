/**
 * Gathers what the checks read, through the store and broker seams, in one pass: the database
 * clock first (its round trip bounds the skew), then the rest at once. A source that fails becomes
 * a SourceError, never an exception: `ax doctor` reports a server that is down instead of dying.
 */
import type {Broker} from '../broker/types.js';
import {AxError, errorMessage} from '../errors.js';
import type {
  BacklogReport,
  DoctorStore,
  FlowStore,
  InspectStore,
  RescueStore,
  TypeKeysReport,
  WorkerRegistryStore,
} from '../store/types.js';
import type {Clock} from '../time.js';
import {DEFAULT_PRIORITY} from '../task/model.js';
import {DOMINANT_MIN_BACKLOG} from '../types/keys.js';
import {splitWorkers} from './evidence.js';
import type {BrokerEvidence, DbEvidence, Source, SourceError} from './types.js';

/** The store seams the doctor reads. */
export type DoctorReadStore = Pick<InspectStore, 'clockNow' | 'backlog' | 'failureGroups'> &
  Pick<RescueStore, 'tasksFindUndispatched'> &
  Pick<WorkerRegistryStore, 'workersList'> &
  Pick<FlowStore, 'typesReport' | 'typeKeys'> &
  DoctorStore;

/** Most never-rung tasks read (a sample: the finding says "100+"). */
export const UNRUNG_SAMPLE = 100;
/** Most repeated successes reported. */
export const REPEATS_LIMIT = 50;
/** The window's latest successes searched for repeats (a sample on a busy system: cost bounded). */
export const SUCCESS_SAMPLE = 20_000;
/** The window's latest attempt ends timed. */
export const ATTEMPTS_SAMPLE = 5000;
/**
 * The types whose task keys are read (the largest backlogs of at least DOMINANT_MIN_BACKLOG): each
 * read is a scan of the type's keyed backlog in idx_tasks_key (FlowStore.typeKeys).
 */
export const KEYS_TYPES = 20;

/** The top key of each of the KEYS_TYPES largest backlogs (due + delayed ≥ DOMINANT_MIN_BACKLOG), by type. */
export async function keysOf(store: Pick<FlowStore, 'typeKeys'>, backlog: BacklogReport): Promise<Record<string, TypeKeysReport>> {
  const big = backlog.rows
    .map((r) => ({type: r.type, n: r.due + r.delayed}))
    .filter((r) => r.n >= DOMINANT_MIN_BACKLOG)
    .sort((a, b) => b.n - a.n)
    .slice(0, KEYS_TYPES);
  const reads = await Promise.all(big.map(async ({type}) => [type, await store.typeKeys({type, limit: 1})] as const));
  return Object.fromEntries(reads);
}

export function sourceError(e: unknown): SourceError {
  if (e instanceof AxError) {
    const reason = e.details?.reason;
    return {code: e.code, message: e.message, ...(typeof reason === 'string' ? {reason} : {})};
  }
  return {code: 'internal', message: errorMessage(e)};
}

/** Reads the database's evidence; `store` is the error when the store could not even be opened. */
export async function gatherDb(
  store: DoctorReadStore | SourceError,
  o: {clock: Clock; since: Date; republishAfterMs: number; liveMs: number},
): Promise<Source<DbEvidence>> {
  if (!('clockNow' in store)) return {ok: false, error: store};
  try {
    const t0 = o.clock.now();
    const m0 = o.clock.monotonic();
    const dbAt = await store.clockNow();
    const rttMs = Math.round(o.clock.monotonic() - m0);
    const localAt = new Date(t0 + rttMs / 2);
    const read = store.backlog();
    const [backlog, duePools, workers, failures, deaths, undispatched, repeats, attempts, flow, keys] = await Promise.all([
      read,
      store.duePerPool(),
      store.workersList(),
      store.failureGroups({since: o.since}),
      store.failureGroups({since: o.since, deadOnly: true}),
      store.tasksFindUndispatched({limit: UNRUNG_SAMPLE, republishAfterMs: o.republishAfterMs}),
      store.successRepeats({since: o.since, sample: SUCCESS_SAMPLE, limit: REPEATS_LIMIT}),
      store.attemptTimes({since: o.since, sample: ATTEMPTS_SAMPLE}),
      store.typesReport({liveMs: o.liveMs}),
      read.then((b) => keysOf(store, b)),
    ]);
    return {
      ok: true,
      value: {dbAt, localAt, rttMs, backlog, duePools, workers, failures, deaths, undispatched, repeats, attempts, flow, keys},
    };
  } catch (e) {
    return {ok: false, error: sourceError(e)};
  }
}

/**
 * The handler types of the live workers, by worker id, from their heartbeats; null when one of them
 * reports none (an older ax): which types it handles is then unknown. Stale workers do not count
 * (core/liveness.ts; `heartbeatMs` is AX_HEARTBEAT).
 */
export function handledTypesOf(db: Source<DbEvidence>, heartbeatMs: number): Record<string, string[]> | null {
  if (!db.ok) return null;
  const {live} = splitWorkers(db.value.workers, heartbeatMs);
  if (live.some((w) => w.types === undefined)) return null;
  return Object.fromEntries(live.map((w) => [w.id, w.types ?? []]));
}

/**
 * Reads the cell's queues as `ax queues` does (Broker.inspectQueues: passive checks, declares
 * nothing, so a doctor pointed at a wrong cell creates no queues); a missing queue has no depth
 * (the checks read it as 0).
 */
export async function gatherBroker(broker: Pick<Broker, 'inspectQueues'> | SourceError): Promise<Source<BrokerEvidence>> {
  if (!('inspectQueues' in broker)) return {ok: false, error: broker};
  try {
    const infos = await broker.inspectQueues();
    const depths: Record<string, number> = {};
    for (const q of infos) if (q.exists) depths[q.name] = q.messages ?? 0;
    // io/cpu name each pool's normal-level queue (the one queue per pool before priorities).
    const named = (role: 'io' | 'cpu' | 'poison'): string =>
      infos.find((q) => (role === 'poison' ? q.role === 'poison' : q.pool === role && q.priority === DEFAULT_PRIORITY))?.name ?? role;
    const poolQueues = infos.filter((q) => q.role === 'pool').map((q) => q.name);
    return {ok: true, value: {depths, queues: {io: named('io'), cpu: named('cpu'), poison: named('poison')}, poolQueues}};
  } catch (e) {
    return {ok: false, error: sourceError(e)};
  }
}
