import {AxCommand} from '../cli/base.js';
import {failFastFlag, healthFlags, startEndpoint, summaryEvery, summaryEveryFlag} from '../cli/summary.js';
import {disposable} from '../cli/dispose.js';
import {signalController} from '../cli/signals.js';
import {isAxError} from '../core/errors.js';
import {isoTimes} from '../core/log.js';
import {oneCellPerEndpoint} from '../cli/cells.js';
import {startRelay, type RunningRelay} from '../relay.js';

export default class RelayCommand extends AxCommand {
  static override daemon = true;
  static override summary = 'Move tasks from the business database’s task_outbox into ax, until SIGTERM/SIGINT.';
  static override description = `Every AX_RELAY_INTERVAL (1s) the relay claims up to AX_RELAY_BATCH (500) unsent rows of task_outbox
with FOR UPDATE SKIP LOCKED (several relays share one table), writes the tasks into ax idempotently,
publishes the due ones with publisher confirms and only then marks the rows sent. A full batch loops
at once. Rows that can never be relayed (invalid JSON, bad type, conflicting dedup key) are marked
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
and /metrics (rows relayed, outbox lag; README "Metrics and alerts") on 127.0.0.1 (--health-host or
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
    const many = rts.length > 1;
    const summary = summaryEvery(flags['summary-every'], rt.logger, 'relay summary');
    // Listening first: a SIGTERM while waiting for a server down at start exits 0, not by the signal.
    const {signal: stop, signalled} = signalController();
    let started: RunningRelay[] = [];
    // The endpoint first: if its port is taken nothing has started; /readyz is 503 while connecting.
    const endpoint = await startEndpoint(rt, flags, {
      ready: () => started[0]?.relay.ready() ?? false,
      details: () => (started[0] ? isoTimes({relay: started[0].relay.id, ...started[0].relay.stats}) : {state: 'connecting'}),
    });
    await using _health = endpoint ? disposable(endpoint) : undefined;
    // One relay per cell served, each taking the outbox rows of its cell's types (from the loaded
    // configuration: startRelay derives the cell's own).
    const config = rts.map((r) => r.config.cell);
    const base = this.baseRuntime(flags.config, flags['fail-fast'] ? {connectFailFast: true} : {});
    const results = await Promise.allSettled(
      config.map((cell) => startRelay(base.config, base.logger, {signal: stop, cell, ...(endpoint ? {metrics: endpoint.metrics} : {})})),
    );
    started = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      for (const r of started) await r.stop();
      if (!(isAxError(failed.reason, 'closed') && stop.aborted)) throw failed.reason;
      return {stoppedBeforeStart: true, signal: await signalled};
    }
    const where = endpoint ? `; health on ${endpoint.url} (/healthz, /readyz, /metrics)` : '';
    const served = many ? ` for cells ${config.join(', ')}` : '';
    if (!this.jsonEnabled())
      this.logToStderr(`ax relay ${started.map((r) => r.relay.id).join(', ')} running${served}${where}; Ctrl-C to stop`);
    const stats = (r: RunningRelay, i: number) => ({...(many ? {cell: config[i]} : {}), relay: r.relay.id, ...r.relay.stats});
    const stopSummary = summary.start(() =>
      many
        ? {cells: started.map((r, i) => ({...stats(r, i), ready: r.relay.ready()}))}
        : {...started[0]?.relay.stats, ready: started[0]?.relay.ready()},
    );
    const signal = await signalled;
    stopSummary();
    for (const r of started) await r.stop();
    return isoTimes({signal, ...(many ? {cells: started.map(stats)} : stats(started[0] as RunningRelay, 0))});
  }
}
