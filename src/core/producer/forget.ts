import {errorMessage} from '../errors.js';
import type {Logger} from '../log.js';
import type {HotPathStore} from '../store/types.js';

/**
 * Undoes the published mark an INSERT wrote for new tasks (`ids`, fence 0) whose doorbell was not
 * confirmed, so the scheduler rings them at its next load: one guarded UPDATE, which leaves alone
 * the rows a worker claimed meanwhile (the publish reached the broker after all). When it fails
 * too, the rows stay marked and the reconciler rings them once the mark is older than
 * AX_REPUBLISH_AFTER. Never throws; logs what happened, with `cause` (why the publish failed).
 * Shared by the producer and the outbox relay, which both mark due tasks in their INSERT.
 */
export async function forgetUnconfirmed(
  o: {store: Pick<HotPathStore, 'doorbellsForget'>; logger: Logger},
  ids: readonly string[],
  cause: unknown,
): Promise<void> {
  if (ids.length === 0) return;
  try {
    await o.store.doorbellsForget({rung: ids.map((id) => ({id, fence: 0}))});
    o.logger.warn('tasks written but not published; the scheduler will ring for them', {tasks: ids.length, error: errorMessage(cause)});
  } catch (e) {
    o.logger.warn('tasks written but not published, and still marked published; the reconciler will ring for them', {
      tasks: ids.length,
      error: errorMessage(cause),
      forgetError: errorMessage(e),
    });
  }
}
