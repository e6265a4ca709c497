/**
 * `ax workers` and the worker side of `ax top`: each registered worker as live, stale or stopped
 * (core/liveness.ts), with its rate over its last heartbeat interval. Pure over the rows.
 */
import {invalid} from '../errors.js';
import {parseDuration} from '../duration.js';
import type {TypeCounters, WorkerRegistryStore, WorkerRow} from '../store/types.js';
import {workerStatus, type WorkerStatus} from '../liveness.js';
import {SCALE_OUT_TASKS_PER_S} from '../thresholds.js';
import {validMemory} from '../memory.js';
import {addCounters, attempts, statsDelta} from './rates.js';

/** Stopped and stale workers older than this are left out unless asked for. */
export const DEFAULT_WORKERS_SINCE = '1h';

export type {WorkerStatus};

export interface WorkerView {
  id: string;
  host: string;
  pid: number;
  pools: Record<string, number>;
  status: WorkerStatus;
  inFlight: number;
  startedAt: Date;
  heartbeatAt: Date;
  heartbeatAgeMs: number;
  /** Resident memory at its last heartbeat (null: an older ax that reports none). */
  rssBytes: number | null;
  /** Attempts finished per second over its last heartbeat interval (null: not live, or one heartbeat so far). */
  rate: number | null;
  /** Above SCALE_OUT_TASKS_PER_S: time to add workers. */
  scaleOut: boolean;
  /** Attempts per type in that interval (empty when `rate` is null). */
  types: Record<string, TypeCounters>;
  /** The seconds `types` covers (0 when `rate` is null). */
  windowS: number;
}

/** A worker row as `ax workers` shows it: status, and its per-type activity between its last two heartbeats. */
export function workerView(w: WorkerRow, heartbeatMs?: number): WorkerView {
  const status = workerStatus(w, heartbeatMs);
  const base = {
    id: w.id,
    host: w.host,
    pid: w.pid,
    pools: w.pools,
    status,
    inFlight: status === 'live' ? w.inFlight : 0,
    startedAt: w.startedAt,
    heartbeatAt: w.heartbeatAt,
    heartbeatAgeMs: w.heartbeatAgeMs,
    rssBytes: validMemory(w.stats?.memory)?.rssBytes ?? null,
  };
  const elapsedMs = w.prev === null ? 0 : w.heartbeatAt.getTime() - w.prev.at.getTime();
  if (status !== 'live' || w.stats === null || w.prev === null || elapsedMs <= 0)
    return {...base, rate: null, scaleOut: false, types: {}, windowS: 0};
  const {types} = statsDelta(w.prev.stats, w.stats);
  const windowS = elapsedMs / 1000;
  const rate = Object.values(types).reduce((n, c) => n + attempts(c), 0) / windowS;
  return {...base, rate, scaleOut: rate > SCALE_OUT_TASKS_PER_S, types, windowS};
}

/** Per type over live workers: attempts per second and the summed counters of their last intervals. */
export function typeActivity(views: readonly WorkerView[]): Map<string, {rate: number; window: TypeCounters}> {
  const out = new Map<string, {rate: number; window: TypeCounters}>();
  for (const v of views) {
    if (v.rate === null) continue;
    for (const [type, c] of Object.entries(v.types)) {
      const prev = out.get(type);
      const rate = attempts(c) / v.windowS;
      out.set(type, prev ? {rate: prev.rate + rate, window: addCounters(prev.window, c)} : {rate, window: c});
    }
  }
  return out;
}

export interface WorkersReport {
  workers: WorkerView[];
  counts: Record<WorkerStatus, number>;
  /** Attempts per second over all live workers (null when none has reported a rate yet). */
  rate: number | null;
}

/** Counts and the total rate of classified workers. */
export function summarizeWorkers(workers: WorkerView[]): WorkersReport {
  const counts: Record<WorkerStatus, number> = {live: 0, stale: 0, stopped: 0};
  for (const w of workers) counts[w.status]++;
  const rated = workers.filter((w) => w.rate !== null);
  return {workers, counts, rate: rated.length === 0 ? null : rated.reduce((n, w) => n + (w.rate ?? 0), 0)};
}

/** Validates `--since` of ax workers: how far back stopped and stale workers are shown. Throws invalid_input. */
export function parseWorkersSince(since: string | undefined): number {
  const s = since ?? DEFAULT_WORKERS_SINCE;
  if (!/^\d/.test(s.trim())) throw invalid(`since "${s}" is not a duration (e.g. 15m, 1h, 7d)`);
  return parseDuration(s, 'since');
}

/**
 * The registry, classified: live workers always, stopped and stale ones whose last heartbeat is
 * within `sinceMs` (all with `sinceMs` undefined); live first, then stale, then stopped.
 * `heartbeatMs`: the configured AX_HEARTBEAT, for rows that report no interval (workerStatus).
 */
export async function listWorkers(
  store: Pick<WorkerRegistryStore, 'workersList'>,
  sinceMs?: number,
  heartbeatMs?: number,
): Promise<WorkersReport> {
  const rows = await store.workersList(sinceMs === undefined ? {} : {seenWithinMs: sinceMs});
  const order: Record<WorkerStatus, number> = {live: 0, stale: 1, stopped: 2};
  const views = rows.map((w) => workerView(w, heartbeatMs)).sort((a, b) => order[a.status] - order[b.status] || a.id.localeCompare(b.id));
  return summarizeWorkers(views);
}
