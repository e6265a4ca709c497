import {Flags} from '@oclif/core';
import {AxCommand} from '../cli/base.js';
import {exitSoon} from '../cli/signals.js';
import {createTopSource} from '../cli/top.js';
import {terminalWidth} from '../cli/render.js';
import {parseDuration} from '../core/duration.js';
import {AxError, invalid} from '../core/errors.js';
import {initialTopState, type TopSnapshot} from '../core/inspect/top.js';
import {validateTypeName} from '../core/task/validate.js';
import {BACKLOG_P1, BACKLOG_P2, STALE_AFTER_BEATS} from '../core/thresholds.js';
import {errorLines, headerLines, MIN_WIDTH, typeTableLines} from '../ui/top/layout.js';

const MIN_INTERVAL_MS = 200;

export default class Top extends AxCommand {
  static override readOnly = true;
  static override summary = 'Watch ax live in the terminal: backlog, rates, failures and workers per type.';
  static override description = `A live view (Ink) refreshed every --interval (default 1s). The header shows the cell, the workers (live, and stale: no heartbeat for ${STALE_AFTER_BEATS} intervals), the submit rate (tasks created per second), the consume rate (attempts finished per second), the backlog (due + delayed + running) with its trend per minute, the dead tasks and the alert level with the thresholds of the alert rules, on the due tasks as the rules count them (P1 due > ${BACKLOG_P1}, P2 due > ${BACKLOG_P2} and growing for 5 minutes; P2 needs 5 minutes of history). Below: sparklines of the backlog and both rates over the last 5 minutes, a table per type (DUE, DELAY, RUN, RATE/s, FAIL %, P95 attempt duration with the wait in the worker's local queue, breaker, paused, DEAD) and the recent errors of the selected type. Rates, failure share and p95 are over the live workers' last heartbeat interval (AX_HEARTBEAT, default 5s). Breaker (ok: closed, OPEN, half: half-open) and paused (yes/no) come from the type registry (ax types show), read with each refresh; "—" when it could not be read.

Keys: ↑/↓ select a type, p pause/resume it (asks y/N; the same audited pause and resume as ax types pause|resume, reason "ax top"; a resume releases the parked tasks), r replay its dead tasks (asks y/N; audited as "top replay"), e its errors, / filter by name, ? help, Esc back, q quit.

When MySQL is down the view says so and keeps retrying. Off a terminal (a pipe, CI) use --once: one snapshot as text, or with --json as JSON.

Exit codes: 2 bad flag value, not a terminal without --once, or a terminal narrower than ${MIN_WIDTH} columns; 3 --once --type of a type with no tasks and no worker reporting it; 5 MySQL unavailable (--once).`;
  static override examples = [
    {description: 'Watch the cell', command: '<%= config.bin %> top'},
    {description: 'Refresh every 5 seconds, starting on one type', command: '<%= config.bin %> top --interval 5s --type order_notify'},
    {description: 'One snapshot for a script', command: "<%= config.bin %> top --once --json | jq '.backlog.total'"},
  ];
  static override flags = {
    interval: Flags.string({description: `refresh period, a duration of at least ${MIN_INTERVAL_MS}ms (default 1s)`}),
    once: Flags.boolean({description: 'print one snapshot and exit (text, or JSON with --json): for pipes and scripts'}),
    type: Flags.string({char: 't', description: 'only this type (domain_action): the live view starts filtered on it'}),
  };

  async run(): Promise<TopSnapshot | undefined> {
    const {flags} = await this.parse(Top);
    const intervalMs = parseDuration(flags.interval ?? '1s', 'interval');
    if (intervalMs < MIN_INTERVAL_MS) throw invalid(`interval must be at least ${MIN_INTERVAL_MS}ms`);
    const type = flags.type === undefined ? undefined : validateTypeName(flags.type);
    const once = flags.once || this.jsonEnabled();
    if (!once) {
      if (!process.stdout.isTTY)
        throw invalid('ax top draws on a terminal and stdout is not one: use ax top --once (add --json for scripts)');
      const cols = process.stdout.columns;
      if (cols < MIN_WIDTH)
        throw invalid(`ax top needs at least ${MIN_WIDTH} columns; this terminal has ${cols}. Widen it, or use ax top --once`);
    }
    const rt = this.runtime(flags);
    const source = createTopSource(rt);
    try {
      if (once) return await this.once(source, type);
      // Ink draws only the last frame when it believes it runs in CI (CI or CONTINUOUS_INTEGRATION
      // set, read once when ink loads): on a terminal, which is checked above, ax top is live.
      for (const k of ['CI', 'CONTINUOUS_INTEGRATION']) if (k in process.env) process.env[k] = 'false';
      const {runTop} = await import('../ui/top/run.js');
      await runTop({source, intervalMs, ...(type === undefined ? {} : {filter: type})});
      return undefined;
    } finally {
      await source.close().catch(() => undefined);
      if (!once) exitSoon();
    }
  }

  private async once(source: ReturnType<typeof createTopSource>, type: string | undefined): Promise<TopSnapshot> {
    await source.connect();
    const {snapshot: s} = await source.refresh(initialTopState(), type ?? null);
    if (s.at === null) throw new AxError('unavailable', s.failures.join('; '));
    const snapshot = type === undefined ? s : {...s, types: s.types.filter((t) => t.type === type)};
    if (type !== undefined && snapshot.types.length === 0)
      throw new AxError('not_found', `no task of type ${type} is waiting, running or dead, and no live worker reports it`);
    if (!this.jsonEnabled()) {
      const width = Math.max(MIN_WIDTH, terminalWidth() ?? 100);
      for (const l of headerLines(snapshot, width, 0)) this.log(l);
      this.log(`alert ${snapshot.alert.level}: ${snapshot.alert.reason}`);
      this.log('');
      for (const l of typeTableLines(snapshot.types, width)) this.log(`  ${l}`.trimEnd());
      if (type !== undefined) for (const l of ['', ...errorLines(snapshot, type, width, 5)]) this.log(l);
      for (const f of snapshot.failures) this.logToStderr(`! ${f}`);
    }
    return snapshot;
  }
}
