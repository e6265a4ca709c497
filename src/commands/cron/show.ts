import {Args, Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {openAdmin} from '../../cli/runtime.js';
import {validateScheduleName} from '../../core/cron/schedule.js';
import {DEFAULT_NEXT, MAX_NEXT, renderSchedule, showResult, type CronShowResult} from '../../cli/cron.js';

export default class CronShow extends AxCommand {
  static override readOnly = true;
  static override summary = 'Show a cron schedule, its policies and its next fire times.';
  static override description = `The schedule (expression, zone, task type, payload, pool, retries, timeout, paused or not), its misfire, overlap and DST policies explained in one line each, the pending occurrence a scheduler has created, and the next N fire times (default ${DEFAULT_NEXT}, at most ${MAX_NEXT}) after now, in UTC and in the schedule's zone.

Exit codes: 2 bad name or --next, 3 unknown schedule, 5 MySQL unavailable.`;
  static override examples = [
    {description: 'The schedule and its next 5 fire times', command: '<%= config.bin %> cron show report-daily'},
    {description: 'Check an expression: the next 10 fire times', command: '<%= config.bin %> cron show report-daily --next 10'},
    {
      description: 'The fire times as UTC instants, for a script',
      command: "<%= config.bin %> cron show report-daily --json | jq -r '.nextFireTimes[].utc'",
    },
  ];
  static override args = {
    name: Args.string({description: 'schedule name', required: true, ignoreStdin: true}),
  };
  static override flags = {
    next: Flags.integer({
      char: 'n',
      min: 1,
      max: MAX_NEXT,
      default: DEFAULT_NEXT,
      description: `how many fire times to show, 1 to ${MAX_NEXT}`,
    }),
  };

  async run(): Promise<CronShowResult> {
    const {args, flags} = await this.parse(CronShow);
    const rt = this.runtime(flags);
    await using admin = openAdmin(rt);
    // Checked before connecting, so that a typo is exit 2 even when the database is down.
    const name = validateScheduleName(args.name);
    const s = await admin.cron.show(name, flags.next);
    const nowMs = rt.clock.now();
    const result = showResult(s, s.nextFireTimes, nowMs);
    if (!this.jsonEnabled()) for (const line of renderSchedule(result, nowMs)) this.log(line);
    return result;
  }
}
