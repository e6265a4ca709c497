/** HotPathStore.doorbellsMark and doorbellsForget on MySQL: a rung doorbell recorded, or forgotten. */
import {guardOf} from '../../task/state.js';
import {type Db, exec, marks, tx} from './db.js';
import {type FencedRef, fenceCondition, inList, rungWhere} from './guards.js';

/** The doorbell mark (guard: rungWhere). Index: PRIMARY (a range of n points). */
export function doorbellsMarkSql(rung: readonly FencedRef[]): {sql: string; params: unknown[]} {
  const guard = rungWhere(rung);
  return {sql: `UPDATE tasks SET published_at = NOW(3), sched_owner = NULL, sched_until = NULL WHERE ${guard.sql}`, params: guard.params};
}

/** Sets published_at = NOW(3) for tasks still unclaimed at the fence they were rung for. One statement. */
export async function doorbellsMark(db: Db, rung: readonly FencedRef[]): Promise<void> {
  if (rung.length === 0) return;
  const q = doorbellsMarkSql(rung);
  // In a transaction of its own so that deadlocks with claims are retried (the update is idempotent).
  await tx(db, (c) => exec(db, c, q.sql, q.params));
}

/**
 * A doorbell that rang early (clock estimate off, or a stray publish) must not silence the task:
 * forget that it was rung so the scheduler rings again when it is due, and move the fence on so
 * that the early ring's late "published" mark (guarded by the fence it rang for) cannot land after
 * this reset. Guard: still claimable at the fence the read saw. Exported for tests.
 */
export function doorbellsForgetSql(rows: readonly FencedRef[]): {sql: string; params: unknown[]} {
  const f = fenceCondition(rows);
  return {
    sql: `UPDATE tasks SET published_at = NULL, fence = fence + 1
          WHERE id IN (${marks(rows.length)}) AND state IN (${inList(guardOf('claim').from)}) AND ${f.sql}`,
    params: [...rows.map((r) => r.id), ...f.params],
  };
}

/** See HotPathStore.doorbellsForget: doorbellsForgetSql (guard: still claimable at that fence), in a transaction of its own. */
export async function doorbellsForget(db: Db, rung: readonly FencedRef[]): Promise<void> {
  if (rung.length === 0) return;
  const q = doorbellsForgetSql(rung);
  await tx(db, (c) => exec(db, c, q.sql, q.params));
}
