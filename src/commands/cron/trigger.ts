import {Args} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {validateScheduleName} from '../../core/cron/schedule.js';

export interface CronTriggerResult {
  name: string;
  /** The task of the occurrence (its dedup key is cron:<name>@<fireAt>). */
  taskId: string;
  /** The fire time given to it: the database's now, ISO UTC. */
  fireAt: string;
}

export default class CronTrigger extends AxCommand {
  static override summary = 'Run one occurrence of a cron schedule now, and print its task id.';
  static override description = `Creates an occurrence with fire time = now (the database's clock), whatever the expression says, and rings for it on its pool's queue: a worker runs it like any other task. The schedule's own occurrences are unchanged, and the overlap policy does not apply to a triggered run. Works on a paused schedule too.

Exit codes: 2 bad name, 3 unknown schedule, 5 MySQL or RabbitMQ unavailable.`;
  static override examples = [
    {description: 'Run the daily report now', command: '<%= config.bin %> cron trigger report-daily'},
    {description: 'Run it and follow the task', command: '<%= config.bin %> tasks show $(<%= config.bin %> cron trigger report-daily)'},
  ];
  static override args = {
    name: Args.string({description: 'schedule name', required: true, ignoreStdin: true}),
  };

  async run(): Promise<CronTriggerResult> {
    const {args, flags} = await this.parse(CronTrigger);
    await using admin = this.admin(flags);
    const name = validateScheduleName(args.name); // before connecting: a typo is exit 2 even offline
    const r = await admin.cron.trigger(name);
    if (!this.jsonEnabled()) this.log(r.taskId);
    return {name: r.name, taskId: r.taskId, fireAt: r.fireAt.toISOString()};
  }
}
