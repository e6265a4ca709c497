/** `ax errors`: failed attempts of a time window per type × error, from task_history. */
import type {DeadErrorGroup, FailureFilter} from '../types.js';
import {type Db, select} from './db.js';
import {toErrorGroup} from './rows.js';
import {Where} from './where.js';

/**
 * The failure-groups statement and its parameters. A range of idx_history_failures (to_state, at)
 * over the window's failed and dead transitions, each joined to its task by primary key (for the
 * cell and type); a temporary table for the GROUP BY of the rows kept. `from_state = 'running'`
 * keeps the attempts' ends (a replay or cancel row is no failure).
 */
export function failureGroupsSql(cell: string, f: FailureFilter): {sql: string; params: unknown[]} {
  const where = new Where()
    .and(f.deadOnly ? "h.to_state = 'dead'" : "h.to_state IN ('failed', 'dead')")
    .and('h.at >= ?', f.since)
    .if(f.until !== undefined, 'h.at < ?', f.until)
    .and("h.from_state = 'running'")
    .and('t.cell = ?', cell)
    .if(f.type !== undefined, 't.type = ?', f.type);
  return {
    sql: `SELECT t.type, LEFT(h.error, 1000) AS error, COUNT(*) AS n, MIN(h.at) AS first_seen, MAX(h.at) AS last_seen,
            MIN(h.task_id) AS sample_id
     FROM task_history h JOIN tasks t ON t.id = h.task_id
     WHERE ${where.sql} GROUP BY t.type, LEFT(h.error, 1000)`,
    params: where.params,
  };
}

/** See InspectStore.failureGroups. */
export async function failureGroups(db: Db, cell: string, f: FailureFilter): Promise<DeadErrorGroup[]> {
  const q = failureGroupsSql(cell, f);
  const rows = await select(db, db.pool, q.sql, q.params);
  return rows.map(toErrorGroup);
}
