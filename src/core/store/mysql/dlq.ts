import type {PoolName} from '../../task/model.js';
import type {DeadErrorGroup, DeadFilter, DeadListParams, DeadTaskRow} from '../types.js';
import {type Db, select} from './db.js';

/** `%`, `_` and `\` in a LIKE operand match themselves (ESCAPE '\\'). */
export function likeLiteral(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** The WHERE of a dead-task filter (bound parameters only). */
function deadWhere(cell: string, f: DeadFilter): {sql: string; params: unknown[]} {
  const where = ['cell = ?', "state = 'dead'"];
  const params: unknown[] = [cell];
  if (f.type !== undefined) {
    where.push('type = ?');
    params.push(f.type);
  }
  if (f.since !== undefined) {
    where.push('finished_at >= ?');
    params.push(f.since);
  }
  if (f.until !== undefined) {
    where.push('finished_at < ?');
    params.push(f.until);
  }
  if (f.errorContains !== undefined) {
    where.push("last_error LIKE CONCAT('%', ?, '%') ESCAPE '\\\\'");
    params.push(likeLiteral(f.errorContains));
  }
  return {sql: where.join(' AND '), params};
}

/**
 * Dead tasks, newest death first. Params: the filter, limit, and the cursor `after` (a task id:
 * only rows before it in (finished_at, id) order; an unknown cursor selects nothing). Index:
 * idx_tasks_due (cell, state) or idx_tasks_type_state; a sort of the rows kept.
 */
export async function listDead(db: Db, cell: string, p: DeadListParams): Promise<DeadTaskRow[]> {
  const w = deadWhere(cell, p);
  const params = [...w.params];
  let cursor = '';
  if (p.after !== undefined) {
    cursor = ' AND (finished_at, id) < (SELECT c.finished_at, c.id FROM tasks c WHERE c.id = ? AND c.cell = ?)';
    params.push(p.after, cell);
  }
  params.push(p.limit);
  const rows = await select(
    db,
    db.pool,
    `SELECT id, type, pool, attempt, max_retries, created_at, finished_at, last_error FROM tasks
     WHERE ${w.sql}${cursor} ORDER BY finished_at DESC, id DESC LIMIT ?`,
    params,
  );
  return rows.map((r) => ({
    id: r.id as string,
    type: r.type as string,
    pool: r.pool as PoolName,
    attempt: Number(r.attempt),
    maxRetries: Number(r.max_retries),
    createdAt: r.created_at as Date,
    finishedAt: r.finished_at as Date,
    lastError: (r.last_error as string | null) ?? null,
  }));
}

/** Dead tasks per type × the first 1000 characters of the last error. Params: the filter. */
export async function deadErrorGroups(db: Db, cell: string, f: DeadFilter): Promise<DeadErrorGroup[]> {
  const w = deadWhere(cell, f);
  const rows = await select(
    db,
    db.pool,
    `SELECT type, LEFT(last_error, 1000) AS error, COUNT(*) AS n, MIN(finished_at) AS first_seen,
            MAX(finished_at) AS last_seen, MIN(id) AS sample_id
     FROM tasks WHERE ${w.sql} GROUP BY type, LEFT(last_error, 1000)`,
    w.params,
  );
  return rows.map((r) => ({
    type: r.type as string,
    error: (r.error as string | null) ?? null,
    count: Number(r.n),
    firstSeen: r.first_seen as Date,
    lastSeen: r.last_seen as Date,
    sampleId: r.sample_id as string,
  }));
}
