/**
 * Bulk cancel (`ax tasks cancel --type T --state submitted,failed,running`): every task of a type
 * in the given states, in guarded batches of CANCEL_BATCH, each batch one transaction with its
 * history rows and its audit row; the running attempts of each batch are then announced to the
 * workers like a single cancel's (see cancel.ts). Inputs are validated and the selection counted
 * before anything changes.
 */
import {AxError, invalid} from '../errors.js';
import type {InspectStore, StoppedAttempt} from '../store/types.js';
import {TASK_STATES, guardOf, isTaskState, type TaskState} from '../task/state.js';
import {validateTypeName} from '../task/validate.js';
import {type CancelNotifier, checkCancelReason, tellWorkers} from './cancel.js';

/** The states a cancel can start from: waiting (cancel) and running (cancelRunning). */
const CANCELLABLE: readonly TaskState[] = [...guardOf('cancel').from, ...guardOf('cancelRunning').from];

export const CANCEL_BATCH = 500;

export interface CancelManySelection {
  type: string;
  states: TaskState[];
}

/**
 * Validates `--type` (required, domain_action) and `--state` (comma-separated, each a state that
 * can be cancelled: submitted, failed, running). Throws invalid_input naming the flag.
 */
export function parseCancelMany(input: {type?: string | undefined; state?: string | undefined}): CancelManySelection {
  if (input.type === undefined) throw invalid('a bulk cancel needs --type (and --state)');
  const type = validateTypeName(input.type);
  if (input.state === undefined) throw invalid(`a bulk cancel needs --state: ${CANCELLABLE.join(', ')}, comma-separated`);
  const states: TaskState[] = [];
  for (const raw of input.state.split(',')) {
    const s = raw.trim();
    if (!isTaskState(s)) throw invalid(`state "${s}" is not one of ${TASK_STATES.join(', ')}`);
    if (!CANCELLABLE.includes(s)) throw invalid(`state "${s}": only ${CANCELLABLE.join(', ')} tasks can be cancelled`);
    if (!states.includes(s)) states.push(s);
  }
  return {type, states};
}

/** What a bulk cancel would take: tasks per state now. Throws not_found when it selects nothing. */
export async function planCancelMany(store: Pick<InspectStore, 'tasksStats'>, sel: CancelManySelection): Promise<Record<string, number>> {
  const perState: Record<string, number> = {};
  for (const r of await store.tasksStats())
    if (r.type === sel.type && sel.states.includes(r.state)) perState[r.state] = (perState[r.state] ?? 0) + r.count;
  if (Object.values(perState).reduce((n, c) => n + c, 0) === 0)
    throw new AxError('not_found', `no task of type ${sel.type} is ${sel.states.join(' or ')}: nothing to cancel`);
  return perState;
}

/** What a bulk cancel did: tasks per state they were in; with running ones, whether the workers were told. */
export interface CancelManyResult {
  tasks: Record<string, number>;
  /** Running tasks cancelled: false when a control message could not be sent (lease renewal stops them instead). */
  notified?: boolean;
  notifyError?: string;
}

/**
 * Cancels the selection in batches (each audited as `command` by `operator`) until a batch comes
 * back short; tasks that moved on meanwhile (claimed, finished, cancelled by someone else) are not
 * touched. The running attempts of each batch are announced to the workers through `notifier`
 * after its commit. Throws invalid_input for a reason over MAX_CANCEL_REASON, before anything changes.
 */
export async function runCancelMany(
  store: Pick<InspectStore, 'tasksCancelMany'>,
  sel: CancelManySelection,
  o: {actor: string; operator: string; reason: string | null; command: string; notifier?: CancelNotifier},
): Promise<CancelManyResult> {
  checkCancelReason(o.reason);
  const perState: Record<string, number> = {};
  const out: CancelManyResult = {tasks: perState};
  const audit = {operator: o.operator, command: o.command, filter: {type: sel.type, states: sel.states}, reason: o.reason};
  for (;;) {
    const done = await store.tasksCancelMany({...sel, limit: CANCEL_BATCH, actor: o.actor, reason: o.reason, audit});
    const stopped: StoppedAttempt[] = [];
    for (const d of done) {
      perState[d.from] = (perState[d.from] ?? 0) + 1;
      if (d.stopped) stopped.push(d.stopped);
    }
    if (stopped.length > 0) {
      const sent = o.notifier
        ? await tellWorkers(o.notifier, stopped, o.operator, o.reason)
        : {notified: false, notifyError: 'no broker to tell the workers'};
      if (out.notified !== false) Object.assign(out, sent);
    }
    if (done.length < CANCEL_BATCH) return out;
  }
}
