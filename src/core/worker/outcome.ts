import {type BackoffOptions, nextAfterFailure, retryDelayMs} from '../retry/backoff.js';
import type {Outcome} from '../store/types.js';
import type {PoolName} from '../task/model.js';
import type {Random} from '../time.js';
import type {JobResult} from './pool.js';

/** A task handed back without being run; `pool` re-routes it to another pool's queue. */
export interface NotStarted {
  kind: 'notStarted';
  message: string;
  pool?: PoolName;
}

/** What the worker knows about a task it holds. */
export interface Held {
  id: string;
  fence: number;
  attempt: number;
  maxRetries: number;
  /** Attempts used before the latest DLQ replay (see ClaimedTask.retryBase). */
  retryBase: number;
}

/**
 * Turns the result of one attempt into the outcome to write: success → complete (with its result's
 * JSON text, if any); failure or
 * timeout → fail with jittered backoff, or deadLetter once attempts exceed maxRetries or the
 * handler said unrecoverable (with the error's stack when there was one); `notStarted` → release
 * (no attempt used, due again now).
 */
export function decideOutcome(t: Held, r: JobResult | NotStarted, backoff: BackoffOptions, random: Random): Outcome {
  switch (r.kind) {
    case 'success':
      return r.resultJson === undefined
        ? {kind: 'complete', id: t.id, fence: t.fence, breaker: 'ok'}
        : {kind: 'complete', id: t.id, fence: t.fence, breaker: 'ok', result: r.resultJson};
    case 'notStarted':
      return {kind: 'release', id: t.id, fence: t.fence, reason: `released: ${r.message}`, ...(r.pool === undefined ? {} : {pool: r.pool})};
    case 'fail':
    case 'timeout':
    case 'aborted': {
      const unrecoverable = r.kind === 'fail' && r.unrecoverable;
      // A replayed task has its whole budget again and its backoff restarts: count from its replay.
      const used = t.attempt - t.retryBase;
      const to = nextAfterFailure(used, t.maxRetries, unrecoverable);
      const prefix = r.kind === 'fail' ? '' : `${r.kind}: `;
      const why =
        to === 'dead' && !unrecoverable
          ? ` (attempt ${used} of ${t.maxRetries + 1}${t.retryBase > 0 ? ' since its replay' : ''}, no retries left)`
          : '';
      const stack = r.kind === 'fail' ? (r.stack ?? null) : null;
      // The breaker counts the downstream's failures: timeouts yes; bad payloads and aborts (shutdown, lost lease) no.
      const counted = unrecoverable || r.kind === 'aborted' ? {} : {breaker: 'failed' as const};
      return to === 'dead'
        ? {kind: 'deadLetter', id: t.id, fence: t.fence, error: `${prefix}${r.message}${why}`, stack, ...counted}
        : {
            kind: 'fail',
            id: t.id,
            fence: t.fence,
            error: `${prefix}${r.message}`,
            stack,
            retryDelayMs: retryDelayMs(used, backoff, random),
            ...counted,
          };
    }
  }
}
