import {Args} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {validateScheduleName} from '../../core/cron/schedule.js';
import {scheduleJson, type ScheduleJson} from '../../cli/cron.js';

export interface CronPauseResult {
  schedule: ScheduleJson;
  /** The occurrence already created for the next fire time: skipped if still paused when it falls due. */
  pending: {taskId: string; fireAt: string} | null;
}

export default class CronPause extends AxCommand {
  static override summary = 'Pause a cron schedule: no more occurrences until it is resumed.';
  static override description = `Schedulers stop creating occurrences of the schedule. The occurrence already created for its next fire time is skipped (cancelled, with the reason in its history) if the schedule is still paused when it falls due, so resuming before then loses no run. An occurrence already running is not interrupted. \`ax cron resume\` starts it again from then on, without making up for the fire times passed while paused. Pausing a paused schedule changes nothing.

Exit codes: 2 bad name, 3 unknown schedule, 5 MySQL unavailable.`;
  static override examples = [
    {description: 'Stop the daily report for now', command: '<%= config.bin %> cron pause report-daily'},
    {
      description: 'The pending occurrence that will be skipped, for a script',
      command: "<%= config.bin %> cron pause report-daily --json | jq -r '.pending.taskId'",
    },
  ];
  static override args = {
    name: Args.string({description: 'schedule name', required: true, ignoreStdin: true}),
  };

  async run(): Promise<CronPauseResult> {
    const {args, flags} = await this.parse(CronPause);
    await using admin = this.admin(flags);
    const name = validateScheduleName(args.name); // before connecting: a typo is exit 2 even offline
    const s = await admin.cron.pause(name);
    const result = {schedule: scheduleJson(s), pending: s.pending && {taskId: s.pending.taskId, fireAt: s.pending.fireAt.toISOString()}};
    if (!this.jsonEnabled()) {
      const p = result.pending;
      this.log(
        `paused ${name}; ${p ? `its occurrence due ${p.fireAt} (${p.taskId}) is skipped unless it is resumed before then` : 'no occurrence pending'}`,
      );
    }
    return result;
  }
}
