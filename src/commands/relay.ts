import {AxCommand} from '../cli/base.js';
import {failFastFlag, healthFlags, startEndpoint, summaryEveryFlag, summaryEveryMs} from '../cli/summary.js';
import {oneCellPerEndpoint} from '../cli/cells.js';
import {runRelayDaemon} from '../relay.js';

export default class RelayCommand extends AxCommand {
  static override daemon = true;
  static override summary = 'Move tasks from the business database’s task_outbox into ax, until SIGTERM/SIGINT.';
  static override description = `The relay claims up to AX_RELAY_BATCH (500) unsent rows of task_outbox at a time with
FOR UPDATE SKIP LOCKED (several relays share one table), writes the tasks into ax idempotently,
publishes the due ones with publisher confirms and only then marks the rows sent. A pass that found
rows is followed by another at once, an empty one by a 20 ms poll for one AX_RELAY_INTERVAL (1s)
after the last rows found; an idle relay looks every interval/3 (its three passes staggered). Rows
that can never be relayed (invalid JSON, bad type, conflicting dedup key) are marked
failed and skipped: see \`ax outbox list --failed\`.

It relays for the cells of --cell a,b (default: AX_CELL): one relay per cell, each taking only the
rows whose types AX_CELLS routes to its cell, into that cell's database and RabbitMQ (no
--health-port with several cells: metrics are per cell).

The outbox lives in AX_OUTBOX_MYSQL_URL (default: AX_MYSQL_URL); create it with \`ax migrate --outbox\`.
The same relay runs as a separately deployed sidecar (sidecar/ in the package), which serves the
same endpoints on AX_RELAY_HEALTH_PORT. A summary line (rows relayed, published, failed; the outbox lag: unsent rows
and the age of the oldest) is logged every minute, and the totals are printed on exit. A server down
at start is waited for (each attempt logged, jittered backoff up to AX_CONNECT_RETRY_MAX);
--fail-fast (AX_CONNECT_FAIL_FAST) exits 5 at once instead.

With --health-port (or AX_METRICS_PORT) it serves GET /healthz, /readyz (200 while passes succeed)
and /metrics (rows relayed, outbox lag; docs/observability.md) on 127.0.0.1 (--health-host or
AX_METRICS_HOST). A port in use exits 4 before anything connects.`;
  static override examples = [
    '<%= config.bin %> relay',
    'AX_OUTBOX_MYSQL_URL=mysql://relay:secret@orders-db:3306/orders <%= config.bin %> relay',
    '<%= config.bin %> relay --summary-every 10s',
    '<%= config.bin %> relay --health-port 9466',
  ];
  static override flags = {
    'summary-every': summaryEveryFlag,
    ...healthFlags('GET /healthz (the relay stats) and /readyz (200 while passes succeed)'),
    'fail-fast': failFastFlag,
  };

  async run(): Promise<unknown> {
    const {flags} = await this.parse(RelayCommand);
    const rts = this.runtimes(flags, flags['fail-fast'] ? {connectFailFast: true} : {});
    const rt = oneCellPerEndpoint(rts, flags);
    const summaryMs = summaryEveryMs(flags['summary-every']);
    // One relay per cell served, each taking the outbox rows of its cell's types (from the loaded
    // configuration: the relay derives the cell's own).
    const cells = rts.map((r) => r.config.cell);
    const base = this.baseRuntime(flags.config, flags['fail-fast'] ? {connectFailFast: true} : {});
    const {value, exitCode} = await runRelayDaemon(base.config, base.logger, {
      cells,
      // The endpoint first: if its port is taken nothing has started; /readyz is 503 while connecting.
      serve: (probe) => startEndpoint(rt, flags, probe),
      summary: {everyMs: summaryMs, msg: 'relay summary'},
      onRunning: (relays, h) => {
        const where = h.endpoint ? `; health on ${h.endpoint.url} (/healthz, /readyz, /metrics)` : '';
        const served = cells.length > 1 ? ` for cells ${cells.join(', ')}` : '';
        if (!this.jsonEnabled())
          this.logToStderr(`ax relay ${relays.map((r) => r.id).join(', ')} running${served}${where}; Ctrl-C to stop`);
      },
    });
    process.exitCode = exitCode;
    return value;
  }
}
