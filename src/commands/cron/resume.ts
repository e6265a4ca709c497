import {Args} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {validateScheduleName} from '../../core/cron/schedule.js';
import {when} from '../../cli/render.js';
import {fireTimeJson, humanLocal, scheduleJson, type FireTimeJson, type ScheduleJson} from '../../cli/cron.js';

export interface CronResumeResult {
  schedule: ScheduleJson;
  /** The next fire time after now: the first occurrence a scheduler will create. */
  nextFireTime: FireTimeJson | null;
}

export default class CronResume extends AxCommand {
  static override summary = 'Resume a paused cron schedule from now on, without catching up.';
  static override description = `Schedulers create its occurrences again, starting with the first fire time after now: the fire times that passed while it was paused are not made up, whatever its misfire policy. Resuming a schedule that is not paused changes nothing.

Exit codes: 2 bad name, 3 unknown schedule, 5 MySQL unavailable.`;
  static override examples = [
    {description: 'Start the daily report again', command: '<%= config.bin %> cron resume report-daily'},
    {description: 'When will it run next? (UTC)', command: "<%= config.bin %> cron resume report-daily --json | jq -r '.nextFireTime.utc'"},
  ];
  static override args = {
    name: Args.string({description: 'schedule name', required: true, ignoreStdin: true}),
  };

  async run(): Promise<CronResumeResult> {
    const {args, flags} = await this.parse(CronResume);
    await using admin = this.admin(flags);
    const name = validateScheduleName(args.name); // before connecting: a typo is exit 2 even offline
    await admin.cron.resume(name);
    const s = await admin.cron.show(name, 1);
    const next = s.nextFireTimes[0];
    if (!this.jsonEnabled()) {
      this.log(
        `resumed ${name}: occurrences are created from now on, none for the time it was paused; next fire ${
          next === undefined ? 'none within reach' : `${when(next, {seconds: true})} UTC (${humanLocal(next, s.tz)} ${s.tz})`
        }`,
      );
    }
    return {schedule: scheduleJson(s), nextFireTime: next === undefined ? null : fireTimeJson(next, s.tz)};
  }
}
