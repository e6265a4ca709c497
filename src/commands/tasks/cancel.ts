import {Args, Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {disposable} from '../../cli/dispose.js';
import {openStore} from '../../cli/runtime.js';
import {invalid} from '../../core/errors.js';
import {cancelTask} from '../../core/inspect/inspect.js';
import {isTaskId} from '../../core/task/id.js';
import type {TaskState} from '../../core/task/state.js';

export interface TaskCancelResult {
  id: string;
  /** The state the task was in. */
  from: TaskState;
  to: 'cancelled';
}

const MAX_REASON = 1000;

export default class TasksCancel extends AxCommand {
  static override summary = 'Cancel a task that has not run yet (or is waiting for a retry).';
  static override description = `Only submitted and failed (waiting for a retry) tasks can be cancelled; a cancelled task never runs, even if its message is already queued. The reason is recorded in the task's history, and the cancel in the audit trail (ax audit list) as done by $AX_OPERATOR, else user@host.

Exit codes: 2 malformed id, 3 unknown id, 4 the task is running or finished, 5 MySQL unavailable.`;
  static override examples = [
    {description: 'Cancel a task', command: '<%= config.bin %> tasks cancel 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d'},
    {
      description: 'With a reason for the history',
      command: '<%= config.bin %> tasks cancel 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d --reason "order 42 was refunded"',
    },
  ];
  static override args = {
    id: Args.string({description: 'task id (a lower-case UUID)', required: true, ignoreStdin: true}),
  };
  static override flags = {
    reason: Flags.string({char: 'r', description: `why, recorded in the task's history (at most ${MAX_REASON} characters)`}),
  };

  async run(): Promise<TaskCancelResult> {
    const {args, flags} = await this.parse(TasksCancel);
    const rt = this.runtime(flags.config);
    if (!isTaskId(args.id)) throw invalid(`"${args.id}" is not a task id (a lower-case UUID)`);
    if (flags.reason !== undefined && flags.reason.length > MAX_REASON) throw invalid(`--reason is longer than ${MAX_REASON} characters`);
    await using store = disposable(await openStore(rt));
    const r = await cancelTask(store, args.id, rt.actor, flags.reason ?? null, rt.operator());
    if (!this.jsonEnabled()) this.log(`cancelled ${r.id} (was ${r.from})`);
    return {...r, to: 'cancelled'};
  }
}
