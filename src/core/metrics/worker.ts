/**
 * The worker's metrics, from its events (task:claimed, task:succeeded/failed/dead/released,
 * doorbell:*, lease:lost, outcome:stale) and, at each scrape, its pools' occupancy. The per-task
 * listeners find their type's cells in a Map and add (cell metrics, see registry.ts): no I/O, no
 * allocation, no label hashing per event.
 */
import type {AxEvents} from '../events.js';
import type {HistogramCell, MetricsRegistry} from './registry.js';
import {seconds, subscribe} from './subscribe.js';
import {commonMetrics} from './common.js';

/** The occupancy of one pool of the worker, read at scrape time. */
export interface PoolGauge {
  pool: string;
  /** Most concurrently running attempts. */
  size: number;
  /** Most attempts waiting in the local queue. */
  capacity: number;
  running: number;
  queued: number;
}

export interface WorkerMetricsSource {
  pools(): PoolGauge[];
  /** Tasks claimed and not yet written back (Worker.inFlight). */
  held(): number;
}

/** Registers the worker series on `m` and subscribes them to `events`; returns the unsubscribe. */
export function workerMetrics(m: MetricsRegistry, events: AxEvents, source: WorkerMetricsSource): () => void {
  const claimed = m.cellCounter('ax_tasks_claimed_total', 'Tasks this worker claimed (attempts started), by type and pool.', [
    'type',
    'pool',
  ]);
  const attempts = m.cellCounter(
    'ax_attempts_total',
    'Attempts finished (outcome durable), by type and outcome: succeeded, failed (will retry), dead.',
    ['type', 'outcome'],
  );
  const duration = m.cellHistogram(
    'ax_attempt_duration_seconds',
    'Attempt duration from the hand-over to the pool (local queueing included) to its end, by type.',
    ['type'],
  );
  const delay = m.cellHistogram(
    'ax_task_start_delay_seconds',
    'How late a task was claimed after it was due (run_at, database clock), by type.',
    ['type'],
  );
  const released = m.counter(
    'ax_claims_released_total',
    'Claims handed back without using an attempt (pool queue full, another pool, shutdown), by type.',
    ['type'],
  );
  const duplicate = m.counter(
    'ax_doorbells_duplicate_total',
    'Extra doorbells for a task claimed in the same batch (acked with the claim).',
  );
  const stale = m.counter('ax_doorbells_stale_total', 'Doorbells for a task already running, finished or not yet due (acked and dropped).');
  const poisoned = m.counter('ax_doorbells_poisoned_total', 'Messages ax cannot use, moved to the poison queue.');
  const leaseLost = m.counter('ax_leases_lost_total', 'Attempts aborted because another process took the task over (lease expired).');
  const outcomeStale = m.counter('ax_outcomes_stale_total', 'Outcomes not written because the row had moved on (another claim).');
  m.gauge('ax_pool_running', 'Attempts running in the pool now.', ['pool'], (g) => {
    for (const p of source.pools()) g.set({pool: p.pool}, p.running);
  });
  m.gauge('ax_pool_queued', 'Attempts waiting in the pool’s local queue now.', ['pool'], (g) => {
    for (const p of source.pools()) g.set({pool: p.pool}, p.queued);
  });
  m.gauge('ax_pool_size', 'Most attempts the pool runs at once.', ['pool'], (g) => {
    for (const p of source.pools()) g.set({pool: p.pool}, p.size);
  });
  m.gauge('ax_pool_queue_capacity', 'Most attempts the pool’s local queue holds.', ['pool'], (g) => {
    for (const p of source.pools()) g.set({pool: p.pool}, p.capacity);
  });
  m.gauge('ax_worker_held_tasks', 'Tasks claimed by this worker and not yet written back.', [], (g) => g.set(source.held()));

  // The cells of each type, made on its first event: a hot-path event is a Map lookup and adds.
  const byType = new Map<string, TypeCells>();
  const cells = (type: string): TypeCells => {
    let c = byType.get(type);
    if (!c) {
      c = {
        claimed: {},
        succeeded: attempts.cell({type, outcome: 'succeeded'}),
        failed: attempts.cell({type, outcome: 'failed'}),
        dead: attempts.cell({type, outcome: 'dead'}),
        duration: duration.cell({type}),
        delay: delay.cell({type}),
      };
      byType.set(type, c);
    }
    return c;
  };
  const offCommon = commonMetrics(m, events);
  const off = subscribe(events, {
    'task:claimed': (e) => {
      const c = cells(e.type);
      (c.claimed[e.pool] ??= claimed.cell({type: e.type, pool: e.pool})).value++;
      c.delay.observe(seconds(e.lateMs));
    },
    'task:succeeded': (e) => {
      const c = cells(e.type);
      c.succeeded.value++;
      c.duration.observe(seconds(e.durationMs));
    },
    'task:failed': (e) => {
      const c = cells(e.type);
      c.failed.value++;
      c.duration.observe(seconds(e.durationMs));
    },
    'task:dead': (e) => {
      const c = cells(e.type);
      c.dead.value++;
      c.duration.observe(seconds(e.durationMs));
    },
    'task:released': (e) => released.inc({type: e.type}),
    'doorbell:duplicate': (e) => duplicate.inc(e.extra),
    'doorbell:stale': () => stale.inc(),
    'doorbell:poisoned': () => poisoned.inc(),
    'lease:lost': () => leaseLost.inc(),
    'outcome:stale': (e) => outcomeStale.inc(e.count),
  });
  return () => {
    off();
    offCommon();
  };
}

/** The series cells of one task type. */
interface TypeCells {
  claimed: Partial<Record<string, {value: number}>>;
  succeeded: {value: number};
  failed: {value: number};
  dead: {value: number};
  duration: HistogramCell;
  delay: HistogramCell;
}
