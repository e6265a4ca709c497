import {AUDIT_MAX_IDS} from '../../audit/audit.js';
import type {AuditContext, AuditListParams, AuditRecord} from '../types.js';
import {type Conn, type Db, exec, select} from './db.js';
import {clipError} from './rows.js';

/**
 * Appends one audit row on `c`, which must be the connection of the transaction that made the
 * change, so the row commits (or rolls back) with it. Params: the context and the ids touched.
 * Ids past AUDIT_MAX_IDS are not listed (task_ids NULL), only counted.
 */
export async function auditInsert(db: Db, c: Conn, cell: string, a: AuditContext, ids: readonly string[]): Promise<void> {
  await exec(
    db,
    c,
    `INSERT INTO admin_audit (cell, at, operator, command, filter, reason, task_count, task_ids)
     VALUES (?, NOW(3), ?, ?, ?, ?, ?, ?)`,
    [
      cell,
      a.operator,
      a.command,
      JSON.stringify(a.filter),
      clipError(a.reason),
      ids.length,
      ids.length > AUDIT_MAX_IDS ? null : JSON.stringify(ids),
    ],
  );
}

/** Newest first, from `after` (exclusive) on. Params: cell, [after], limit. Index: idx_audit_cell. */
export async function auditList(db: Db, cell: string, p: AuditListParams): Promise<AuditRecord[]> {
  const params: unknown[] = [cell];
  if (p.after !== undefined) params.push(p.after);
  params.push(p.limit);
  const rows = await select(
    db,
    db.pool,
    `SELECT id, at, operator, command, filter, reason, task_count, task_ids FROM admin_audit
     WHERE cell = ?${p.after === undefined ? '' : ' AND id < ?'} ORDER BY id DESC LIMIT ?`,
    params,
  );
  return rows.map((r) => ({
    id: Number(r.id),
    at: r.at as Date,
    operator: r.operator as string,
    command: r.command as string,
    filter: JSON.parse(r.filter as string) as Record<string, unknown>,
    reason: (r.reason as string | null) ?? null,
    taskCount: Number(r.task_count),
    taskIds: r.task_ids === null ? null : (JSON.parse(r.task_ids as string) as string[]),
  }));
}
