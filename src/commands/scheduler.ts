import {Flags} from '@oclif/core';
import {AxCommand} from '../cli/base.js';
import {hostname} from 'node:os';
import {connectCells, oneCellPerEndpoint} from '../cli/cells.js';
import {failFastFlag, healthFlags, startEndpoint, summaryEveryFlag, summaryEveryMs} from '../cli/summary.js';
import {createArchiver, type Runtime} from '../cli/runtime.js';
import type {AxStore} from '../core/store/types.js';
import {invalid} from '../core/errors.js';
import {runHost} from '../core/host/host.js';
import {isoTimes} from '../core/log.js';
import {cellSummaryLine, schedulerCell, type SchedulerCell} from '../core/scheduler/cell.js';
import {parseSchedulerParts, SCHEDULER_PART_NAMES, SCHEDULER_PARTS} from '../core/scheduler/components.js';
import {warnMisplaced} from '../core/scheduler/misplaced.js';

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
waiting in a cell whose type AX_CELLS now routes to another cell (docs/operating/cells.md).

Run one or more; on SIGTERM/SIGINT a scheduler lets go of its tasks so another takes them at once.
After a crash its tasks are taken over AX_SCHEDULER_HOLD (3s) after they are due. A summary line is
logged every minute. A server down at start is waited for (each attempt logged, jittered backoff up
to AX_CONNECT_RETRY_MAX); --fail-fast (AX_CONNECT_FAIL_FAST) exits 5 at once instead.

With --health-port (or AX_METRICS_PORT) it serves GET /healthz, /readyz and /metrics on 127.0.0.1
(--health-host or AX_METRICS_HOST): its own series plus the cell's gauges — backlog per type (due,
delayed), oldest due age, running, dead, live workers per pool — refreshed from MySQL every
AX_METRICS_CELL_EVERY (5s); one scheduler per cell is enough to serve them. A port in use exits 4.

Its parts run side by side and each can run alone with --only (comma-separated; default: all):
${SCHEDULER_PART_NAMES.map((p) => `  ${p.padEnd(13)}${SCHEDULER_PARTS[p]}`).join('\n')}
For example, one process firing tasks and another doing the maintenance:
  ax scheduler --only dispatcher        and        ax scheduler --only rescuer,reconciler,dlq-scan,archiver
Run every part somewhere: without a dispatcher nothing fires on time, without a rescuer a crashed
worker's tasks stay running until the reconciler's pass. An unknown part exits 2.`;
  static override examples = [
    '<%= config.bin %> scheduler',
    'AX_SCHEDULER_HORIZON=30s AX_LOG_LEVEL=info <%= config.bin %> scheduler',
    '<%= config.bin %> scheduler --health-port 8082',
    'AX_METRICS_PORT=9465 AX_METRICS_HOST=0.0.0.0 <%= config.bin %> scheduler',
    '<%= config.bin %> scheduler --only rescuer,reconciler,dlq-scan,archiver',
  ];
  static override flags = {
    only: Flags.string({
      description: `run only these parts, comma-separated (default: all): ${SCHEDULER_PART_NAMES.join(', ')}`,
      helpValue: 'part,part',
    }),
    'summary-every': summaryEveryFlag,
    ...healthFlags('GET /healthz (the summary) and /readyz (200 while loads from MySQL succeed)'),
    'fail-fast': failFastFlag,
  };

  async run(): Promise<unknown> {
    const {flags} = await this.parse(SchedulerCommand);
    const parts = parseSchedulerParts(flags.only);
    const rts = this.runtimes(flags, flags['fail-fast'] ? {connectFailFast: true} : {});
    const rt = oneCellPerEndpoint(rts, flags);
    if (parts.length === 1 && parts[0] === 'cell-metrics' && flags['health-port'] === undefined && rt.config.metricsPort === 0)
      throw invalid('--only cell-metrics serves the cell gauges on /metrics: give --health-port (or AX_METRICS_PORT)');
    const many = rts.length > 1;
    const summaryMs = summaryEveryMs(flags['summary-every']);
    let cells: SchedulerCell[] = [];
    let opened: Array<{rt: Runtime; store: AxStore}> = [];
    const {value, exitCode} = await runHost({
      name: 'scheduler',
      clock: rt.clock,
      logger: rt.logger,
      // A scheduler runs no user code: node's own handling of stray errors stays.
      crashGuard: false,
      graceMs: rt.config.shutdownGraceMs,
      // /readyz is 503 (and /healthz says why) while the scheduler waits for its servers, so a
      // liveness probe does not restart it.
      serve: (probe) => startEndpoint(rt, flags, probe),
      details: (h) => (cells[0] ? cellSummaryLine(cells[0]) : {state: 'connecting', connect: h.connect}),
      // A server down at start is waited for (logged, jittered backoff) unless --fail-fast.
      connect: (retry) => connectCells(rts, retry),
      // One scheduler per cell served, each on its cell's store and broker: the parts --only chose.
      services: (conns, h) => {
        opened = conns;
        cells = conns.map(({rt: crt, store, broker}, i) =>
          schedulerCell({
            ...crt,
            store,
            broker,
            parts,
            ...(many ? {id: `scheduler:${hostname()}:${process.pid}/${crt.config.cell}`} : {}),
            archiver: () => createArchiver(crt, store),
            // The scheduler alone serves the cell's gauges (backlog, workers): one reader per cell.
            ...(h.endpoint && i === 0 ? {metrics: h.endpoint.metrics} : {}),
          }),
        );
        return cells.flatMap((c) => c.services);
      },
      onRunning: async (h) => {
        // Tasks waiting in a cell that AX_CELLS now routes elsewhere (a type moved): said once at start.
        for (const c of opened) await warnMisplaced({cells: c.rt.cells, cell: c.rt.config.cell, logger: c.rt.logger, store: c.store});
        const where = h.endpoint ? `; health on ${h.endpoint.url} (/healthz, /readyz, /metrics)` : '';
        const served = many ? ` for cells ${rts.map((r) => r.config.cell).join(', ')}` : '';
        const only = parts.length < SCHEDULER_PART_NAMES.length ? ` (${parts.join(', ')})` : '';
        if (!this.jsonEnabled())
          this.logToStderr(`ax scheduler ${cells.map((x) => x.id).join(', ')} running${only}${served}${where}; Ctrl-C to stop`);
      },
      summary: {
        everyMs: summaryMs,
        msg: 'scheduler summary',
        fields: () =>
          many
            ? {cells: cells.map((c) => ({cell: c.cell, ...c.summary(), lastReconcile: undefined}))}
            : {cell: cells[0]?.cell, ...cells[0]?.summary(), lastReconcile: undefined},
      },
      result: (reason) => {
        const final = (c: SchedulerCell) => ({...(many ? {cell: c.cell} : {}), ...c.summary()});
        const signal = reason.kind === 'signal' ? reason.signal : undefined;
        return {value: isoTimes({signal, ...(many ? {cells: cells.map(final)} : final(cells[0] as SchedulerCell))})};
      },
    });
    process.exitCode = exitCode;
    return value;
  }
}
