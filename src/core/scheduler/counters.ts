/** The scheduler's counters, as a subscriber of its event stream. */
import type {AxEvents} from '../events.js';
import type {ReconcileReport} from '../reconcile/reconcile.js';

export interface SchedulerCounters {
  published: number;
  publishFailures: number;
  loads: number;
  rescued: number;
  lastReconcile: ReconcileReport | null;
  /** When the last load from MySQL succeeded (epoch ms), or null before the first. */
  lastLoadAt: number | null;
}

/** Counts the scheduler events on `events` into a live object (read it at any time). */
export function countSchedulerEvents(events: AxEvents): SchedulerCounters {
  const c: SchedulerCounters = {published: 0, publishFailures: 0, loads: 0, rescued: 0, lastReconcile: null, lastLoadAt: null};
  events.on('doorbell:published', (e) => {
    if (e.by === 'scheduler') c.published += e.count;
  });
  events.on('scheduler:publish-failed', (e) => (c.publishFailures += e.count));
  events.on('scheduler:loaded', (e) => {
    c.loads++;
    c.lastLoadAt = e.at;
  });
  events.on('lease:expired', () => c.rescued++);
  events.on('reconcile:done', (r) => (c.lastReconcile = r));
  return c;
}
