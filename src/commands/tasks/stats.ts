import {Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {iso, table, when} from '../../cli/render.js';
import {formatDuration} from '../../core/duration.js';
import {DEFAULT_STATS_SINCE, type TasksStatsReport, type TypeStats} from '../../core/inspect/stats.js';

type TypeStatsJson = Omit<TypeStats, 'oldestDueAt'> & {oldestDueAt: string | null};
export interface TasksStatsJson {
  at: string;
  since: string;
  types: TypeStatsJson[];
  totals: Omit<TypeStatsJson, 'type'>;
}

export default class TasksStats extends AxCommand {
  static override readOnly = true;
  static override summary = 'The backlog per type (due, delayed, running, oldest due, dead) and what finished in the last hour.';
  static override description = `One row per task type of the configured cell, then the totals:
  DUE        submitted or failed tasks whose run_at has come: waiting for a worker
  DELAYED    submitted or failed tasks whose run_at is ahead (delayed tasks, retries backing off)
  RUNNING    claimed by a worker now
  OLDEST     how long the oldest due task has waited (database clock): how late the type runs
  DEAD       in the dead-letter queue now (ax dlq list)
  SUCCEEDED, DIED, CANCELLED   tasks that reached that state since --since (default ${DEFAULT_STATS_SINCE}, at most 7d)

The backlog is read from an index over the live and dead tasks only, so its cost does not grow with the finished ones; the window's counts read its terminal transitions (index idx_history_failures), so a wide window on a busy system reads more. --json gives {at, since, types: [{type, due, delayed, running, dead, oldestDueAt, oldestDueAgeMs, finished: {succeeded, dead, cancelled}}], totals}.

Exit codes: 2 bad flag value, 5 MySQL unavailable.`;
  static override examples = [
    {description: 'Where is the work, and is it late?', command: '<%= config.bin %> tasks stats'},
    {description: 'What finished today', command: '<%= config.bin %> tasks stats --since 1d'},
    {description: 'Due tasks in total, for a script', command: "<%= config.bin %> tasks stats --json | jq '.totals.due'"},
  ];
  static override flags = {
    since: Flags.string({
      description: `count finished tasks since: a duration back from now (15m, 2h, 1d) or an ISO-8601 time, at most 7d back (default ${DEFAULT_STATS_SINCE})`,
    }),
  };

  async run(): Promise<TasksStatsJson> {
    const {flags} = await this.parse(TasksStats);
    await using admin = this.admin(flags);
    const report = await admin.tasks.stats(flags.since);
    if (!this.jsonEnabled()) for (const line of render(report)) this.log(line);
    return toJson(report);
  }
}

function toJson(r: TasksStatsReport): TasksStatsJson {
  const row = <T extends {oldestDueAt: Date | null}>(t: T) => ({...t, oldestDueAt: iso(t.oldestDueAt)});
  return {at: r.at.toISOString(), since: r.since.toISOString(), types: r.types.map(row), totals: row(r.totals)};
}

function render(r: TasksStatsReport): string[] {
  const footer = `finished since ${when(r.since, {seconds: true})} UTC`;
  if (r.types.length === 0) return ['no live or dead tasks, none finished', footer];
  const head = ['TYPE', 'DUE', 'DELAYED', 'RUNNING', 'OLDEST', 'DEAD', 'SUCCEEDED', 'DIED', 'CANCELLED'];
  const cells = (name: string, t: Omit<TypeStats, 'type'>) => [
    name,
    ...[t.due, t.delayed, t.running].map(String),
    t.oldestDueAgeMs === null ? '-' : formatDuration(t.oldestDueAgeMs),
    ...[t.dead, t.finished.succeeded, t.finished.dead, t.finished.cancelled].map(String),
  ];
  const body = [...r.types.map((t) => cells(t.type, t)), cells('TOTAL', r.totals)];
  return [...table(head, body, {right: head.map((_, i) => i).slice(1)}), footer];
}
