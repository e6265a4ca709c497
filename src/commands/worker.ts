import {Flags} from '@oclif/core';
import {AxCommand} from '../cli/base.js';
import {CRASH_EXIT_CODE, exitSoon} from '../cli/signals.js';
import {failFastFlag, healthFlags, startEndpoint, summaryEveryFlag, summaryEveryMs} from '../cli/summary.js';
import {AxEvents} from '../core/events.js';
import {errorMessage} from '../core/errors.js';
import {runHost} from '../core/host/host.js';
import {sumWorkerStats, WorkerHostService} from '../core/host/worker.js';
import {workerMetrics} from '../core/metrics/worker.js';
import type {PoolName} from '../core/task/model.js';
import {connectCells, oneCellPerEndpoint} from '../cli/cells.js';
import {hostname} from 'node:os';

export default class WorkerCommand extends AxCommand {
  static override daemon = true;
  static override summary = 'Run tasks: consume the pool queues and execute handlers until SIGTERM/SIGINT.';
  static override description = `Loads a handlers module (its default export, or its "handlers" export, must be
defineHandlers({...}, {onStart, onStop})), consumes the queue of each pool it runs, claims tasks in
batches, runs them and records the outcomes. IO handlers run on the event loop (concurrency
cores × 2 × (1 + wait/compute) unless --io-concurrency is given); CPU handlers run in worker threads
(cores + 1 unless --cpu-threads is given), terminated on timeout.

When MySQL or RabbitMQ cannot be reached at start, the worker retries with a jittered backoff (up to
AX_CONNECT_RETRY_MAX, 30s, between attempts; each attempt logged) and /readyz answers 503 meanwhile;
--fail-fast (AX_CONNECT_FAIL_FAST) exits 5 at once instead.

On SIGTERM or SIGINT the worker stops consuming, lets in-flight tasks finish for the grace period
(AX_SHUTDOWN_GRACE, default 30s), hands back what never started (no attempt used), awaits the
module's onStop and exits 0, even if the module left a handle open. An unhandled promise rejection
in handler code is logged and counted, and the worker keeps running; an uncaught exception is
logged, in-flight work is drained the same way, and the worker exits ${CRASH_EXIT_CODE} (a supervisor restarts it).
Exit codes: 0 stopped by a signal, 1 onStop failed, 2 bad flags or handlers module, 4 the health port in use, 5 a server
unreachable with --fail-fast (or refused the credentials), ${CRASH_EXIT_CODE} stopped after an uncaught exception.

With --health-port (or AX_METRICS_PORT) the worker serves GET /healthz, /readyz and /metrics
(Prometheus: attempts per type and outcome, durations, start delays, pool occupancy; docs/observability.md
"Metrics and alerts") on 127.0.0.1 (--health-host or AX_METRICS_HOST to change). A port in use
exits 4 before anything connects.

With --cell a,b (default: AX_CELL) it serves several cells: one worker per cell (ids host:pid/<cell>), each
with its own pools, store and broker, so one cell's backlog never takes another's slots; the handlers
module is loaded once. A process serving several cells takes no --health-port (metrics are per cell).

Each failed attempt is logged at warn (type, id, attempt, error and the first lines of its stack),
each dead-letter at error, and a summary line (claimed, succeeded, failed, dead, released, in
flight) every --summary-every (default 1m).`;
  static override examples = [
    '<%= config.bin %> worker --handlers ./dist/handlers.js',
    '<%= config.bin %> worker --handlers ./handlers.js --pools io --io-concurrency 500',
    '<%= config.bin %> worker --handlers ./handlers.js --summary-every 10s',
    'AX_LEASE=10s <%= config.bin %> worker --handlers ./handlers.js --pools cpu --cpu-threads 4',
    '<%= config.bin %> worker --handlers ./handlers.js --health-port 8083',
  ];
  static override flags = {
    handlers: Flags.string({description: 'module exporting defineHandlers({...})', required: true}),
    pools: Flags.string({description: 'pools to run, comma-separated', default: 'io,cpu'}),
    'io-concurrency': Flags.integer({description: 'IO pool size (default from the formula)', min: 1, max: 100_000}),
    'cpu-threads': Flags.integer({description: 'CPU pool threads (default cores + 1)', min: 1, max: 256}),
    'queue-capacity': Flags.integer({description: 'local queue of each pool (default 2000)', min: 1, max: 60_000}),
    ...healthFlags('GET /healthz (the worker stats) and /readyz (200 while consuming; the port is logged)'),
    'fail-fast': failFastFlag,
    'summary-every': summaryEveryFlag,
  };

  async run(): Promise<unknown> {
    const {flags} = await this.parse(WorkerCommand);
    const pools = flags.pools.split(',').map((p) => p.trim()) as PoolName[];
    const rts = this.runtimes(flags, {
      ...(flags['io-concurrency'] === undefined ? {} : {ioConcurrency: flags['io-concurrency']}),
      ...(flags['cpu-threads'] === undefined ? {} : {cpuThreads: flags['cpu-threads']}),
      ...(flags['queue-capacity'] === undefined ? {} : {poolQueueCapacity: flags['queue-capacity']}),
      ...(flags['fail-fast'] ? {connectFailFast: true} : {}),
    });
    const rt = oneCellPerEndpoint(rts, flags);
    const summaryMs = summaryEveryMs(flags['summary-every']);
    const events = new AxEvents({
      onListenerError: (e, name) => rt.logger.error('event listener failed', {event: name, error: errorMessage(e)}),
    });
    let svc: WorkerHostService | undefined;
    try {
      const {value, exitCode} = await runHost({
        name: 'worker',
        clock: rt.clock,
        logger: rt.logger,
        graceMs: rt.config.shutdownGraceMs,
        serve: (probe) => startEndpoint(rt, flags, probe),
        details: (h) => {
          const w = svc?.worker;
          return {
            state: h.phase,
            ...(w ? {worker: w.id, inFlight: w.inFlight, ...w.stats} : {connect: h.connect}),
            unhandledRejections: h.guard.unhandledRejections,
            threadExceptions: h.guard.threadExceptions,
          };
        },
        // Each cell its own store, broker and worker (several cells: ids tagged with the cell).
        connect: (retry) => connectCells(rts, retry),
        services: (cells, h) => {
          const [first, ...more] = cells.map((c) => ({
            ...c.rt,
            store: c.store,
            broker: c.broker,
            ...(rts.length > 1 ? {workerId: `${hostname()}:${process.pid}/${c.rt.config.cell}`} : {}),
          }));
          const service = new WorkerHostService(
            {
              ...(first as NonNullable<typeof first>),
              handlersModule: flags.handlers,
              pools,
              events,
              onThreadStray: (kind) => h.guard.noteThreadStray(kind),
              moreCells: more,
            },
            cells.map((c) => c.broker),
          );
          svc = service;
          // Subscribed before the start, so the first claims count too; the pools are read on scrape.
          if (h.endpoint)
            workerMetrics(h.endpoint.metrics, events, {
              pools: () => service.worker?.poolStats() ?? [],
              held: () => service.worker?.inFlight ?? 0,
            });
          return [service];
        },
        onRunning: (h) => {
          const where = h.endpoint ? `; health on ${h.endpoint.url} (/healthz, /readyz, /metrics)` : '';
          const served = rts.length > 1 ? ` for cells ${rts.map((r) => r.config.cell).join(', ')}` : '';
          if (!this.jsonEnabled())
            this.logToStderr(
              `ax worker ${svc?.workers.map((w) => w.id).join(', ')} running pools ${pools.join(', ')}${served}${where}; Ctrl-C to stop`,
            );
        },
        summary: {everyMs: summaryMs, msg: 'worker summary', fields: () => sumWorkerStats(svc?.workers ?? [])},
        stopping: () => ({graceMs: rt.config.shutdownGraceMs}),
        result: (reason, h) => {
          const workers = svc?.workers ?? [];
          const worker = workers[0];
          return {
            value: {
              worker: worker?.id,
              ...(reason.kind === 'signal' ? {signal: reason.signal} : {crashed: true}),
              unhandledRejections: h.guard.unhandledRejections,
              threadExceptions: h.guard.threadExceptions,
              ...(workers.length > 1 ? sumWorkerStats(workers) : worker?.stats),
              ...(workers.length > 1 ? {cells: workers.map((w, i) => ({cell: rts[i]?.config.cell, worker: w.id, ...w.stats}))} : {}),
            },
            exitCode: svc?.onStopFailed ? 1 : 0,
          };
        },
      });
      process.exitCode = exitCode;
      return value;
    } finally {
      exitSoon();
    }
  }
}
