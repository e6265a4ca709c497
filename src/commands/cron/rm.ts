import {Args} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {validateScheduleName} from '../../core/cron/schedule.js';
import {cancelledJson, describeCancelled, type CancelledJson} from '../../cli/cron.js';

export interface CronRmResult {
  name: string;
  removed: true;
  /** The pending occurrence cancelled with the schedule (none if it had already run, or was paused). */
  cancelled: CancelledJson[];
}

export default class CronRm extends AxCommand {
  static override summary = 'Remove a cron schedule and cancel its pending occurrence.';
  static override description = `Deletes the schedule and cancels its pending occurrence (created but not started), with the reason in its history. Occurrences that already ran, or are running, stay as they are: \`ax tasks list\` still shows them. To stop a schedule for a while, \`ax cron pause\` keeps its definition.

Exit codes: 2 bad name, 3 unknown schedule, 5 MySQL unavailable.`;
  static override examples = [
    {description: 'Remove a schedule', command: '<%= config.bin %> cron rm report-daily'},
    {description: 'Remove it and see what was cancelled, as JSON', command: '<%= config.bin %> cron rm report-daily --json'},
  ];
  static override args = {
    name: Args.string({description: 'schedule name', required: true, ignoreStdin: true}),
  };

  async run(): Promise<CronRmResult> {
    const {args, flags} = await this.parse(CronRm);
    await using admin = this.admin(flags);
    const name = validateScheduleName(args.name); // before connecting: a typo is exit 2 even offline
    const r = await admin.cron.remove(name);
    const result = {name: r.name, removed: true as const, cancelled: r.cancelledOccurrences.map(cancelledJson)};
    if (!this.jsonEnabled()) this.log(`removed ${name}; ${describeCancelled(result.cancelled)}`);
    return result;
  }
}
