/**
 * Results and progress on MySQL (HotPathStore.progressWrite, resultsOf; migration 21). A result is
 * written by the complete outcome itself (outcomes.ts); progress by the worker's progress writer
 * (core/worker/progress.ts), one fenced UPDATE per flush.
 */
import type {TaskState} from '../../task/state.js';
import type {ProgressRow, StoredResult} from '../types.js';
import {type Db, exec, marks, select} from './db.js';
import {fenceCondition} from './guards.js';
import {caseById, parseResult} from './rows.js';

/** Ids per statement of resultsOf. */
const CHUNK = 1000;

/** See HotPathStore.progressWrite: one UPDATE, guarded by state running and each row's fence. */
export async function progressWrite(db: Db, cell: string, rows: readonly ProgressRow[]): Promise<number> {
  if (rows.length === 0) return 0;
  const latest = [...new Map(rows.map((r) => [r.id, r])).values()];
  const percent = caseById(
    latest.map((r) => [r.id, r.percent]),
    'progress',
  );
  const note = caseById(
    latest.map((r) => [r.id, r.note]),
    'progress_note',
  );
  const fence = fenceCondition(latest);
  const res = await exec(
    db,
    db.pool,
    `UPDATE tasks SET progress = ${percent.sql}, progress_note = ${note.sql}, progress_at = NOW(3)
      WHERE id IN (${marks(latest.length)}) AND cell = ? AND state = 'running' AND ${fence.sql}`,
    [...percent.params, ...note.params, ...latest.map((r) => r.id), cell, ...fence.params],
  );
  return res.affectedRows;
}

/** See HotPathStore.resultsOf: one primary-key read per CHUNK ids. */
export async function resultsOf(db: Db, cell: string, ids: readonly string[]): Promise<Map<string, StoredResult>> {
  const unique = [...new Set(ids)];
  const out = new Map<string, StoredResult>();
  for (let i = 0; i < unique.length; i += CHUNK) {
    const part = unique.slice(i, i + CHUNK);
    const rows = await select(
      db,
      db.pool,
      `SELECT id, state, type, result_json FROM tasks WHERE id IN (${marks(part.length)}) AND cell = ?`,
      [...part, cell],
    );
    for (const r of rows)
      out.set(r.id as string, {state: r.state as TaskState, type: r.type as string, result: parseResult(r.result_json as string | null)});
  }
  return out;
}
