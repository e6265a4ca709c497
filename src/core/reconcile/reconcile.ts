import {errorMessage} from '../errors.js';
import type {Logger} from '../log.js';
import type {Broker} from '../broker/types.js';
import {type BackoffOptions, nextAfterFailure, retryDelayMs} from '../retry/backoff.js';
import type {HeldForDispatch, HotPathStore, Outcome, RescueStore} from '../store/types.js';
import {type Clock, type Random, sleep} from '../time.js';
import type {AxEvents} from '../events.js';
import type {ReconcileReport} from './report.js';

/** What the rescuer and the reconciler need of the task database. */
export type ReconcileStore = RescueStore & Pick<HotPathStore, 'outcomesApply' | 'doorbellsMark'>;

export interface ReconcileOptions {
  store: ReconcileStore;
  broker: Broker;
  clock: Clock;
  random: Random;
  logger: Logger;
  backoff: BackoffOptions;
  /** Most tasks handled per kind in one run (default 10,000). */
  limit: number;
  /** Re-publish rate cap, tasks per second. */
  rate: number;
  /** Ring again for due tasks whose last doorbell is older than this. */
  republishAfterMs: number;
  /** Report only; change nothing. */
  dryRun: boolean;
  actor: string;
  /**
   * Cron, when schedules exist: `repair` runs first (recreates missing occurrences; returns the
   * schedules repaired) and `beforeRing` drops, and cancels, occurrences that must not be rung
   * (paused or removed schedule, overlap policy) — the same check the scheduler makes at fire time.
   * Neither runs in a dry run.
   */
  cron?: {repair(): Promise<string[]>; beforeRing(due: HeldForDispatch[]): Promise<HeldForDispatch[]>};
  /** Where to emit lease:expired, doorbell:published (by 'reconciler') and reconcile:done. */
  events?: AxEvents;
}

export type {ReconcileReport} from './report.js';

const CHUNK = 500;
const SAMPLE = 20;

export type RescueOptions = Pick<ReconcileOptions, 'store' | 'random' | 'backoff' | 'limit' | 'actor' | 'events'> & {dryRun?: boolean};

/**
 * The rescuer: running tasks whose lease expired (their worker died or hung) become failed with
 * backoff — the attempt counts — or dead when out of retries. Guarded by fence and by the lease
 * still being expired, so a worker that renewed in between wins. Runs every few seconds in
 * `ax scheduler` and as the first step of every reconcile.
 */
export async function rescueExpired(o: RescueOptions): Promise<ReconcileReport['expiredLeases']> {
  const out: ReconcileReport['expiredLeases'] = {found: 0, failed: 0, dead: 0, stale: 0, ids: []};
  const expired = await o.store.leasesFindExpired({limit: o.limit});
  out.found = expired.length;
  out.ids = expired.slice(0, SAMPLE).map((e) => e.id);
  if (o.dryRun) return out;
  for (let i = 0; i < expired.length; i += CHUNK) {
    const outcomes: Outcome[] = expired.slice(i, i + CHUNK).map((e) => {
      const error = `lease expired: worker ${e.worker ?? '?'} stopped renewing it (attempt ${e.attempt})`;
      const used = e.attempt - e.retryBase; // counted from the latest replay, like the worker's
      return nextAfterFailure(used, e.maxRetries, false) === 'dead'
        ? {kind: 'rescueDeadLetter', id: e.id, fence: e.fence, error}
        : {kind: 'rescue', id: e.id, fence: e.fence, error, retryDelayMs: retryDelayMs(used, o.backoff, o.random)};
    });
    const res = await o.store.outcomesApply({outcomes, actor: o.actor});
    const applied = new Set(res.applied);
    for (const [j, o2] of outcomes.entries()) {
      if (!applied.has(o2.id)) continue;
      const to = o2.kind === 'rescueDeadLetter' ? 'dead' : 'failed';
      out[to]++;
      const e = expired[i + j]!;
      o.events?.emit('lease:expired', {id: e.id, attempt: e.attempt, to, worker: e.worker});
    }
    out.stale += res.stale.length;
  }
  return out;
}

/**
 * One reconcile pass. Running tasks whose lease expired (their worker died) become failed with
 * backoff, or dead when out of retries — guarded by fence and by the lease still being expired,
 * so a worker that renewed in between wins. Then due submitted/failed tasks never rung (or rung
 * longer than `republishAfterMs` ago) are published again, at most `limit` of them at `rate`/s,
 * so a merely long backlog is not doubled. Throws AxError('unavailable') when a server is down.
 */
export async function reconcile(o: ReconcileOptions): Promise<ReconcileReport> {
  const started = o.clock.monotonic();
  const report: ReconcileReport = {
    dryRun: o.dryRun,
    expiredLeases: {found: 0, failed: 0, dead: 0, stale: 0, ids: []},
    undispatched: {found: 0, republished: 0, ids: []},
    cron: {repaired: [], skipped: 0},
    truncated: false,
    durationMs: 0,
  };

  report.expiredLeases = await rescueExpired(o);

  if (o.cron && !o.dryRun) report.cron.repaired = await o.cron.repair();

  const found = await o.store.tasksFindUndispatched({limit: o.limit, republishAfterMs: o.republishAfterMs});
  report.undispatched.found = found.length;
  report.undispatched.ids = found.slice(0, SAMPLE).map((d) => d.id);
  if (!o.dryRun) {
    const due = o.cron ? await o.cron.beforeRing(found) : found;
    report.cron.skipped = found.length - due.length;
    for (let i = 0; i < due.length; i += CHUNK) {
      const chunk = due.slice(i, i + CHUNK);
      const t0 = o.clock.monotonic();
      try {
        await o.broker.publish(chunk);
        await o.store.doorbellsMark({rung: chunk.map((d) => ({id: d.id, fence: d.fence}))});
        const ids = chunk.map((d) => d.id);
        report.undispatched.republished += chunk.length;
        o.events?.emit('doorbell:published', {by: 'reconciler', count: ids.length, ids});
      } catch (e) {
        o.logger.warn('reconcile: re-publish failed', {tasks: chunk.length, error: errorMessage(e)});
        throw e;
      }
      const minMs = (chunk.length / o.rate) * 1000;
      const spent = o.clock.monotonic() - t0;
      if (i + CHUNK < due.length && spent < minMs) await sleep(o.clock, minMs - spent);
    }
  }
  report.truncated = report.expiredLeases.found >= o.limit || found.length >= o.limit;
  report.durationMs = Math.round(o.clock.monotonic() - started);
  o.logger.info('reconcile done', {
    dryRun: o.dryRun,
    expired: report.expiredLeases.found,
    rescuedFailed: report.expiredLeases.failed,
    rescuedDead: report.expiredLeases.dead,
    undispatched: report.undispatched.found,
    republished: report.undispatched.republished,
    cronRepaired: report.cron.repaired.length,
    cronSkipped: report.cron.skipped,
  });
  o.events?.emit('reconcile:done', report);
  return report;
}
