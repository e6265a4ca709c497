/**
 * One cell's `ax scheduler`: the parts `--only` chose (components.ts), each a Service, sharing one
 * event stream — the dispatcher (Scheduler with `maintenance: false`), the rescuer, the reconciler,
 * the dead-letter scan, the archiver and the cell metrics — for the daemon host to start in order
 * and stop in reverse.
 */
import {hostname} from 'node:os';
import type {Archiver} from '../archive/archiver.js';
import type {Broker} from '../broker/types.js';
import type {AxConfig} from '../config/config.js';
import {createCronPolicy} from '../cron/policy.js';
import {errorMessage} from '../errors.js';
import {AxEvents} from '../events.js';
import type {Service} from '../lifecycle.js';
import {isoTimes, type Logger} from '../log.js';
import type {MetricsRegistry} from '../metrics/registry.js';
import {schedulerMetrics} from '../metrics/scheduler.js';
import type {AxStore} from '../store/types.js';
import type {Clock, Random} from '../time.js';
import type {SchedulerPart} from './components.js';
import {countSchedulerEvents} from './counters.js';
import {ArchiverService} from './maintenance/archiver.js';
import {CellMetricsService} from './maintenance/cell-metrics.js';
import {DeadLetterScanner} from './maintenance/dlq-scan.js';
import {Reconciler} from './maintenance/reconciler.js';
import {Rescuer} from './maintenance/rescuer.js';
import type {Scheduler} from './scheduler.js';
import {createSchedulerService} from './service.js';

export interface SchedulerCellOptions {
  config: AxConfig;
  store: AxStore;
  broker: Broker;
  clock: Clock;
  random: Random;
  logger: Logger;
  /** The parts to run (parseSchedulerParts). */
  parts: SchedulerPart[];
  /** Names this scheduler (default scheduler:host:pid). */
  id?: string;
  /** Builds the cell's archiver (called only when the archiver part runs). */
  archiver: () => Archiver;
  /** The health endpoint's registry: the scheduler's series, and the cell gauges when that part runs. */
  metrics?: MetricsRegistry;
}

/** One cell's parts, ready to host. */
export interface SchedulerCell {
  id: string;
  cell: string;
  events: AxEvents;
  /** The dispatcher, when that part runs. */
  dispatcher: Scheduler | undefined;
  /** In start order. */
  services: Service[];
  /** The scheduler summary (the dispatcher's, or the counters of the parts that run). */
  summary(): Record<string, unknown>;
}

/**
 * Builds one cell's parts. Order: the dead-letter scan first (its watermark is taken before the
 * first load, as the all-in-one Scheduler does), then dispatcher, rescuer, reconciler, cell
 * metrics, archiver. The cell metrics run only with `metrics` (no endpoint, nobody reads them).
 */
export function schedulerCell(o: SchedulerCellOptions): SchedulerCell {
  const id = o.id ?? `scheduler:${hostname()}:${process.pid}`;
  const log = o.logger.child({scheduler: id});
  const events = new AxEvents({onListenerError: (e, name) => log.error('event listener failed', {event: name, error: errorMessage(e)})});
  const counters = countSchedulerEvents(events);
  const has = (p: SchedulerPart): boolean => o.parts.includes(p);
  const c = o.config;
  const cron = createCronPolicy({...o, actor: id});
  const base = {store: o.store, clock: o.clock, logger: log, events};
  const backoff = {baseMs: c.retryBaseMs, maxMs: c.retryMaxMs};
  const services: Service[] = [];
  if (has('dlq-scan')) services.push(new DeadLetterScanner({...base, everyMs: c.dlqScanEveryMs}));
  const dispatcher = has('dispatcher') ? createSchedulerService({...o, hooks: cron.hooks(), events, maintenance: false, id}) : undefined;
  if (dispatcher) services.push(dispatcher);
  if (has('rescuer'))
    services.push(new Rescuer({...base, random: o.random, backoff, actor: id, limit: c.reconcileLimit, everyMs: c.rescueEveryMs}));
  if (has('reconciler'))
    services.push(
      new Reconciler({
        ...base,
        broker: o.broker,
        random: o.random,
        backoff,
        limit: c.reconcileLimit,
        rate: c.reconcileRate,
        republishAfterMs: c.republishAfterMs,
        actor: id,
        everyMs: c.reconcileEveryMs,
        cron: cron.reconcileHooks(),
      }),
    );
  if (o.metrics) schedulerMetrics(o.metrics, events);
  if (has('cell-metrics') && o.metrics)
    services.push(
      new CellMetricsService({
        metrics: o.metrics,
        store: o.store,
        clock: o.clock,
        logger: o.logger,
        everyMs: c.metricsCellEveryMs,
        heartbeatMs: c.heartbeatMs,
      }),
    );
  // Every scheduler may run it: the cell's archive lock lets one work at a time.
  if (has('archiver')) services.push(new ArchiverService({...o, archiver: o.archiver(), everyMs: c.archiveEveryMs}));
  return {
    id,
    cell: c.cell,
    events,
    dispatcher,
    services,
    summary: () => (dispatcher ? {...dispatcher.summary()} : {id, ...counters, lastLoadAt: undefined, loads: undefined}),
  };
}

/** A cell's summary for the summary line and /healthz: times in ISO 8601, the last reconcile report left out. */
export function cellSummaryLine(c: SchedulerCell): Record<string, unknown> {
  return isoTimes({...c.summary(), lastReconcile: undefined});
}
