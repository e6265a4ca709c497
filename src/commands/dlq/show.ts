import {Args} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {historyJson, iso, printable, taskJson, type HistoryJson, type TaskJson, when} from '../../cli/render.js';
import {renderTask} from '../../cli/task-view.js';
import type {AttemptFailure, DeadDetail} from '../../core/dlq/dlq.js';

export type AttemptJson = Omit<AttemptFailure, 'at' | 'startedAt'> & {at: string; startedAt: string | null};

export interface DlqShowResult {
  task: TaskJson;
  /** Each failed attempt, oldest first, with its error and stack. */
  attempts: AttemptJson[];
  history: HistoryJson[];
}

export default class DlqShow extends AxCommand {
  static override readOnly = true;
  static override summary = 'Show a dead task: its row, the error and stack of each attempt, and its timeline.';
  static override description = `Every attempt that failed is listed with its time (UTC), the worker, the whole error and the first lines of its stack (kept since schema version 4), then the whole history. A task that is not dead is refused: ax tasks show shows any task.

A task no longer in the live tables but in the archive (AX_ARCHIVE_DIR) is named as archived, with the \`ax archive show\` that shows it (still exit 3).

Exit codes: 2 malformed id, 3 unknown or archived id, 4 the task is not dead, 5 MySQL unavailable.`;
  static override examples = [
    {description: 'Why did it die?', command: '<%= config.bin %> dlq show 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d'},
    {
      description: 'The stack of the last attempt, for a script',
      command: "<%= config.bin %> dlq show 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d --json | jq -r '.attempts[-1].stack'",
    },
  ];
  static override args = {
    id: Args.string({description: 'task id (a lower-case UUID)', required: true, ignoreStdin: true}),
  };

  async run(): Promise<DlqShowResult> {
    const {args, flags} = await this.parse(DlqShow);
    await using admin = this.admin(flags);
    const detail = await admin.dlq.show(args.id);
    if (!this.jsonEnabled()) for (const line of render(detail)) this.log(line);
    return {
      task: taskJson(detail.task),
      attempts: detail.attempts.map((a) => ({...a, at: a.at.toISOString(), startedAt: iso(a.startedAt)})),
      history: detail.history.map(historyJson),
    };
  }
}

function render(d: DeadDetail): string[] {
  const [head, ...rest] = renderTask(d, {stacks: 'none'});
  const lines = [head ?? '', ...rest.slice(0, rest.indexOf(''))];
  lines.push('', `failed attempts (${d.attempts.length})`);
  for (const a of d.attempts) {
    lines.push(`  #${a.attempt}  ${when(a.at)}  ${a.to}  by ${a.worker ?? '-'}`);
    lines.push(...(a.error ?? '(no error recorded)').split('\n').map((l) => `    ${printable(l)}`));
    if (a.stack) lines.push(...a.stack.split('\n').map((l) => `      ${printable(l)}`));
  }
  return [...lines, ...rest.slice(rest.indexOf(''))];
}
