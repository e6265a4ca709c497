/** The claim's statements, shared by the claim (tasks-claim.ts), its fast path (claim-fast.ts) and fair dispatch (fair-claim.ts). */
import {TRANSITIONS} from '../../task/state.js';
import {marks} from './db.js';
import {type FencedRef, MARK_LEFT_UNRUNG, guardedWhere} from './guards.js';
import {PAYLOAD_BODY_LOCKED} from './payloads.js';

/** The columns a claim reads of each row, with `extra` (the stored-apart body, or nothing). */
const claimColumns = (extra: string): string =>
  `id, type, pool, task_key, priority, state, attempt, max_retries, retry_base, fence, timeout_ms, replay, payload, ${extra}parked, traceparent, tracestate, links, batch_id,
          run_at <= NOW(3) AS due,
          TIMESTAMPDIFF(MICROSECOND, run_at, NOW(3)) AS late_us`;

/**
 * The claim's locking read, with the stored-apart payloads of the rows (a primary-key lookup in
 * task_payloads for those only). Params: n ids, cell. Index: PRIMARY (a range of n points).
 */
export const claimSelectSql = (n: number): string =>
  `SELECT ${claimColumns(`${PAYLOAD_BODY_LOCKED}, `)} FROM tasks WHERE id IN (${marks(n)}) AND cell = ? FOR UPDATE`;

/** The fast claim's plain read (params: n ids, cell): claimSelectSql's columns but the stored-apart body, which takes the full claim. */
export const claimReadSql = (n: number): string => `SELECT ${claimColumns('')} FROM tasks WHERE id IN (${marks(n)}) AND cell = ?`;

/**
 * The claim's UPDATE over the rows its read found claimable, each at the fence the read saw
 * (`fence` of `rows` is the fence before the claim). Guard from the table: source states, that
 * fence, and run_at due. It records the attempt's start on the row (worker, started_at): no
 * history row is written for a claim; the attempt's outcome row copies them. Exported for tests.
 */
export function claimUpdateSql(rows: readonly FencedRef[], worker: string, leaseMs: number): {sql: string; params: unknown[]} {
  const where = guardedWhere('claim', rows);
  return {
    sql: `UPDATE tasks SET state = '${TRANSITIONS.claim.to}', attempt = attempt + 1, fence = fence + 1, worker = ?, started_at = NOW(3),
                lease_until = NOW(3) + INTERVAL ? MICROSECOND, updated_at = NOW(3), parked = NULL, parked_at = NULL, ${MARK_LEFT_UNRUNG}
          WHERE ${where.sql}`,
    params: [worker, leaseMs * 1000, ...where.params],
  };
}

/**
 * The fast claim's UPDATE (claim-fast.ts): claimUpdateSql plus the flow step's pause and breaker
 * decision as a condition on the type's registry row, read with a shared lock by the subquery
 * (REPEATABLE READ). A type without a row runs. Index: PRIMARY of tasks (a range of points), and
 * per row PRIMARY (cell, type) of task_types.
 */
export function claimFastUpdateSql(
  rows: readonly FencedRef[],
  worker: string,
  leaseMs: number,
  cell: string,
): {sql: string; params: unknown[]} {
  const q = claimUpdateSql(rows, worker, leaseMs);
  return {
    sql: `${q.sql} AND NOT EXISTS (SELECT 1 FROM task_types y WHERE y.cell = ? AND y.type = tasks.type AND (y.paused = 1 OR y.breaker_state <> 'closed'))`,
    params: [...q.params, cell],
  };
}
