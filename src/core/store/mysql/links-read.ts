/** The reads of dependencies and batches: a task's links (ax tasks show, ctx.parents) and batches (ax batches). */
import type {TaskState} from '../../task/state.js';
import type {BatchInfo, TaskLinks} from '../types.js';
import {type Db, type Row, marks, select} from './db.js';
import type {ParentRow} from '../../task/links.js';
import {parseResult} from './rows.js';

const BATCH_COLUMNS = `b.id, b.callback_id, b.total, b.succeeded, b.dead, b.cancelled, b.created_at, b.done_at, t.state AS callback_state`;

function toBatch(r: Row): BatchInfo {
  return {
    id: r.id as string,
    callbackId: r.callback_id as string,
    callbackState: (r.callback_state as TaskState | null) ?? null,
    total: Number(r.total),
    succeeded: Number(r.succeeded),
    dead: Number(r.dead),
    cancelled: Number(r.cancelled),
    createdAt: r.created_at as Date,
    doneAt: (r.done_at as Date | null) ?? null,
  };
}

/** See HotPathStore.taskLinks. Index: PRIMARY of tasks, task_deps (parent, child) and idx_task_deps_child. */
export async function taskLinks(db: Db, cell: string, id: string): Promise<TaskLinks | null> {
  const [row] = await select(db, db.pool, 'SELECT state, deps_left, links, batch_id FROM tasks WHERE id = ? AND cell = ?', [id, cell]);
  if (!row) return null;
  const parents =
    (Number(row.links) & 2) === 0
      ? []
      : await select(
          db,
          db.pool,
          `SELECT d.parent AS id, d.state AS edge, d.run_on_failure, t.type, t.state FROM task_deps d LEFT JOIN tasks t ON t.id = d.parent WHERE d.child = ? ORDER BY d.parent`,
          [id],
        );
  const dependents =
    (Number(row.links) & 1) === 0
      ? []
      : await select(
          db,
          db.pool,
          `SELECT d.child AS id, t.type, t.state FROM task_deps d LEFT JOIN tasks t ON t.id = d.child WHERE d.parent = ? ORDER BY d.child`,
          [id],
        );
  const batchId = row.batch_id as string | null;
  const batch = batchId === null ? null : await batchGet(db, cell, batchId);
  const waiting = row.state === 'submitted' ? Number(row.deps_left) : 0;
  return {
    parents: parents.map((p) => ({
      id: p.id as string,
      type: (p.type as string | null) ?? 'unknown',
      state: (p.state as TaskState | null) ?? (p.edge === 'waiting' ? 'submitted' : (p.edge as TaskState)),
      edge: p.edge as TaskLinks['parents'][number]['edge'],
    })),
    dependents: dependents.map((d) => ({
      id: d.id as string,
      type: (d.type as string | null) ?? 'unknown',
      state: (d.state as TaskState | null) ?? 'cancelled',
    })),
    // A batch callback waits with deps_left 1 for its whole batch: that is not a parent.
    waitingFor: (Number(row.links) & 8) !== 0 ? 0 : waiting,
    batch,
    onParentFailure: parents.length === 0 ? null : Number(parents[0]!.run_on_failure) === 1 ? 'run' : 'cancel',
  };
}

/** See HotPathStore.batchGet. */
export async function batchGet(db: Db, cell: string, id: string): Promise<BatchInfo | null> {
  const [r] = await select(
    db,
    db.pool,
    `SELECT ${BATCH_COLUMNS} FROM task_batches b LEFT JOIN tasks t ON t.id = b.callback_id WHERE b.id = ? AND b.cell = ?`,
    [id, cell],
  );
  return r ? toBatch(r) : null;
}

/** See HotPathStore.batchesList. Index: idx_task_batches_cell (cell, created_at). */
export async function batchesList(db: Db, cell: string, limit: number): Promise<BatchInfo[]> {
  const rows = await select(
    db,
    db.pool,
    `SELECT ${BATCH_COLUMNS} FROM task_batches b LEFT JOIN tasks t ON t.id = b.callback_id WHERE b.cell = ? ORDER BY b.created_at DESC, b.id DESC LIMIT ?`,
    [cell, limit],
  );
  return rows.map(toBatch);
}

/** See HotPathStore.parentsOf: one read for a claim batch's dependents. Index: idx_task_deps_child. */
export async function parentsOf(db: Db, children: readonly string[]): Promise<ParentRow[]> {
  if (children.length === 0) return [];
  const rows = await select(
    db,
    db.pool,
    `SELECT d.child, d.parent, t.type, t.state, t.result_json FROM task_deps d JOIN tasks t ON t.id = d.parent WHERE d.child IN (${marks(children.length)})`,
    [...children],
  );
  return rows.map((r) => ({
    child: r.child as string,
    parent: r.parent as string,
    type: r.type as string,
    state: r.state as string,
    result: parseResult(r.result_json as string | null),
  }));
}
