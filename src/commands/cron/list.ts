import {AxCommand} from '../../cli/base.js';
import {table, when} from '../../cli/render.js';
import type {ScheduleOverview} from '../../core/admin/cron.js';
import type {TaskState} from '../../core/task/state.js';
import {scheduleJson, type ScheduleJson} from '../../cli/cron.js';

/** The latest occurrence whose fire time has come (scheduled or triggered), with its state now. */
export interface LastOccurrenceJson {
  taskId: string;
  fireAt: string;
  state: TaskState;
}

export interface CronListItem extends ScheduleJson {
  /** The next fire time after now (UTC ISO); null when paused. */
  nextOccurrence: string | null;
  lastOccurrence: LastOccurrenceJson | null;
}

export interface CronListResult {
  count: number;
  schedules: CronListItem[];
}

export default class CronList extends AxCommand {
  static override readOnly = true;
  static override summary = 'List cron schedules with their next and last occurrence.';
  static override description = `One row per schedule of the configured cell, by name: expression, zone, task type, whether it is paused, its next fire time after now, and the latest occurrence that has fired (scheduled or triggered) with its state. Times in UTC; \`ax cron show <name>\` gives them in the schedule's zone too.

Exit codes: 5 MySQL unavailable.`;
  static override examples = [
    {description: 'All schedules', command: '<%= config.bin %> cron list'},
    {
      description: 'Schedules whose last run died, for a script',
      command: `<%= config.bin %> cron list --json | jq -r '.schedules[] | select(.lastOccurrence.state == "dead") | .name'`,
    },
  ];

  async run(): Promise<CronListResult> {
    const {flags} = await this.parse(CronList);
    await using admin = this.admin(flags);
    const items = (await admin.cron.overview()).map(toItem);
    if (!this.jsonEnabled()) {
      if (items.length === 0) this.log('no cron schedules: add one with `ax cron add`');
      else
        for (const line of table(['NAME', 'CRON', 'TZ', 'TYPE', 'PAUSED', 'NEXT (UTC)', 'LAST FIRE (UTC)'], items.map(toCells), {
          keep: [0],
        }))
          this.log(line);
    }
    return {count: items.length, schedules: items};
  }
}

function toItem(s: ScheduleOverview): CronListItem {
  const last = s.lastOccurrence;
  return {
    ...scheduleJson(s),
    nextOccurrence: s.nextOccurrence === null ? null : s.nextOccurrence.toISOString(),
    lastOccurrence: last === null ? null : {taskId: last.taskId, fireAt: last.fireAt.toISOString(), state: last.state},
  };
}

function toCells(s: CronListItem): string[] {
  const last = s.lastOccurrence;
  return [
    s.name,
    s.cron,
    s.tz,
    s.type,
    s.paused ? 'yes' : 'no',
    when(s.nextOccurrence === null ? null : new Date(s.nextOccurrence), {seconds: true}),
    last === null ? '-' : `${when(new Date(last.fireAt), {seconds: true})} ${last.state}`,
  ];
}
