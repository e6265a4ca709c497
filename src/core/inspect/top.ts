/**
 * The data of `ax top`: one read of the live system (backlog per type, the worker registry, tasks
 * submitted since the previous read, the recent errors of one type, flow control), and the pure
 * functions that turn readings and their history into the snapshot the views show and `--once
 * --json` prints. A refresh is a handful of index-range statements (see docs/benchmarks.md).
 */
import {groupBySignature, type SignatureRow} from '../dlq/signature.js';
import {errorMessage} from '../errors.js';
import type {BacklogReport, InspectStore, WorkerRegistryStore, WorkerRow} from '../store/types.js';
import {attempts, failurePct, quantileMs} from './rates.js';
import {alertLevel, backlogTrendPerMin, pushSample, staleAlert, type Alert, type TopSample} from './top-history.js';
import {summarizeWorkers, typeActivity, workerView, type WorkerStatus} from './workers.js';

export {
  alertLevel,
  backlogTrendPerMin,
  HISTORY_MS,
  pushSample,
  staleAlert,
  type Alert,
  type AlertLevel,
  type TopSample,
} from './top-history.js';

/** Submit counts stop this long before the database's now: inserts still committing are counted next time. */
export const SUBMIT_SETTLE_MS = 1000;
/** The submit window of a first (or `--once`) read. */
export const SUBMIT_FIRST_WINDOW_MS = 10_000;
/** The longest submit window (a read after a long outage counts at most this far back). */
export const SUBMIT_MAX_WINDOW_MS = 60_000;
/** How far back the errors of the selected type are read. */
export const ERRORS_WINDOW_MS = 15 * 60_000;
/** Stopped and stale workers shown for this long after their last heartbeat. */
export const WORKERS_SEEN_WITHIN_MS = 60 * 60_000;

/** Breaker, pause and parked tasks of one type, from the flow-control feature when it exists. */
export interface FlowState {
  breaker: 'closed' | 'open' | 'half-open' | null;
  paused: boolean | null;
  /** Waiting tasks held back (parked: paused, breaker, no handler, a limit), all kinds together. */
  parked: number | null;
  /**
   * The task key that holds most of the type's backlog (core/types/keys.ts dominantKey), when the
   * keys were read (types with a backlog of at least DOMINANT_MIN_BACKLOG); absent or null: none.
   */
  dominant?: {key: string; share: number} | null;
}

/**
 * The seam to flow control (breakers, pause/resume; issue 11), implemented over the type registry
 * by core/types/top-flow.ts. Without one (a caller that passes none) `ax top` shows "—" for
 * breaker and paused and says pause is not available.
 */
export interface FlowControl {
  /**
   * Breaker, pause and parked count per type; a type not listed is closed, not paused, none parked.
   * With the read's backlog, also the dominant key of the types whose backlog is large enough.
   */
  flowStates(backlog?: BacklogReport): Promise<Map<string, FlowState>>;
  /** Pauses or resumes a type as `operator` (audited); resolves with what to tell the operator. */
  setPaused(p: {type: string; paused: boolean; operator: string}): Promise<string>;
}

/** What `p` says without flow control. */
export const PAUSE_UNAVAILABLE = 'pause/resume needs flow control (the type registry), which this source does not have';

const UNREGISTERED: FlowState = {breaker: 'closed', paused: false, parked: 0};

export type TopStore = Pick<InspectStore, 'backlog' | 'failureGroups' | 'tasksCreatedCount'> & Pick<WorkerRegistryStore, 'workersList'>;

/** Raw results of one read; any part may have failed (its error is kept, the others still show). */
export interface TopReading {
  backlog: BacklogReport | null;
  workers: WorkerRow[] | null;
  /** Tasks created in [since, until) (database clock). */
  submitted: {count: number; since: Date; until: Date} | null;
  errors: {type: string; groups: SignatureRow[]} | null;
  flow: Map<string, FlowState> | null;
  /** What failed, by part ("backlog: connect ECONNREFUSED …"). */
  failures: string[];
}

export interface TopReadOptions {
  /** The `until` of the previous read's submit window (null on the first read). */
  submittedUntil: Date | null;
  /** The type whose errors to read (null: none). */
  errorsType: string | null;
  flow?: FlowControl | undefined;
}

/**
 * One read. The backlog goes first (its `at` is the database clock the submit window is cut from);
 * the others run together. Never throws: a part that fails is null and its error is in `failures`.
 */
export async function readTop(store: TopStore, o: TopReadOptions): Promise<TopReading> {
  const failures: string[] = [];
  const part = async <T>(name: string, f: () => Promise<T>): Promise<T | null> => {
    try {
      return await f();
    } catch (e) {
      failures.push(`${name}: ${errorMessage(e)}`);
      return null;
    }
  };
  const backlog = await part('backlog', () => store.backlog());
  const at = backlog?.at ?? null;
  const win = at === null ? null : submitWindow(o.submittedUntil, at);
  const [workers, submitted, errors, flow] = await Promise.all([
    part('workers', () => store.workersList({seenWithinMs: WORKERS_SEEN_WITHIN_MS})),
    win === null ? null : part('submitted', async () => ({count: await store.tasksCreatedCount(win), ...win})),
    o.errorsType === null || at === null
      ? null
      : part('errors', async () => ({
          type: o.errorsType!,
          groups: groupBySignature(await store.failureGroups({since: new Date(at.getTime() - ERRORS_WINDOW_MS), type: o.errorsType!})),
        })),
    o.flow === undefined ? null : part('flow control', () => o.flow!.flowStates(backlog ?? undefined)),
  ]);
  return {backlog, workers, submitted, errors, flow, failures};
}

/**
 * The submit window of a read at database time `at`: from the previous window's end (or
 * SUBMIT_FIRST_WINDOW_MS back; never more than SUBMIT_MAX_WINDOW_MS) to SUBMIT_SETTLE_MS before
 * `at`, so consecutive reads count each task once. Null when it would be empty.
 */
export function submitWindow(prevUntil: Date | null, at: Date): {since: Date; until: Date} | null {
  const until = at.getTime() - SUBMIT_SETTLE_MS;
  const since = Math.max(prevUntil?.getTime() ?? until - SUBMIT_FIRST_WINDOW_MS, until - SUBMIT_MAX_WINDOW_MS);
  return until > since ? {since: new Date(since), until: new Date(until)} : null;
}

export interface TopTypeRow {
  type: string;
  due: number;
  /** Waiting for their run_at or a retry (parked tasks included: see `parked`). */
  delayed: number;
  /** Held back by flow control (pause, breaker, no handler, a limit); null: the registry was not read. */
  parked: number | null;
  running: number;
  dead: number;
  /** Attempts per second over the live workers' last heartbeat intervals (null: no live worker reported). */
  rate: number | null;
  failurePct: number | null;
  p95Ms: number | null;
  breaker: FlowState['breaker'];
  paused: FlowState['paused'];
  /** Age of the oldest due task (ms), null when none is due. */
  oldestDueMs: number | null;
  /** A task key holding most of the backlog (≥ 50 % of ≥ 100 waiting: core/types/keys.ts); null: none, or not read. */
  dominantKey: {key: string; share: number} | null;
}

export interface TopSnapshot {
  /** Database time of the read (ISO), null when the database could not be read. */
  at: string | null;
  cell: string;
  workers: Record<WorkerStatus, number>;
  /** Tasks submitted per second (the last submit window); null when unknown. */
  submitRate: number | null;
  /** Attempts finished per second over live workers; null when unknown. */
  consumeRate: number | null;
  backlog: {total: number; due: number; delayed: number; running: number; dead: number; trendPerMin: number | null} | null;
  alert: Alert;
  types: TopTypeRow[];
  /** Every worker of the registry seen within WORKERS_SEEN_WITHIN_MS: live first (the per-worker view). */
  workerList: TopWorker[];
  /** Recent errors (ERRORS_WINDOW_MS) of `errors.type`, the largest groups first. */
  errors: {type: string; groups: SignatureRow[]} | null;
  /** Whether breaker and paused come from flow control (false: shown as "—"). */
  flowControl: boolean;
  /** What could not be read this time (the rest is shown; the next refresh retries). */
  failures: string[];
}

/** One worker as the per-worker view shows it (a compact WorkerView, as `ax workers` lists it). */
export interface TopWorker {
  id: string;
  status: WorkerStatus;
  pools: Record<string, number>;
  inFlight: number;
  /** Attempts finished per second over its last heartbeat interval (null: not live, or one heartbeat so far). */
  rate: number | null;
  rssBytes: number | null;
  heartbeatAgeMs: number;
  /** ISO time. */
  startedAt: string;
  /** The types it ran in its last interval, most attempts first. */
  types: string[];
}

const STATUS_ORDER: Record<WorkerStatus, number> = {live: 0, stale: 1, stopped: 2};

/**
 * The snapshot of a reading. `history` is the samples so far including this reading's (see
 * sampleOf/pushSample); the backlog trend comes from that history (backlogTrendPerMin). When the
 * backlog could not be read the alert is `stale` (since the last successful read): never a level
 * judged from old data.
 */
export function buildSnapshot(r: TopReading, history: readonly TopSample[], cell: string): TopSnapshot {
  const views = (r.workers ?? []).map((w) => workerView(w));
  const summary = summarizeWorkers(views);
  const activity = typeActivity(views);
  const nowMs = r.backlog?.at.getTime() ?? null;
  // Types with work in the tables, and those the live workers ran in their last interval.
  const ran = [...activity].filter(([, a]) => attempts(a.window) + a.window.released > 0).map(([type]) => type);
  const names = new Set<string>([...(r.backlog?.rows.map((x) => x.type) ?? []), ...ran]);
  const byType = new Map(r.backlog?.rows.map((x) => [x.type, x]) ?? []);
  const types: TopTypeRow[] = [...names].sort().map((type) => {
    const b = byType.get(type);
    const a = activity.get(type);
    const flow = r.flow === null ? undefined : (r.flow.get(type) ?? UNREGISTERED);
    return {
      type,
      due: b?.due ?? 0,
      delayed: b?.delayed ?? 0,
      parked: flow?.parked ?? null,
      running: b?.running ?? 0,
      dead: b?.dead ?? 0,
      rate: a?.rate ?? null,
      failurePct: a ? failurePct(a.window) : null,
      p95Ms: a ? quantileMs(a.window.hist, 0.95) : null,
      breaker: flow?.breaker ?? null,
      paused: flow?.paused ?? null,
      oldestDueMs: b?.oldestDueAt && nowMs !== null ? Math.max(0, nowMs - b.oldestDueAt.getTime()) : null,
      dominantKey: flow?.dominant ?? null,
    };
  });
  const sum = (k: 'due' | 'delayed' | 'running' | 'dead'): number => (r.backlog?.rows ?? []).reduce((n, x) => n + x[k], 0);
  const trend = backlogTrendPerMin(history);
  const workerList: TopWorker[] = views
    .map((v) => ({
      id: v.id,
      status: v.status,
      pools: v.pools,
      inFlight: v.inFlight,
      rate: v.rate,
      rssBytes: v.rssBytes,
      heartbeatAgeMs: v.heartbeatAgeMs,
      startedAt: v.startedAt.toISOString(),
      types: Object.entries(v.types)
        .sort(([, a], [, b]) => attempts(b) - attempts(a))
        .map(([t]) => t),
    }))
    .sort((a, b) => STATUS_ORDER[a.status] - STATUS_ORDER[b.status] || a.id.localeCompare(b.id));
  return {
    at: r.backlog?.at.toISOString() ?? null,
    cell,
    workers: summary.counts,
    submitRate: submitRate(r),
    consumeRate: r.workers === null ? null : summary.rate,
    backlog:
      r.backlog === null
        ? null
        : {
            total: sum('due') + sum('delayed') + sum('running'),
            due: sum('due'),
            delayed: sum('delayed'),
            running: sum('running'),
            dead: sum('dead'),
            trendPerMin: trend,
          },
    alert: r.backlog === null ? staleAlert(history) : alertLevel(history),
    types,
    workerList,
    errors: r.errors,
    flowControl: r.flow !== null,
    failures: r.failures,
  };
}

function submitRate(r: TopReading): number | null {
  if (r.submitted === null) return null;
  const s = (r.submitted.until.getTime() - r.submitted.since.getTime()) / 1000;
  return s > 0 ? r.submitted.count / s : null;
}

/** The history sample of a reading (null when the backlog could not be read). */
export function sampleOf(r: TopReading, prev: TopSample | undefined): TopSample | null {
  if (r.backlog === null) return null;
  const views = (r.workers ?? []).map((w) => workerView(w));
  const backlog = r.backlog.rows.reduce((n, x) => n + x.due + x.delayed + x.running, 0);
  const due = r.backlog.rows.reduce((n, x) => n + x.due, 0);
  // A part that failed keeps the previous value, so a sparkline does not dip to zero on an error.
  return {
    t: r.backlog.at.getTime(),
    backlog,
    due,
    submitRate: submitRate(r) ?? prev?.submitRate ?? null,
    consumeRate: r.workers === null ? (prev?.consumeRate ?? null) : summarizeWorkers(views).rate,
  };
}

/**
 * The snapshot of a refresh that could not read at all (the store did not open): no data, the
 * alert stale since the last successful read of `history`.
 */
export function unreachableSnapshot(cell: string, failure: string, history: readonly TopSample[]): TopSnapshot {
  return {
    at: null,
    cell,
    workers: {live: 0, stale: 0, stopped: 0},
    submitRate: null,
    consumeRate: null,
    backlog: null,
    alert: staleAlert(history),
    types: [],
    workerList: [],
    errors: null,
    flowControl: false,
    failures: [failure],
  };
}

/** What `ax top` carries from one refresh to the next. */
export interface TopState {
  history: TopSample[];
  submittedUntil: Date | null;
}

export const initialTopState = (): TopState => ({history: [], submittedUntil: null});

/** One refresh: a read, the history moved on, the snapshot. Never throws (failures are in the snapshot). */
export async function refreshTop(
  store: TopStore,
  state: TopState,
  o: {cell: string; errorsType: string | null; flow?: FlowControl | undefined},
): Promise<{state: TopState; snapshot: TopSnapshot}> {
  const r = await readTop(store, {submittedUntil: state.submittedUntil, errorsType: o.errorsType, flow: o.flow});
  const sample = sampleOf(r, state.history[state.history.length - 1]);
  const history = sample === null ? state.history : pushSample(state.history, sample);
  return {
    state: {history, submittedUntil: r.submitted?.until ?? state.submittedUntil},
    snapshot: buildSnapshot(r, history, o.cell),
  };
}
