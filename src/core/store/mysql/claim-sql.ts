/** The claim's locking read, shared by the claim (tasks-claim.ts) and fair dispatch (fair-claim.ts). */
import {marks} from './db.js';
import {PAYLOAD_BODY_LOCKED} from './payloads.js';

/**
 * The claim's locking read, with the stored-apart payloads of the rows (a primary-key lookup in
 * task_payloads for those only). Params: n ids, cell. Index: PRIMARY (a range of n points).
 */
export const claimSelectSql = (n: number): string =>
  `SELECT id, type, pool, task_key, priority, state, attempt, max_retries, retry_base, fence, timeout_ms, replay, payload, ${PAYLOAD_BODY_LOCKED}, parked, traceparent, tracestate, links, batch_id,
          run_at <= NOW(3) AS due,
          TIMESTAMPDIFF(MICROSECOND, run_at, NOW(3)) AS late_us
     FROM tasks WHERE id IN (${marks(n)}) AND cell = ? FOR UPDATE`;
