import {AxCommand} from '../cli/base.js';
import {openBroker, openStore} from '../cli/runtime.js';
import {signalController} from '../cli/signals.js';
import {isAxError} from '../core/errors.js';
import {disposable} from '../cli/dispose.js';
import {CellMetrics} from '../core/metrics/cell.js';
import {flowGauges} from '../core/metrics/flow.js';
import {schedulerMetrics} from '../core/metrics/scheduler.js';
import {createCronPolicy} from '../core/cron/policy.js';
import {createSchedulerService} from '../core/scheduler/service.js';
import type {Scheduler} from '../core/scheduler/scheduler.js';
import {failFastFlag, healthFlags, startEndpoint, summaryEvery, summaryEveryFlag} from '../cli/summary.js';
import {connectWithRetry} from '../core/connect-retry.js';
import {isoTimes} from '../core/log.js';
import {archiveLoop} from '../core/archive/service.js';
import {createArchiver} from '../cli/runtime.js';

export default class SchedulerCommand extends AxCommand {
  static override summary = 'Fire delayed tasks, retries and cron occurrences on time; rescue and reconcile.';
  static override description = `Holds the tasks due within the next AX_SCHEDULER_HORIZON (10s) — claimed in MySQL so several
schedulers never ring one twice — in a hashed timing wheel keyed by the database clock, and
publishes each when the database clock has reached its run_at (never before). Creates the
occurrences of cron schedules, rescues running tasks whose worker stopped renewing its lease
(every AX_RESCUE_EVERY, 5s), runs the reconciler (every AX_RECONCILE_EVERY, 5m) and archives
finished tasks older than AX_RETENTION (every AX_ARCHIVE_EVERY, 1h; 0: off; see ax archive run).

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
    const rt = this.runtime(flags.config, flags['fail-fast'] ? {connectFailFast: true} : {});
    const summary = summaryEvery(flags['summary-every'], rt.logger, 'scheduler summary');
    // Listening first: a SIGTERM while waiting for a server, or during the first load (seconds with
    // a long horizon), must stop cleanly and release the holds, not kill the process.
    const {signal, signalled} = signalController();
    let scheduler: Scheduler | undefined;
    let lastRetry: unknown;
    // The health port next: if it is taken, nothing has started; /readyz is 503 (and /healthz says
    // why) while the scheduler waits for its servers, so a liveness probe does not restart it.
    const endpoint = await startEndpoint(rt, flags, {
      ready: () => scheduler?.ready() ?? false,
      details: () => (scheduler ? isoTimes({...scheduler.summary(), lastReconcile: undefined}) : {state: 'connecting', connect: lastRetry}),
    });
    await using health = endpoint ? disposable(endpoint) : undefined;
    const retry = {signal, onRetry: (r: unknown) => (lastRetry = r)};
    try {
      // A server down at start is waited for (logged, jittered backoff) unless --fail-fast.
      await using store = disposable(await connectWithRetry(rt, 'MySQL', () => openStore(rt), retry));
      await using broker = disposable(await connectWithRetry(rt, 'RabbitMQ', () => openBroker(rt, {reconnect: true}), retry));
      const cron = createCronPolicy({...rt, store});
      await using started = createSchedulerService({...rt, store, broker, hooks: cron.hooks()});
      scheduler = started;
      // The scheduler alone serves the cell's gauges (backlog, workers): one reader per cell.
      let cell: CellMetrics | undefined;
      if (endpoint) {
        schedulerMetrics(endpoint.metrics, started.events);
        cell = new CellMetrics({
          metrics: endpoint.metrics,
          store,
          clock: rt.clock,
          logger: rt.logger,
          everyMs: rt.config.metricsCellEveryMs,
          heartbeatMs: rt.config.heartbeatMs,
          // Paused types, breaker states and parked counts, read in the same pass.
          extra: [flowGauges(endpoint.metrics, store)],
        });
      }
      await started.start();
      cell?.start();
      // The archiver rides along every scheduler; the cell's archive lock lets one work at a time.
      const archiving = archiveLoop({...rt, archiver: createArchiver(rt, store), everyMs: rt.config.archiveEveryMs});
      archiving.start();
      const where = endpoint ? `; health on ${endpoint.url} (/healthz, /readyz, /metrics)` : '';
      if (!this.jsonEnabled()) this.logToStderr(`ax scheduler ${started.id} running${where}; Ctrl-C to stop`);
      const stopSummary = summary.start(() => ({...started.summary(), lastReconcile: undefined}));
      const got = await signalled;
      stopSummary();
      await cell?.stop();
      await health?.close();
      await archiving.stop();
      await started.stop();
      return isoTimes({signal: got, ...started.summary()});
    } catch (e) {
      // Stopped by a signal while still waiting for a server: nothing ran, nothing is held.
      if (!(isAxError(e, 'closed') && signal.aborted)) throw e;
      return {stoppedBeforeStart: true, signal: await signalled};
    }
  }
}
