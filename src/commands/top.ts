import {Flags} from '@oclif/core';
import {AxCommand} from '../cli/base.js';
import {exitSoon} from '../cli/signals.js';
import {createTopSource} from '../cli/top.js';
import {terminalWidth} from '../cli/render.js';
import {parseDuration} from '../core/duration.js';
import {AxError, invalid} from '../core/errors.js';
import {HISTORY_MS, initialTopState, type TopSnapshot} from '../core/inspect/top.js';
import {parseSort, SORT_COLUMNS, sortRows} from '../core/inspect/top-sort.js';
import {createLogger, logOptions} from '../core/log.js';
import {validateTypeName} from '../core/task/validate.js';
import {BACKLOG_P1, BACKLOG_P2, STALE_AFTER_BEATS} from '../core/thresholds.js';
import {errorLines, headerLines, MIN_WIDTH, typeTableLines} from '../ui/top/layout.js';

const MIN_INTERVAL_MS = 200;

export default class Top extends AxCommand {
  static override readOnly = true;
  static override summary = 'Watch ax live in the terminal: backlog, rates, failures and workers per type.';
  static override description = `A live view (Ink) refreshed every --interval (default 1s). The header shows the cell, the workers (live, and stale: no heartbeat for ${STALE_AFTER_BEATS} intervals), the submit rate (tasks created per second), the consume rate (attempts finished per second), the backlog (due + delayed + running) with its trend per minute (the median change between the refreshes of the last 15 seconds: what the number beside it does), the dead tasks and the alert level with the thresholds of the alert rules, on the due tasks as the rules count them (P1 due > ${BACKLOG_P1}, P2 due > ${BACKLOG_P2} and growing for 5 minutes; P2 needs 5 minutes of history). When the database cannot be read the header says STALE and since when, and the alert shows "—": never a level from old or missing data. Below: sparklines of the backlog and both rates (over the last 5 minutes, growing to the last ${HISTORY_MS / 60_000} as the process runs longer; the window is named above them), a table per type (DUE, DELAY, PARKED: held back by a pause, an open breaker, no handler or a limit, RUN, RATE/s, FAIL %, P95 attempt duration with the wait in the worker's local queue, breaker, paused, DEAD) and the recent errors of the selected type. Rates, failure share and p95 are over the live workers' last heartbeat interval (AX_HEARTBEAT, default 5s). Breaker (ok: closed, OPEN, half: half-open) and paused (yes/no) come from the type registry (ax types show), read with each refresh; "—" when it could not be read.

Keys: ↑/↓ select a type, Enter its newest tasks (as ax tasks list --type) and Enter again a task's timeline (as ax tasks show), Esc or Backspace back, w the workers (as ax workers), s sort by the next column and S reverse the order, p pause/resume it (asks y/N; the same audited pause and resume as ax types pause|resume, reason "ax top"; a resume releases the parked tasks), r replay its dead tasks (asks y/N; audited as "top replay"), e its errors, / filter by name, ? help, q quit. Keys typed ahead or pasted together each act.

When MySQL is down the view says so and keeps retrying. Off a terminal (a pipe, CI) use --once: one snapshot as text, or with --json as JSON.

Exit codes: 2 bad flag value (an unknown --sort column names the valid ones), not a terminal without --once, or a terminal narrower than ${MIN_WIDTH} columns; 3 --once --type of a type with no tasks and no worker reporting it; 5 MySQL unavailable (--once).`;
  static override examples = [
    {description: 'Watch the cell', command: '<%= config.bin %> top'},
    {description: 'Refresh every 5 seconds, starting on one type', command: '<%= config.bin %> top --interval 5s --type order_notify'},
    {description: 'The types with the most due tasks first', command: '<%= config.bin %> top --sort due'},
    {description: 'One snapshot for a script', command: "<%= config.bin %> top --once --json | jq '.backlog.total'"},
  ];
  static override flags = {
    interval: Flags.string({description: `refresh period, a duration of at least ${MIN_INTERVAL_MS}ms (default 1s)`}),
    once: Flags.boolean({description: 'print one snapshot and exit (text, or JSON with --json): for pipes and scripts'}),
    type: Flags.string({char: 't', description: 'only this type (domain_action): the live view starts filtered on it'}),
    sort: Flags.string({
      description: `order of the type table: a column (${SORT_COLUMNS.join(', ')}), optionally :asc or :desc (numbers largest first, type A to Z by default)`,
    }),
  };

  async run(): Promise<TopSnapshot | undefined> {
    const {flags} = await this.parse(Top);
    const intervalMs = parseDuration(flags.interval ?? '1s', 'interval');
    if (intervalMs < MIN_INTERVAL_MS) throw invalid(`interval must be at least ${MIN_INTERVAL_MS}ms`);
    const type = flags.type === undefined ? undefined : validateTypeName(flags.type);
    const sort = flags.sort === undefined ? undefined : parseSort(flags.sort);
    const once = flags.once || this.jsonEnabled();
    if (!once) {
      if (!process.stdout.isTTY)
        throw invalid('ax top draws on a terminal and stdout is not one: use ax top --once (add --json for scripts)');
      const cols = process.stdout.columns;
      if (cols < MIN_WIDTH)
        throw invalid(`ax top needs at least ${MIN_WIDTH} columns; this terminal has ${cols}. Widen it, or use ax top --once`);
    }
    const base = this.runtime(flags);
    // While the live view draws, log lines are held and printed after it: a line written to the
    // terminal behind Ink's back (a pause's info line) would leave pieces of the old frame on screen.
    const held: string[] = [];
    const rt = once
      ? base
      : {
          ...base,
          logger: createLogger(
            base.config.logLevel,
            {pid: process.pid},
            (l) => void (held.length < 200 && held.push(l)),
            logOptions(base.config),
          ),
        };
    const source = createTopSource(rt);
    try {
      if (once) return await this.once(source, type, sort);
      // Ink draws only the last frame when it believes it runs in CI (CI or CONTINUOUS_INTEGRATION
      // set, read once when ink loads): on a terminal, which is checked above, ax top is live.
      for (const k of ['CI', 'CONTINUOUS_INTEGRATION']) if (k in process.env) process.env[k] = 'false';
      const {runTop} = await import('../ui/top/run.js');
      await runTop({source, intervalMs, ...(type === undefined ? {} : {filter: type}), ...(sort === undefined ? {} : {sort})});
      return undefined;
    } finally {
      await source.close().catch(() => undefined);
      for (const l of held) process.stderr.write(l.endsWith('\n') ? l : `${l}\n`);
      if (!once) exitSoon();
    }
  }

  private async once(
    source: ReturnType<typeof createTopSource>,
    type: string | undefined,
    sort: ReturnType<typeof parseSort> | undefined,
  ): Promise<TopSnapshot> {
    await source.connect();
    const {snapshot: s} = await source.refresh(initialTopState(), type ?? null);
    if (s.at === null) throw new AxError('unavailable', s.failures.join('; '));
    const types = type === undefined ? s.types : s.types.filter((t) => t.type === type);
    const snapshot = {...s, types: sort === undefined ? types : sortRows(types, sort)};
    if (type !== undefined && snapshot.types.length === 0)
      throw new AxError('not_found', `no task of type ${type} is waiting, running or dead, and no live worker reports it`);
    if (!this.jsonEnabled()) {
      const width = Math.max(MIN_WIDTH, terminalWidth() ?? 100);
      for (const l of headerLines(snapshot, width, 0)) this.log(l);
      this.log(`alert ${snapshot.alert.level}: ${snapshot.alert.reason}`);
      this.log('');
      for (const l of typeTableLines(snapshot.types, width, sort)) this.log(`  ${l}`.trimEnd());
      if (type !== undefined) for (const l of ['', ...errorLines(snapshot, type, width, 5)]) this.log(l);
      for (const f of snapshot.failures) this.logToStderr(`! ${f}`);
    }
    return snapshot;
  }
}
