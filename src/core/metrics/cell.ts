/**
 * The cell's gauges, served by ONE process per cell — the scheduler — not by every worker: the
 * backlog per type (due and delayed), the oldest due task's age, running and dead tasks per type,
 * and the live and stale workers per pool.
 *
 * Read by a periodic refresh (every AX_METRICS_CELL_EVERY, 5 s), not on scrape: the cost is two
 * index-range reads of the small states plus the workers table per period, whatever the number of
 * scrapers (an HA pair of Prometheus servers doubles nothing), passes never overlap, and a scrape
 * never waits on the database. When a refresh fails (database down, query timeout), the gauges
 * keep their last values and `ax_cell_metrics_up` drops to 0; `ax_cell_metrics_age_seconds` says
 * how old the values are. Types seen once are reported as 0 when their rows are gone, so a
 * drained backlog reads 0, not "absent".
 *
 * Flow control's gauges (`ax_type_paused`, `ax_breaker_state`, `ax_parked_tasks`: metrics/flow.ts)
 * are read in the same refresh, passed as an entry of `CellMetricsOptions.extra`.
 */
import {errorMessage} from '../errors.js';
import {workerStatus} from '../liveness.js';
import type {Logger} from '../log.js';
import {Periodic} from '../lifecycle.js';
import type {InspectStore, WorkerRegistryStore} from '../store/types.js';
import type {Clock} from '../time.js';
import type {MetricsRegistry} from './registry.js';

export interface CellMetricsOptions {
  metrics: MetricsRegistry;
  store: Pick<InspectStore, 'backlog'> & Pick<WorkerRegistryStore, 'workersList'>;
  clock: Clock;
  logger: Logger;
  /** Refresh period (AX_METRICS_CELL_EVERY). */
  everyMs: number;
  /** AX_HEARTBEAT, for workers that report no interval of their own (core/liveness.ts). */
  heartbeatMs?: number;
  /** More readers refreshed in the same pass (flow control's gauges: metrics/flow.ts). */
  extra?: Array<() => Promise<void>>;
}

/** The cell gauges and their refresh loop: `start()` refreshes at once and then every period. */
export class CellMetrics {
  private readonly loop: Periodic;
  private lastOk: number | null = null;
  private failing = false;
  private readonly types = new Set<string>();
  private readonly pools = new Set<string>();

  constructor(private readonly o: CellMetricsOptions) {
    const m = o.metrics;
    const backlog = m.gauge(
      'ax_backlog_tasks',
      'Tasks waiting, by type and state: due (run_at reached) or delayed (run_at ahead, retries in backoff).',
      ['type', 'state'],
    );
    const oldest = m.gauge(
      'ax_oldest_due_age_seconds',
      'Age of the oldest due task (how late the type runs; 0 when none is due), by type.',
      ['type'],
    );
    const running = m.gauge('ax_running_tasks', 'Tasks running (claimed by a worker), by type.', ['type']);
    const dead = m.gauge('ax_dead_tasks', 'Dead tasks (the dead-letter state), by type.', ['type']);
    const workers = m.gauge(
      'ax_workers',
      'Workers of the cell by pool and status: live, or stale (no heartbeat for 3 of its intervals, AX_HEARTBEAT; not stopped).',
      ['pool', 'status'],
    );
    const up = m.gauge(
      'ax_cell_metrics_up',
      '1 when the last refresh of the cell gauges succeeded, 0 when it failed (values are the last good ones).',
    );
    const duration = m.gauge('ax_cell_metrics_refresh_seconds', 'Duration of the last successful refresh of the cell gauges.');
    m.gauge('ax_cell_metrics_age_seconds', 'Time since the cell gauges were last refreshed successfully (-1: never).', [], (g) =>
      g.set(this.lastOk === null ? -1 : (o.clock.monotonic() - this.lastOk) / 1000),
    );
    up.set(0);
    this.loop = new Periodic({
      name: 'cell metrics',
      clock: o.clock,
      everyMs: o.everyMs,
      run: async () => {
        const t0 = o.clock.monotonic();
        const [report, list] = await Promise.all([o.store.backlog(), o.store.workersList(), ...(o.extra ?? []).map((f) => f())]);
        const at = report.at.getTime();
        for (const t of this.types) {
          for (const state of ['due', 'delayed']) backlog.set({type: t, state}, 0);
          oldest.set({type: t}, 0);
          running.set({type: t}, 0);
          dead.set({type: t}, 0);
        }
        for (const r of report.rows) {
          this.types.add(r.type);
          backlog.set({type: r.type, state: 'due'}, r.due);
          backlog.set({type: r.type, state: 'delayed'}, r.delayed);
          oldest.set({type: r.type}, r.oldestDueAt ? Math.max(0, at - r.oldestDueAt.getTime()) / 1000 : 0);
          running.set({type: r.type}, r.running);
          dead.set({type: r.type}, r.dead);
        }
        const counts = new Map<string, {live: number; stale: number}>();
        for (const p of this.pools) counts.set(p, {live: 0, stale: 0});
        for (const w of list) {
          const status = workerStatus(w, o.heartbeatMs);
          if (status === 'stopped') continue;
          const live = status === 'live';
          for (const pool of Object.keys(w.pools)) {
            this.pools.add(pool);
            const c = counts.get(pool) ?? {live: 0, stale: 0};
            c[live ? 'live' : 'stale']++;
            counts.set(pool, c);
          }
        }
        for (const [pool, c] of counts) {
          workers.set({pool, status: 'live'}, c.live);
          workers.set({pool, status: 'stale'}, c.stale);
        }
        this.lastOk = o.clock.monotonic();
        duration.set((this.lastOk - t0) / 1000);
        up.set(1);
        if (this.failing) o.logger.info('the cell metrics are refreshed again');
        this.failing = false;
      },
      onError: (e) => {
        up.set(0);
        // Once per outage, not every period.
        if (!this.failing) o.logger.warn('refreshing the cell metrics failed; serving the last values', {error: errorMessage(e)});
        this.failing = true;
      },
    });
  }

  /** Refreshes now, then every period. Idempotent. */
  start(): void {
    this.loop.start(0);
  }

  /** One refresh now (tests). Never rejects. */
  runOnce(): Promise<void> {
    return this.loop.runOnce();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }
}
