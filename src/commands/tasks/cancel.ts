import {Args, Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {disposable} from '../../cli/dispose.js';
import {openStore} from '../../cli/runtime.js';
import {invalid} from '../../core/errors.js';
import {CANCEL_BATCH, parseCancelMany, planCancelMany, runCancelMany} from '../../core/inspect/cancel-many.js';
import {cancelTask} from '../../core/inspect/inspect.js';
import {isTaskId} from '../../core/task/id.js';
import type {TaskState} from '../../core/task/state.js';

export interface TaskCancelResult {
  id: string;
  /** The state the task was in. */
  from: TaskState;
  to: 'cancelled';
}

/** A bulk cancel (or its --dry-run): tasks per state they were in. */
export interface TaskCancelManyResult {
  type: string;
  states: TaskState[];
  dryRun: boolean;
  /** Cancelled (with --dry-run: would be) per state. */
  tasks: Record<string, number>;
  total: number;
}

const MAX_REASON = 1000;

export default class TasksCancel extends AxCommand {
  static override summary = 'Cancel a task that has not run yet (or is waiting for a retry).';
  static override description = `Only submitted and failed (waiting for a retry) tasks can be cancelled; a cancelled task never runs, even if its message is already queued. The reason is recorded in the task's history, and the cancel in the audit trail (ax audit list) as done by $AX_OPERATOR, else user@host.

In bulk, --type T --state submitted,failed cancels every task of type T in those states, in guarded batches of ${CANCEL_BATCH} (each batch one transaction, with its history rows and its own audit row); a task claimed meanwhile is left alone. --dry-run counts what would be cancelled; otherwise --yes is required.

Exit codes: 2 malformed id, bad flag value, an id mixed with --type/--state, a bulk cancel without --yes; 3 unknown id, or a filter that selects nothing; 4 the task is running or finished; 5 MySQL unavailable.`;
  static override examples = [
    {description: 'Cancel a task', command: '<%= config.bin %> tasks cancel 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d'},
    {
      description: 'With a reason for the history',
      command: '<%= config.bin %> tasks cancel 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d --reason "order 42 was refunded"',
    },
  ];
  static override args = {
    id: Args.string({description: 'task id (a lower-case UUID); or use --type and --state', required: false, ignoreStdin: true}),
  };
  static override flags = {
    reason: Flags.string({char: 'r', description: `why, recorded in the task's history (at most ${MAX_REASON} characters)`}),
    type: Flags.string({char: 't', description: 'bulk: cancel the tasks of this type (with --state)'}),
    state: Flags.string({char: 's', description: 'bulk: in these states, comma-separated (submitted, failed)'}),
    'dry-run': Flags.boolean({description: 'bulk: count what would be cancelled, change nothing'}),
    yes: Flags.boolean({char: 'y', description: 'bulk: confirm the cancel'}),
  };

  async run(): Promise<TaskCancelResult | TaskCancelManyResult> {
    const {args, flags} = await this.parse(TasksCancel);
    const rt = this.runtime(flags);
    if (flags.reason !== undefined && flags.reason.length > MAX_REASON) throw invalid(`--reason is longer than ${MAX_REASON} characters`);
    const bulk = flags.type !== undefined || flags.state !== undefined;
    if (args.id !== undefined && (bulk || flags['dry-run'] || flags.yes))
      throw invalid('give a task id, or --type and --state (with --dry-run or --yes), not both');
    if (args.id === undefined) {
      if (!bulk) throw invalid('give a task id, or --type and --state for a bulk cancel');
      const sel = parseCancelMany(flags);
      if (!flags['dry-run'] && !flags.yes) throw invalid('a bulk cancel needs --yes (or --dry-run to count first): nothing changed');
      const operator = rt.operator();
      await using store = disposable(await openStore(rt));
      const planned = await planCancelMany(store, sel);
      const tasks = flags['dry-run']
        ? planned
        : await runCancelMany(store, sel, {actor: rt.actor, operator, reason: flags.reason ?? null, command: 'tasks cancel --type'});
      const total = Object.values(tasks).reduce((n, c) => n + c, 0);
      if (!this.jsonEnabled()) {
        const parts = Object.entries(tasks).map(([s, n]) => `${n} ${s}`);
        this.log(
          `${flags['dry-run'] ? 'would cancel' : 'cancelled'} ${total} ${sel.type} task${total === 1 ? '' : 's'} (${parts.join(', ') || 'none'})`,
        );
      }
      return {...sel, dryRun: flags['dry-run'] === true, tasks, total};
    }
    if (!isTaskId(args.id)) throw invalid(`"${args.id}" is not a task id (a lower-case UUID)`);
    await using store = disposable(await openStore(rt));
    const r = await cancelTask(store, args.id, rt.actor, flags.reason ?? null, rt.operator());
    if (!this.jsonEnabled()) this.log(`cancelled ${r.id} (was ${r.from})`);
    return {...r, to: 'cancelled'};
  }
}
