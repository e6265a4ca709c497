import {Args, Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {payloadFromFlags} from '../../cli/payload.js';
import {
  DEFAULT_MISFIRE,
  DEFAULT_OVERLAP,
  MISFIRE_POLICIES,
  OVERLAP_POLICIES,
  type CronInput,
  type MisfirePolicy,
  type OverlapPolicy,
} from '../../core/cron/schedule.js';
import {POOLS, PRIORITIES, type PoolName, type Priority} from '../../core/task/model.js';
import {maxRetriesFlag} from '../../cli/flags.js';
import {DURATION_RULE} from '../../core/duration.js';
import {DEFAULT_NEXT, renderSchedule, showResult, type CronShowResult} from '../../cli/cron.js';
import {openAdmin} from '../../cli/runtime.js';

/** The --json output of `ax cron add`: the schedule as stored, its policies and its next 5 fire times. */
export type CronAddResult = CronShowResult;

export default class CronAdd extends AxCommand {
  static override summary = 'Add a cron schedule: a task created at every fire time of a cron expression in a time zone.';
  static override description = `The expression has 5 fields (minute hour day-of-month month day-of-week) or is a nickname (@hourly, @daily, @weekly, @monthly, @yearly); it is read in wall-clock time of --tz, an IANA zone, which is required (no implicit UTC). An expression that never fires within 5 years (0 0 31 2 *) is refused.

Every occurrence is an ordinary task of --type with the payload, created as a delayed task by a running \`ax scheduler\` (the first one at its next load), with the dedup key cron:<name>@<fire time, ISO UTC>, so several schedulers create each occurrence once. With --key every occurrence is for that key (tenant, customer), as \`ax submit --key\`.

Policies: --misfire (default ${DEFAULT_MISFIRE}) says what happens to fire times missed while no scheduler ran: skip drops them, fire-once makes up for them with one run. --overlap (default ${DEFAULT_OVERLAP}) says what happens when an occurrence falls due while the previous one has not finished: allow runs it anyway, skip cancels it.

Prints the schedule and its next ${DEFAULT_NEXT} fire times, in UTC and in the zone. Nothing is written unless every flag is valid.

The schedule is kept in the cell of --type (AX_CELLS; README "Cells"), whose schedulers create its occurrences: the other cron commands find it with --cell <that cell>.

Exit codes: 2 bad name, expression, zone, type, payload, key or policy, 4 a schedule with this name exists, 5 MySQL unavailable.`;
  static override examples = [
    {
      description: 'A daily report at 02:00 Shanghai time (18:00 UTC the day before)',
      command: `<%= config.bin %> cron add report-daily --cron '0 2 * * *' --tz Asia/Shanghai --type report_daily --payload '{}'`,
    },
    {
      description: 'Every 15 minutes in office hours on weekdays, New York time; never two at once',
      command: `<%= config.bin %> cron add sync-crm --cron '*/15 9-17 * * 1-5' --tz America/New_York --type crm_sync --overlap skip`,
    },
    {
      description: 'Monthly on the CPU pool, no make-up run after downtime, 3 retries, 10 minutes per attempt',
      command: `<%= config.bin %> cron add invoices-monthly --cron @monthly --tz Europe/Berlin --type invoice_batch --payload-file invoices.json --pool cpu --misfire skip --max-retries 3 --timeout 10m`,
    },
  ];
  static override args = {
    name: Args.string({
      description: 'schedule name: 1–64 lower-case letters, digits, "_", "." or "-", starting with a letter or digit',
      required: true,
      ignoreStdin: true,
    }),
  };
  static override flags = {
    cron: Flags.string({
      char: 'c',
      required: true,
      description: "cron expression, quoted: '0 2 * * *' (minute hour day-of-month month day-of-week) or @daily",
    }),
    tz: Flags.string({required: true, description: 'IANA time zone the expression is read in, e.g. Asia/Shanghai, Europe/Berlin, UTC'}),
    type: Flags.string({char: 't', required: true, description: 'task type of the occurrences (domain_action, e.g. report_daily)'}),
    payload: Flags.string({char: 'p', description: 'payload of every occurrence, a JSON object (default {})'}),
    'payload-file': Flags.string({description: 'read the payload (a JSON object) from this file'}),
    pool: Flags.string({options: [...POOLS], description: 'worker pool (default io)'}),
    priority: Flags.string({options: [...PRIORITIES], description: 'priority level of every occurrence (default normal)'}),
    overlap: Flags.string({
      options: [...OVERLAP_POLICIES],
      description: `when the previous occurrence has not finished (default ${DEFAULT_OVERLAP})`,
    }),
    misfire: Flags.string({
      options: [...MISFIRE_POLICIES],
      description: `fire times missed while no scheduler ran (default ${DEFAULT_MISFIRE})`,
    }),
    'max-retries': maxRetriesFlag({what: 'of each occurrence', defaultText: 'AX_MAX_RETRIES, 5'}),
    timeout: Flags.string({description: `per-attempt timeout of each occurrence: ${DURATION_RULE} (default: the handler's, else 10m)`}),
    key: Flags.string({
      description:
        "who every occurrence is for, e.g. tenant:42: its type's per-key limits and fair dispatch apply per key (ax types set --help)",
    }),
  };

  async run(): Promise<CronAddResult> {
    const {args, flags} = await this.parse(CronAdd);
    const rt = this.runtime(flags);
    await using admin = openAdmin(rt);
    const input: CronInput = {name: args.name, cron: flags.cron, tz: flags.tz, type: flags.type};
    const payload = await payloadFromFlags(flags, rt.config.payloadLimitBytes);
    if (payload !== undefined) input.payload = payload;
    if (flags.pool !== undefined) input.pool = flags.pool as PoolName;
    if (flags.priority !== undefined) input.priority = flags.priority as Priority;
    if (flags.overlap !== undefined) input.overlap = flags.overlap as OverlapPolicy;
    if (flags.misfire !== undefined) input.misfire = flags.misfire as MisfirePolicy;
    if (flags['max-retries'] !== undefined) input.maxRetries = flags['max-retries'];
    if (flags.timeout !== undefined) input.timeout = flags.timeout;
    if (flags.key !== undefined) input.key = flags.key;
    // The schedule lives in its type's cell, whose schedulers create its occurrences there; with
    // --cell, a type of another cell is refused. Everything is checked before connecting.
    const s = await admin.cron.addAndShow(input, {pinned: flags.cell !== undefined, next: DEFAULT_NEXT});
    const nowMs = rt.clock.now();
    const result = showResult(s, s.nextFireTimes, nowMs);
    if (!this.jsonEnabled()) for (const line of renderSchedule(result, nowMs)) this.log(line);
    return result;
  }
}
