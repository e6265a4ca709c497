import {Args} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {disposable} from '../../cli/dispose.js';
import {openStore} from '../../cli/runtime.js';
import {invalid} from '../../core/errors.js';
import {showTask, type TaskDetail} from '../../core/inspect/inspect.js';
import {isTaskId} from '../../core/task/id.js';
import type {HistoryEntry} from '../../core/task/model.js';
import {printable, table, taskJson, type TaskJson, when} from '../../cli/render.js';

export interface HistoryJson extends Omit<HistoryEntry, 'at'> {
  at: string;
}

export interface TaskShowResult {
  task: TaskJson;
  history: HistoryJson[];
}

const PAYLOAD_PREVIEW = 400;

export default class TasksShow extends AxCommand {
  static override readOnly = true;
  static override summary = 'Show one task and its history.';
  static override description = `The task row (state, attempts, due time, lease, last error, payload) and its timeline: every transition with its time (UTC), the worker or process (host:pid) that made it, the attempt, and the error or reason recorded with it. --json prints the whole payload; the human view cuts it short.

Exit codes: 2 malformed id, 3 unknown id, 5 MySQL unavailable.`;
  static override examples = [
    {description: 'Why did this task die?', command: '<%= config.bin %> tasks show 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d'},
    {description: 'Everything, for a script', command: '<%= config.bin %> tasks show 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d --json'},
  ];
  static override args = {
    id: Args.string({description: 'task id (a lower-case UUID, as printed by `ax submit`)', required: true, ignoreStdin: true}),
  };

  async run(): Promise<TaskShowResult> {
    const {args, flags} = await this.parse(TasksShow);
    const rt = this.runtime(flags.config);
    // Checked before connecting so that a typo is exit 2 even when the database is down.
    if (!isTaskId(args.id)) throw invalid(`"${args.id}" is not a task id (a lower-case UUID)`);
    await using store = disposable(await openStore(rt));
    const detail = await showTask(store, args.id);
    if (!this.jsonEnabled()) for (const line of render(detail)) this.log(line);
    return {task: taskJson(detail.task), history: detail.history.map((h) => ({...h, at: h.at.toISOString()}))};
  }
}

function render({task: t, history}: TaskDetail): string[] {
  const payload = JSON.stringify(t.payload);
  const lines = [
    `${t.id}  ${t.type}  ${t.state.toUpperCase()}`,
    `  pool ${t.pool} · attempt ${t.attempt} of ${t.maxRetries + 1} · timeout ${t.timeoutMs === null ? 'default' : `${t.timeoutMs} ms`} · cell ${t.cell}`,
    `  run at    ${when(t.runAt)}    published ${when(t.publishedAt)}`,
    `  created   ${when(t.createdAt)}    updated   ${when(t.updatedAt)}    finished ${when(t.finishedAt)}`,
  ];
  if (t.worker !== null || t.leaseUntil !== null) lines.push(`  worker    ${t.worker ?? '-'}    lease until ${when(t.leaseUntil)}`);
  if (t.dedupKey !== null) lines.push(`  dedup key ${printable(t.dedupKey)}`);
  if (t.lastError !== null) lines.push(`  last error ${printable(t.lastError)}`);
  lines.push(
    `  payload   ${payload.length > PAYLOAD_PREVIEW ? `${payload.slice(0, PAYLOAD_PREVIEW)}… (${payload.length} chars; --json for all)` : payload}`,
  );
  lines.push('', 'history (UTC)');
  const rows = history.map((h) => [
    when(h.at),
    `${h.from ?? '·'} → ${h.to}`,
    String(h.attempt),
    h.worker ?? '-',
    (h.error ?? '').replace(/\s+/g, ' '),
  ]);
  lines.push(...table(['TIME', 'TRANSITION', 'ATTEMPT', 'BY', 'ERROR / REASON'], rows, {indent: '  '}));
  // The latest failed attempt's stack (first lines, as stored); --json has every attempt's.
  const last = history.findLast((h) => h.stack !== null);
  if (last?.stack) lines.push('', `stack of attempt ${last.attempt}`, ...last.stack.split('\n').map((l) => `  ${printable(l)}`));
  return lines;
}
