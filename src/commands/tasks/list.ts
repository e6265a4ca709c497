import {Flags} from '@oclif/core';
import {limitFlag} from '../../cli/flags.js';
import {AxCommand} from '../../cli/base.js';
import {MAX_LIST_LIMIT, MAX_SEARCH_TEXT} from '../../core/inspect/inspect.js';
import {attemptBudget, attemptCell} from '../../core/inspect/timeline.js';
import type {TaskRecord} from '../../core/task/model.js';
import {TASK_STATES} from '../../core/task/state.js';
import {oneLine, table, taskJson, when} from '../../cli/render.js';

/** One task as `ax tasks list --json` shows it: the row without its payload, dates as ISO strings. */
export interface TaskListItem {
  id: string;
  type: string;
  pool: string;
  state: string;
  attempt: number;
  maxRetries: number;
  /** Attempts made before the latest DLQ replay (0: never replayed). */
  retryBase: number;
  runAt: string;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
  publishedAt: string | null;
  leaseUntil: string | null;
  worker: string | null;
  dedupKey: string | null;
  /** Who the task is for (TaskSpec.key), or null. */
  key: string | null;
  lastError: string | null;
}

export interface TaskListResult {
  count: number;
  tasks: TaskListItem[];
}

export default class TasksList extends AxCommand {
  static override readOnly = true;
  static override summary = 'List tasks, newest first.';
  static override description = `Filters combine (AND); states are ${TASK_STATES.join(', ')}. The table shows ATTEMPT as attempts made / attempts allowed (1 + max retries), counted since the latest DLQ replay when there was one (then with the attempts in all: 1/6 (4 in all)), times in UTC, and, on a terminal, the last error cut to fit (a task id never is; piped output is never cut): \`ax tasks show <id>\` has the rest.`;
  static override examples = [
    {description: 'The 50 newest tasks', command: '<%= config.bin %> tasks list'},
    {
      description: 'Dead tasks of one type from the last 15 minutes',
      command: '<%= config.bin %> tasks list --state dead --type order_notify --since 15m',
    },
    {description: 'The tasks of order 42 from the last day', command: `<%= config.bin %> tasks list --payload 'orderId=42' --since 1d`},
    {description: 'The failed tasks of tenant 42', command: '<%= config.bin %> tasks list --key tenant:42 --state failed'},
    {description: 'Tasks whose last error mentions a timeout', command: '<%= config.bin %> tasks list --error timeout --since 1h'},
    {
      description: 'Everything created since a given time, as JSON',
      command: '<%= config.bin %> tasks list --since 2026-05-01T00:00:00Z --limit 1000 --json',
    },
  ];
  static override flags = {
    state: Flags.string({char: 's', description: `only tasks in this state (${TASK_STATES.join(', ')})`}),
    type: Flags.string({char: 't', description: 'only tasks of this type (domain_action)'}),
    since: Flags.string({description: 'only tasks created since: a duration back from now (15m, 2h, 7d) or an ISO-8601 time'}),
    error: Flags.string({
      char: 'e',
      description: `only tasks whose last error contains this text (literally: % and _ are not wildcards; at most ${MAX_SEARCH_TEXT} characters)`,
    }),
    'dedup-key': Flags.string({description: 'only the task with this dedup key'}),
    key: Flags.string({description: 'only tasks with this key (who the task is for, e.g. tenant:42; ax submit --key)'}),
    payload: Flags.string({
      description:
        'only tasks whose payload field equals a value, as field=value (orderId=42, customer.id=7; the value compared as text); needs --since: the payload of every task created since then is read (an indexed field, see ax payload-index add, reads only its matches, whatever the window)',
    }),
    limit: limitFlag({char: 'n', max: MAX_LIST_LIMIT, what: 'tasks shown', defaultText: '50'}),
  };

  async run(): Promise<TaskListResult> {
    const {flags} = await this.parse(TasksList);
    await using admin = this.admin(flags);
    const {tasks: rows} = await admin.tasks.list({
      state: flags.state,
      type: flags.type,
      since: flags.since,
      error: flags.error,
      dedupKey: flags['dedup-key'],
      key: flags.key,
      payload: flags.payload,
      limit: flags.limit,
    });
    const result = {count: rows.length, tasks: rows.map(toItem)};
    if (!this.jsonEnabled()) {
      if (rows.length === 0) this.log('no tasks match');
      else
        for (const line of table(['ID', 'TYPE', 'STATE', 'ATTEMPT', 'RUN AT', 'UPDATED', 'LAST ERROR'], rows.map(toCells))) this.log(line);
    }
    return result;
  }
}

function toItem(t: TaskRecord): TaskListItem {
  const {payload: _payload, cell: _cell, fence: _fence, timeoutMs: _timeout, ...rest} = taskJson(t);
  return rest;
}

function toCells(t: TaskRecord): string[] {
  return [
    t.id,
    t.type,
    t.state,
    attemptCell(attemptBudget(t)),
    // A waiting task (parents or batch left: docs/workflows.md) has a placeholder due time.
    t.state === 'submitted' && t.runAt.getUTCFullYear() >= 9999 ? 'waiting' : when(t.runAt, {seconds: true}),
    when(t.updatedAt, {seconds: true}),
    oneLine(t.lastError),
  ];
}
