import {AxCommand} from '../cli/base.js';
import {hostname} from 'node:os';
import {connectCells, oneCellPerEndpoint} from '../cli/cells.js';
import type {Runtime} from '../cli/runtime.js';
import {misplacedTypes} from '../core/cells/cells.js';
import type {AxStore} from '../core/store/types.js';
import {signalController} from '../cli/signals.js';
import {errorMessage, isAxError} from '../core/errors.js';
import {disposable} from '../cli/dispose.js';
import {CellMetrics} from '../core/metrics/cell.js';
import {flowGauges} from '../core/metrics/flow.js';
import {schedulerMetrics} from '../core/metrics/scheduler.js';
import {createCronPolicy} from '../core/cron/policy.js';
import {createSchedulerService} from '../core/scheduler/service.js';
import type {Scheduler} from '../core/scheduler/scheduler.js';
import {failFastFlag, healthFlags, startEndpoint, summaryEvery, summaryEveryFlag} from '../cli/summary.js';
import {isoTimes} from '../core/log.js';
import {archiveLoop} from '../core/archive/service.js';
import {createArchiver} from '../cli/runtime.js';

export default class SchedulerCommand extends AxCommand {
  static override daemon = true;
  static override summary = 'Fire delayed tasks, retries and cron occurrences on time; rescue and reconcile.';
  static override description = `Holds the tasks due within the next AX_SCHEDULER_HORIZON (10s) — claimed in MySQL so several
schedulers never ring one twice — in a hashed timing wheel keyed by the database clock, and
publishes each when the database clock has reached its run_at (never before). Creates the
occurrences of cron schedules, rescues running tasks whose worker stopped renewing its lease
(every AX_RESCUE_EVERY, 5s), runs the reconciler (every AX_RECONCILE_EVERY, 5m) and archives
finished tasks older than AX_RETENTION (every AX_ARCHIVE_EVERY, 1h; 0: off; see ax archive run).

With --cell a,b (default: AX_CELL) it runs one scheduler per cell, each on that cell's database and
RabbitMQ, with its archiver (no --health-port then: metrics are per cell). At start it warns of tasks
waiting in a cell whose type AX_CELLS now routes to another cell (README "Cells").

Run one or more; on SIGTERM/SIGINT a scheduler lets go of its tasks so another takes them at once.
After a crash its tasks are taken over AX_SCHEDULER_HOLD (3s) after they are due. A summary line is
logged every minute. A server down at start is waited for (each attempt logged, jittered backoff up
to AX_CONNECT_RETRY_MAX); --fail-fast (AX_CONNECT_FAIL_FAST) exits 5 at once instead.

With --health-port (or AX_METRICS_PORT) it serves GET /healthz, /readyz and /metrics on 127.0.0.1
(--health-host or AX_METRICS_HOST): its own series plus the cell's gauges — backlog per type (due,
delayed), oldest due age, running, dead, live workers per pool — refreshed from MySQL every
AX_METRICS_CELL_EVERY (5s); one scheduler per cell is enough to serve them. A port in use exits 4.`;
  static override examples = [
    '<%= config.bin %> scheduler',
    'AX_SCHEDULER_HORIZON=30s AX_LOG_LEVEL=info <%= config.bin %> scheduler',
    '<%= config.bin %> scheduler --health-port 8082',
    'AX_METRICS_PORT=9465 AX_METRICS_HOST=0.0.0.0 <%= config.bin %> scheduler',
  ];
  static override flags = {
    'summary-every': summaryEveryFlag,
    ...healthFlags('GET /healthz (the summary) and /readyz (200 while loads from MySQL succeed)'),
    'fail-fast': failFastFlag,
  };

  async run(): Promise<unknown> {
    const {flags} = await this.parse(SchedulerCommand);
    const rts = this.runtimes(flags, flags['fail-fast'] ? {connectFailFast: true} : {});
    const rt = oneCellPerEndpoint(rts, flags);
    const many = rts.length > 1;
    const summary = summaryEvery(flags['summary-every'], rt.logger, 'scheduler summary');
    // Listening first: a SIGTERM while waiting for a server, or during the first load (seconds with
    // a long horizon), must stop cleanly and release the holds, not kill the process.
    const {signal, signalled} = signalController();
    let schedulers: Scheduler[] = [];
    let lastRetry: unknown;
    // The health port next: if it is taken, nothing has started; /readyz is 503 (and /healthz says
    // why) while the scheduler waits for its servers, so a liveness probe does not restart it.
    const endpoint = await startEndpoint(rt, flags, {
      ready: () => schedulers[0]?.ready() ?? false,
      details: () =>
        schedulers[0] ? isoTimes({...schedulers[0].summary(), lastReconcile: undefined}) : {state: 'connecting', connect: lastRetry},
    });
    await using health = endpoint ? disposable(endpoint) : undefined;
    const retry = {signal, onRetry: (r: unknown) => (lastRetry = r)};
    try {
      // A server down at start is waited for (logged, jittered backoff) unless --fail-fast.
      await using conns = await connectCells(rts, retry);
      // One scheduler per cell served, each on its cell's store and broker, with its archiver.
      const cells = conns.cells.map(({rt: crt, store, broker}) => {
        const cron = createCronPolicy({...crt, store});
        const started = createSchedulerService({
          ...crt,
          store,
          broker,
          hooks: cron.hooks(),
          ...(many ? {id: `scheduler:${hostname()}:${process.pid}/${crt.config.cell}`} : {}),
        });
        // The archiver rides along every scheduler; the cell's archive lock lets one work at a time.
        const archiving = archiveLoop({...crt, archiver: createArchiver(crt, store), everyMs: crt.config.archiveEveryMs});
        return {rt: crt, store, started, archiving};
      });
      schedulers = cells.map((c) => c.started);
      // The scheduler alone serves the cell's gauges (backlog, workers): one reader per cell.
      let cellMetrics: CellMetrics | undefined;
      const only = cells[0];
      if (endpoint && only) {
        schedulerMetrics(endpoint.metrics, only.started.events);
        cellMetrics = new CellMetrics({
          metrics: endpoint.metrics,
          store: only.store,
          clock: rt.clock,
          logger: rt.logger,
          everyMs: rt.config.metricsCellEveryMs,
          heartbeatMs: rt.config.heartbeatMs,
          // Paused types, breaker states and parked counts, read in the same pass.
          extra: [flowGauges(endpoint.metrics, only.store)],
        });
      }
      try {
        for (const c of cells) await c.started.start();
        cellMetrics?.start();
        for (const c of cells) c.archiving.start();
        // Tasks waiting in a cell that AX_CELLS now routes elsewhere (a type moved): said once at start.
        for (const c of cells) await warnMisplaced(c.rt, c.store);
        const where = endpoint ? `; health on ${endpoint.url} (/healthz, /readyz, /metrics)` : '';
        const served = many ? ` for cells ${rts.map((r) => r.config.cell).join(', ')}` : '';
        if (!this.jsonEnabled())
          this.logToStderr(`ax scheduler ${schedulers.map((x) => x.id).join(', ')} running${served}${where}; Ctrl-C to stop`);
        const stopSummary = summary.start(() => (many ? {cells: cells.map(cellSummary)} : cellSummary(cells[0] as (typeof cells)[0])));
        const got = await signalled;
        stopSummary();
        const final = (c: (typeof cells)[0]) => ({...(many ? {cell: c.rt.config.cell} : {}), ...c.started.summary()});
        return isoTimes({signal: got, ...(many ? {cells: cells.map(final)} : final(cells[0] as (typeof cells)[0]))});
      } finally {
        await cellMetrics?.stop();
        await health?.close();
        for (const c of cells) await c.archiving.stop();
        for (const c of cells) await c.started.stop();
      }
    } catch (e) {
      // Stopped by a signal while still waiting for a server: nothing ran, nothing is held.
      if (!(isAxError(e, 'closed') && signal.aborted)) throw e;
      return {stoppedBeforeStart: true, signal: await signalled};
    }
  }
}

/** One cell's scheduler summary for the summary line. */
function cellSummary(c: {rt: {config: {cell: string}}; started: Scheduler}): Record<string, unknown> {
  return {cell: c.rt.config.cell, ...c.started.summary(), lastReconcile: undefined};
}

/**
 * Logs a warning for each type with waiting or running tasks in this cell that AX_CELLS routes to
 * another cell now: they still run here (this cell's workers need the handler), new ones go there.
 * A failed read is logged and ignored: it only informs.
 */
async function warnMisplaced(rt: Runtime, store: AxStore): Promise<void> {
  try {
    const {rows} = await store.backlog();
    const pending = rows.filter((r) => r.due + r.delayed + r.running > 0);
    for (const m of misplacedTypes(
      rt.cells,
      rt.config.cell,
      pending.map((r) => r.type),
    )) {
      const r = pending.find((x) => x.type === m.type);
      rt.logger.warn(
        `type ${m.type} is routed to cell ${m.cell} now, but ${(r?.due ?? 0) + (r?.delayed ?? 0) + (r?.running ?? 0)} of its tasks wait or run in cell ${rt.config.cell}: they still run here (keep a worker with its handler on this cell until they drain: ax tasks stats --cell ${rt.config.cell}); new ones go to ${m.cell}`,
        {type: m.type, cell: rt.config.cell, routedTo: m.cell},
      );
    }
  } catch (e) {
    rt.logger.warn('could not check for tasks of types routed to another cell', {error: errorMessage(e)});
  }
}
