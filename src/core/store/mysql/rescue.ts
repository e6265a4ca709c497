/** RescueStore on MySQL: expired leases, and due tasks whose doorbell never rang or went unanswered. */
import type {ExpiredLease, HeldForDispatch, LeasesFindExpiredParams, TasksFindUndispatchedParams} from '../types.js';
import {type Db, select} from './db.js';
import {toDueTask} from './rows.js';

/** The rescuer's and the reconciler's reads (checked by explain.test.ts through HOT_SQL, hot-sql.ts). */
export const RESCUE_SQL = {
  /** Params: cell, limit. Index: idx_tasks_due (cell, state, …): running rows are few. */
  expiredLeases: `SELECT id, fence, attempt, max_retries, retry_base, worker FROM tasks
      WHERE cell = ? AND state = 'running' AND lease_until < NOW(3) ORDER BY lease_until LIMIT ?`,
  /**
   * Params: cell, republishAfter µs, limit. Index: idx_tasks_due (cell, state, run_at), forced:
   * idx_tasks_dispatch's range for "rung before" would hold every finished row.
   */
  undispatched: `SELECT id, type, pool, priority, run_at, schedule_name, attempt, fence, dedup_key FROM tasks FORCE INDEX (idx_tasks_due)
      WHERE cell = ? AND state IN ('submitted', 'failed') AND run_at <= NOW(3)
        AND (published_at IS NULL OR published_at < NOW(3) - INTERVAL ? MICROSECOND)
      ORDER BY run_at LIMIT ?`,
};

/** Running rows whose lease is before NOW(3), oldest lease first (idx_tasks_due: the running entries). */
export async function leasesFindExpired(db: Db, cell: string, {limit}: LeasesFindExpiredParams): Promise<ExpiredLease[]> {
  const rows = await select(db, db.pool, RESCUE_SQL.expiredLeases, [cell, limit]);
  return rows.map((r) => ({
    id: r.id as string,
    fence: Number(r.fence),
    attempt: Number(r.attempt),
    maxRetries: Number(r.max_retries),
    retryBase: Number(r.retry_base),
    worker: (r.worker as string | null) ?? null,
  }));
}

/**
 * Due submitted/failed rows never rung since they became due, or rung `republishAfterMs` ago and
 * still unclaimed; one range scan of idx_tasks_due per state, oldest due first.
 */
export async function tasksFindUndispatched(
  db: Db,
  cell: string,
  {limit, republishAfterMs}: TasksFindUndispatchedParams,
): Promise<HeldForDispatch[]> {
  const rows = await select(db, db.pool, RESCUE_SQL.undispatched, [cell, republishAfterMs * 1000, limit]);
  return rows.map(toDueTask);
}
