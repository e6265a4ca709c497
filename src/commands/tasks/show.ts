import {Args} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {historyJson, taskJson, type HistoryJson, type TaskJson} from '../../cli/render.js';
import {renderTask} from '../../cli/task-view.js';
import type {TaskLinks} from '../../core/store/types.js';

export type {HistoryJson};

export interface TaskShowResult {
  task: TaskJson;
  history: HistoryJson[];
  /** Parents, dependents, waiting count and batch (docs/workflows.md); absent for a plain task. */
  links?: TaskLinks;
}

export default class TasksShow extends AxCommand {
  static override readOnly = true;
  static override summary = 'Show one task and its history.';
  static override description = `The task row (state, attempts, due time, worker and start of the latest attempt, lease, last error, payload, the last progress its handler reported and the result of its success) and its timeline: its submit (from the task row: when, and who submitted it), then every transition with its time (UTC), the worker or process (host:pid) that made it, the attempt, and the error or reason recorded with it. Each attempt shows as its start (running, on the worker it ran on) and its end, both from its one history row (the attempt running now: from the task row). --json prints the whole payload; the human view cuts it short.

A task no longer in the live tables but in the archive (AX_ARCHIVE_DIR) is named as archived, with the \`ax archive show\` that shows it (still exit 3).

Exit codes: 2 malformed id, 3 unknown or archived id, 5 MySQL unavailable.`;
  static override examples = [
    {description: 'Why did this task die?', command: '<%= config.bin %> tasks show 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d'},
    {description: 'Everything, for a script', command: '<%= config.bin %> tasks show 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d --json'},
  ];
  static override args = {
    id: Args.string({description: 'task id (a lower-case UUID, as printed by `ax submit`)', required: true, ignoreStdin: true}),
  };

  async run(): Promise<TaskShowResult> {
    const {args, flags} = await this.parse(TasksShow);
    await using admin = this.admin(flags);
    const detail = await admin.tasks.show(args.id);
    if (!this.jsonEnabled()) for (const line of renderTask(detail)) this.log(line);
    const out: TaskShowResult = {task: taskJson(detail.task), history: detail.history.map(historyJson)};
    if (detail.links) out.links = detail.links;
    return out;
  }
}
