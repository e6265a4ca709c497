/**
 * Worker liveness — the one definition behind `ax workers`, `ax top`, `ax doctor` and the
 * `ax_workers` gauge. A worker is stopped when it said so (clean shutdown), stale when its last
 * heartbeat is more than STALE_AFTER_BEATS of its heartbeat intervals old (crashed, frozen or cut
 * off from MySQL; its running tasks come back when their leases expire), live otherwise.
 *
 * The interval is the one the worker reports with each heartbeat (its AX_HEARTBEAT); a worker that
 * reports none (an older ax) is judged by the reader's configured interval. The age is the
 * database clock's (`WorkerRow.heartbeatAgeMs`), so a skewed reader's clock changes nothing.
 * Pure: no clock of its own.
 */
import type {WorkerRow} from './store/types.js';
import {STALE_AFTER_BEATS} from './thresholds.js';

export type WorkerStatus = 'live' | 'stale' | 'stopped';

/** The AX_HEARTBEAT default, for readers not given their configured interval. */
export const DEFAULT_HEARTBEAT_MS = 5000;

/** How old a heartbeat may be, for a worker beating every `heartbeatMs`, before it is stale. */
export const staleAfterMs = (heartbeatMs: number): number => STALE_AFTER_BEATS * heartbeatMs;

/**
 * Live, stale or stopped (see the module comment). `heartbeatMs` is the reader's configured
 * interval, used only when the row carries none of its own.
 */
export function workerStatus(
  w: Pick<WorkerRow, 'stoppedAt' | 'heartbeatAgeMs' | 'stats'>,
  heartbeatMs: number = DEFAULT_HEARTBEAT_MS,
): WorkerStatus {
  if (w.stoppedAt !== null) return 'stopped';
  return w.heartbeatAgeMs > staleAfterMs(w.stats?.heartbeatMs ?? heartbeatMs) ? 'stale' : 'live';
}
