/**
 * Cancelling a task, including a running one (`ax tasks cancel <id>`, the SDK's cancel).
 *
 * How a running attempt is stopped, cluster-wide (the worker running it may be any process):
 * 1. MySQL first, the truth: one transaction locks the row, moves it running → cancelled
 *    (transition cancelRunning, guarded by the fence it read, and the fence moves on), and writes
 *    the attempt's history row (`cancelled by <operator>: <reason>`) and the audit row. From the
 *    commit on, the worker's outcome for that attempt is stale (its fence is old) and changes
 *    nothing, its lease renewals no longer match, and no retry can follow: the task is finished.
 * 2. Then a control message (Broker.publishControl: a fanout exchange each worker consumes on a
 *    queue of its own) names the attempt (id and the fence it held); the worker holding it stops
 *    it (core/worker/cancel.ts): the IO pool aborts the handler's AbortSignal, the CPU pool asks
 *    the thread's handler to stop the same way; a handler still running after the worker's grace
 *    period (AX_CANCEL_GRACE) is stopped like a timeout (IO: its slot freed; CPU: thread terminated).
 * 3. Fallback: a lost message (RabbitMQ down, a worker reconnecting) costs only promptness. The
 *    worker's next lease renewal (every AX_LEASE / 3) finds the row no longer its own and aborts
 *    the handler then.
 * A failed publish is reported (`notified: false`), never an error: the cancel has committed.
 */
import type {ControlMessage} from '../broker/types.js';
import {MAX_CONTROL_TASKS} from '../broker/types.js';
import {AxError, errorMessage, invalid} from '../errors.js';
import type {InspectStore, StoppedAttempt} from '../store/types.js';
import {isTaskId} from '../task/id.js';
import type {TaskState} from '../task/state.js';

/** Longest cancel reason (characters): recorded in the history and the audit trail. */
export const MAX_CANCEL_REASON = 1000;

/** Where a cancel tells the workers: the broker's control messages (see the module comment). */
export interface CancelNotifier {
  publishControl(m: ControlMessage): Promise<void>;
}

/** Throws invalid_input for a reason over MAX_CANCEL_REASON characters. */
export function checkCancelReason(reason: string | null): void {
  if (reason !== null && reason.length > MAX_CANCEL_REASON) throw invalid(`--reason is longer than ${MAX_CANCEL_REASON} characters`);
}

/** The outcome of a cancel: the state the task was in, and for a running one where it ran and whether its worker was told. */
export interface CancelResult {
  id: string;
  from: TaskState;
  /** A running task: the worker it ran on (host:pid) and the attempt stopped. */
  stopped?: {worker: string | null; attempt: number};
  /**
   * A running task: true when the control message went out; false when it could not be sent (the
   * worker stops the handler at its next lease renewal instead; `notifyError` says why).
   */
  notified?: boolean;
  notifyError?: string;
}

/**
 * Cancels a submitted, failed or running task (see the module comment); a cancelled task never
 * runs again (a worker's claim refuses it, its late outcome is stale). With `operator`, the cancel
 * is audited (command `tasks cancel`, in the same transaction). Throws invalid_input for a malformed
 * id or a reason over MAX_CANCEL_REASON, not_found for an unknown id and conflict when the task has
 * finished (succeeded, dead, cancelled); nothing is written then, not even the audit row.
 */
export async function cancelTask(
  store: Pick<InspectStore, 'tasksCancel'>,
  id: string,
  actor: string,
  reason: string | null,
  operator?: string,
  notifier?: CancelNotifier,
): Promise<CancelResult> {
  if (!isTaskId(id)) throw invalid(`"${id}" is not a task id (a lower-case UUID)`);
  checkCancelReason(reason);
  const audit = operator === undefined ? undefined : {operator, command: 'tasks cancel', filter: {ids: [id]}, reason};
  const r = await store.tasksCancel({id, actor, reason, running: true, ...(audit ? {audit} : {})});
  if (r.from === null) throw new AxError('not_found', `task ${id} does not exist`);
  if (!r.cancelled)
    throw new AxError('conflict', `task ${id} is ${r.from}: it has finished; only submitted, failed or running tasks can be cancelled`);
  if (!r.stopped) return {id, from: r.from};
  const stopped = {worker: r.stopped.worker, attempt: r.stopped.attempt};
  if (!notifier) return {id, from: r.from, stopped, notified: false, notifyError: 'no broker to tell the workers'};
  const sent = await tellWorkers(notifier, [r.stopped], operator ?? actor, reason);
  return {id, from: r.from, stopped, ...sent};
}

/**
 * Sends the cancel of `stopped` attempts to the workers (control messages of at most
 * MAX_CONTROL_TASKS attempts each). Never throws: a failure is returned (the lease renewal is the
 * fallback).
 */
export async function tellWorkers(
  notifier: CancelNotifier,
  stopped: readonly StoppedAttempt[],
  by: string,
  reason: string | null,
): Promise<{notified: boolean; notifyError?: string}> {
  try {
    for (let i = 0; i < stopped.length; i += MAX_CONTROL_TASKS) {
      const tasks = stopped.slice(i, i + MAX_CONTROL_TASKS).map((s) => ({id: s.id, fence: s.fence}));
      await notifier.publishControl({kind: 'cancel', tasks, by, reason});
    }
    return {notified: true};
  } catch (e) {
    return {notified: false, notifyError: errorMessage(e)};
  }
}
