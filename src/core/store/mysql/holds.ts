/** DispatchHoldStore on MySQL: the scheduler's holds of delayed tasks and retries (holdsTake, holdsRelease). */
import {guardOf} from '../../task/state.js';
import type {HeldForDispatch, HoldsTakeParams} from '../types.js';
import {type Db, exec, select, tx} from './db.js';
import {toDueTask} from './rows.js';
import {inList} from './guards.js';

/**
 * Grace for brand-new immediate tasks written unpublished: their writer may be about to publish
 * them (the relay rings a task that fell due while its batch was written right after the commit). A row whose fence moved (a doorbell forgotten after a failed publish, an
 * early ring reset) has no writer about to ring it and is taken at once.
 */
const PRODUCER_GRACE_US = 2_000_000;

/** The scheduler's hold of due-soon unrung rows (see holdsTake). Exported for the plan test. */
export function holdsTakeSql(cell: string, {owner, horizonMs, holdMs, limit}: HoldsTakeParams): {sql: string; params: unknown[]} {
  return {
    // Forced: idx_tasks_due (state, run_at) looks as good to the optimizer, but its range holds
    // the rung, unclaimed backlog too, and this UPDATE locks every entry it reads.
    sql: `UPDATE tasks FORCE INDEX (idx_tasks_dispatch) SET sched_owner = ?, sched_until = GREATEST(run_at, NOW(3)) + INTERVAL ? MICROSECOND
      WHERE cell = ? AND published_at IS NULL AND state IN (${inList(guardOf('claim').from)}) AND run_at <= NOW(3) + INTERVAL ? MICROSECOND
        AND (sched_owner IS NULL OR sched_owner = ? OR sched_until < NOW(3))
        AND (state = 'failed' OR fence > 0 OR run_at > created_at OR created_at < NOW(3) - INTERVAL ${PRODUCER_GRACE_US} MICROSECOND)
      ORDER BY run_at LIMIT ?`,
    params: [owner, holdMs * 1000, cell, horizonMs * 1000, owner, limit],
  };
}

/**
 * See DispatchHoldStore.holdsTake. Two statements: one guarded UPDATE … ORDER BY run_at LIMIT n
 * (idx_tasks_dispatch (cell, published_at, run_at): the unrung rows, claimable only, see
 * MARK_LEFT_UNRUNG) and a read of the holds.
 */
export async function holdsTake(db: Db, cell: string, {owner, horizonMs, holdMs, limit}: HoldsTakeParams): Promise<HeldForDispatch[]> {
  const q = holdsTakeSql(cell, {owner, horizonMs, holdMs, limit});
  // Deadlocks with claims and outcomes are retried by tx().
  await tx(db, (c) => exec(db, c, q.sql, q.params));
  const rows = await select(
    db,
    db.pool,
    `SELECT id, type, pool, priority, run_at, schedule_name, attempt, fence, dedup_key FROM tasks
      WHERE cell = ? AND sched_owner = ? AND published_at IS NULL AND state IN ('submitted', 'failed') ORDER BY run_at`,
    [cell, owner],
  );
  return rows.map(toDueTask);
}

export async function holdsRelease(db: Db, cell: string, owner: string): Promise<number> {
  const r = await exec(db, db.pool, 'UPDATE tasks SET sched_owner = NULL, sched_until = NULL WHERE cell = ? AND sched_owner = ?', [
    cell,
    owner,
  ]);
  return r.affectedRows;
}
