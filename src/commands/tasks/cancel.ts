import {Args, Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {invalid} from '../../core/errors.js';
import {CANCEL_BATCH} from '../../core/inspect/cancel-many.js';
import {MAX_CANCEL_REASON} from '../../core/inspect/cancel.js';
import type {TaskState} from '../../core/task/state.js';

export interface TaskCancelResult {
  id: string;
  /** The state the task was in. */
  from: TaskState;
  to: 'cancelled';
  /** A running task: the worker it ran on and the attempt stopped. */
  stopped?: {worker: string | null; attempt: number};
  /** A running task: whether its worker was told at once (else it stops the handler at its next lease renewal). */
  notified?: boolean;
  notifyError?: string;
}

/** A bulk cancel (or its --dry-run): tasks per state they were in. */
export interface TaskCancelManyResult {
  type: string;
  states: TaskState[];
  dryRun: boolean;
  /** Cancelled (with --dry-run: would be) per state. */
  tasks: Record<string, number>;
  total: number;
  notified?: boolean;
  notifyError?: string;
}

export default class TasksCancel extends AxCommand {
  static override summary = 'Cancel a task: one that has not run yet, is waiting for a retry, or is running.';
  static override description = `Submitted, failed (waiting for a retry) and running tasks can be cancelled; a cancelled task never runs again, even if its message is already queued. The reason is recorded in the task's history, and the cancel in the audit trail (ax audit list) as done by $AX_OPERATOR, else user@host.

A running task is cancelled in MySQL first: its attempt ends cancelled at once (history: "cancelled by <operator>: <reason>", with the worker it ran on), no retry follows, and whatever the worker reports later for that attempt is stale and changes nothing. Then every worker is told (a RabbitMQ control message); the one running it aborts the handler's AbortSignal, and stops a handler still running AX_CANCEL_GRACE later like a timeout (a CPU-pool thread is terminated). A worker that missed the message stops the handler at its next lease renewal (within AX_LEASE / 3). If RabbitMQ cannot be reached the cancel still stands: the output says the workers were not told.

In bulk, --type T --state submitted,failed,running cancels every task of type T in those states, in guarded batches of ${CANCEL_BATCH} (each batch one transaction, with its history rows and its own audit row); a task that moved on meanwhile is left alone. --dry-run counts what would be cancelled; otherwise --yes is required.

Exit codes: 2 malformed id, bad flag value, --reason over ${MAX_CANCEL_REASON} characters, an id mixed with --type/--state, a bulk cancel without --yes; 3 unknown id, or a filter that selects nothing; 4 the task has finished (succeeded, dead, cancelled); 5 MySQL unavailable.`;
  static override examples = [
    {description: 'Cancel a task', command: '<%= config.bin %> tasks cancel 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d'},
    {
      description: 'With a reason for the history',
      command: '<%= config.bin %> tasks cancel 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d --reason "order 42 was refunded"',
    },
    {
      description: 'Stop every running task of a type',
      command: '<%= config.bin %> tasks cancel --type report_build --state running --reason "bad release" --yes',
    },
  ];
  static override args = {
    id: Args.string({description: 'task id (a lower-case UUID); or use --type and --state', required: false, ignoreStdin: true}),
  };
  static override flags = {
    reason: Flags.string({char: 'r', description: `why, recorded in the task's history (at most ${MAX_CANCEL_REASON} characters)`}),
    type: Flags.string({char: 't', description: 'bulk: cancel the tasks of this type (with --state)'}),
    state: Flags.string({char: 's', description: 'bulk: in these states, comma-separated (submitted, failed, running)'}),
    'dry-run': Flags.boolean({description: 'bulk: count what would be cancelled, change nothing'}),
    yes: Flags.boolean({char: 'y', description: 'bulk: confirm the cancel'}),
  };

  async run(): Promise<TaskCancelResult | TaskCancelManyResult> {
    const {args, flags} = await this.parse(TasksCancel);
    const bulk = flags.type !== undefined || flags.state !== undefined;
    if (args.id !== undefined && (bulk || flags['dry-run'] || flags.yes))
      throw invalid('give a task id, or --type and --state (with --dry-run or --yes), not both');
    await using admin = this.admin(flags);
    const reason = flags.reason ?? null;
    if (args.id === undefined) {
      if (!bulk) throw invalid('give a task id, or --type and --state for a bulk cancel');
      if (!flags['dry-run'] && !flags.yes) throw invalid('a bulk cancel needs --yes (or --dry-run to count first): nothing changed');
      const planned = await admin.tasks.planCancel({type: flags.type, state: flags.state, reason, command: 'tasks cancel --type'});
      const sel = planned.selection;
      const done = flags['dry-run'] ? {tasks: planned.tasks} : await planned.run();
      const total = Object.values(done.tasks).reduce((n, c) => n + c, 0);
      if (!this.jsonEnabled()) {
        const parts = Object.entries(done.tasks).map(([s, n]) => `${n} ${s}`);
        this.log(
          `${flags['dry-run'] ? 'would cancel' : 'cancelled'} ${total} ${sel.type} task${total === 1 ? '' : 's'} (${parts.join(', ') || 'none'})`,
        );
        if ('notified' in done) this.tellNotified(done);
      }
      return {...sel, dryRun: flags['dry-run'] === true, ...done, total};
    }
    const r = await admin.tasks.cancel(args.id, {reason});
    if (!this.jsonEnabled()) {
      const where = r.stopped ? `, attempt ${r.stopped.attempt} on ${r.stopped.worker ?? 'an unknown worker'}` : '';
      this.log(`cancelled ${r.id} (was ${r.from}${where})`);
      this.tellNotified(r);
    }
    return {...r, to: 'cancelled'};
  }

  /** Says on stderr when the workers could not be told of a running task's cancel. */
  private tellNotified(r: {notified?: boolean; notifyError?: string}): void {
    if (r.notified === false)
      this.logToStderr(
        `the workers were not told (${r.notifyError ?? 'unknown error'}): the cancel stands; the worker stops the handler at its next lease renewal`,
      );
  }
}
