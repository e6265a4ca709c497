/** `ax errors`: failed attempts of a time window per type × error, from task_history. */
import type {DeadErrorGroup, FailureFilter} from '../types.js';
import {type Db, select} from './db.js';
import {toErrorGroup} from './rows.js';

/**
 * The failure-groups statement and its parameters. A range of idx_history_failures (to_state, at)
 * over the window's failed and dead transitions, each joined to its task by primary key (for the
 * cell and type); a temporary table for the GROUP BY of the rows kept. `from_state = 'running'`
 * keeps the attempts' ends (a replay or cancel row is no failure).
 */
export function failureGroupsSql(cell: string, f: FailureFilter): {sql: string; params: unknown[]} {
  const where = [f.deadOnly ? "h.to_state = 'dead'" : "h.to_state IN ('failed', 'dead')", 'h.at >= ?'];
  const params: unknown[] = [f.since];
  if (f.until !== undefined) {
    where.push('h.at < ?');
    params.push(f.until);
  }
  where.push("h.from_state = 'running'", 't.cell = ?');
  params.push(cell);
  if (f.type !== undefined) {
    where.push('t.type = ?');
    params.push(f.type);
  }
  return {
    sql: `SELECT t.type, LEFT(h.error, 1000) AS error, COUNT(*) AS n, MIN(h.at) AS first_seen, MAX(h.at) AS last_seen,
            MIN(h.task_id) AS sample_id
     FROM task_history h JOIN tasks t ON t.id = h.task_id
     WHERE ${where.join(' AND ')} GROUP BY t.type, LEFT(h.error, 1000)`,
    params,
  };
}

/** See InspectStore.failureGroups. */
export async function failureGroups(db: Db, cell: string, f: FailureFilter): Promise<DeadErrorGroup[]> {
  const q = failureGroupsSql(cell, f);
  const rows = await select(db, db.pool, q.sql, q.params);
  return rows.map(toErrorGroup);
}
