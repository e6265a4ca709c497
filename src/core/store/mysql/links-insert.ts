/**
 * HotPathStore.tasksInsertLinked on MySQL: tasks with dependencies, or a batch with its callback,
 * written in one transaction with their edges (task_deps), the parents' flags and the batch row.
 */
import type {NewTask} from '../../task/model.js';
import {isTerminal, type TaskState} from '../../task/state.js';
import type {LinkedInsertResult, TasksInsertLinkedParams} from '../types.js';
import {AxError, invalid} from '../../errors.js';
import {type Db, type PoolConnection, driverCode, exec, isDataError, marks, select, tx} from './db.js';
import {insertOnce} from './tasks-insert.js';
import {packBig} from './payloads.js';
import {type DueRef, type EndedTask, LINK_CALLBACK, LINK_DEPENDENTS, LINK_MEMBER, LINK_PARENTS, resolveEnded} from './links.js';

/**
 * Writes `tasks` (and a batch: its row, members = `tasks`, and its callback) in one transaction:
 * each inserted task with `after` waits (deps_left = its parents, run_at WAITING_RUN_AT), its edges
 * are written and its parents flagged (links | LINK_DEPENDENTS); parents already ended are settled
 * at once (succeeded: counted; dead or cancelled: the child's policy). A task already stored (same
 * id or dedup key) keeps its own edges. Throws invalid_input, nothing written, when a parent is
 * neither in the batch nor stored in this cell, or a batch member was already stored. Returns the
 * insert's result and the tasks due now (inserted without parents and without a due time of their
 * own, and dependents whose parents had all succeeded already): the caller rings them.
 */
export async function tasksInsertLinked(
  db: Db,
  cell: string,
  p: TasksInsertLinkedParams,
  localNowMs: number,
  inlineBytes: number,
): Promise<LinkedInsertResult> {
  const batchId = p.batch?.id ?? null;
  const member = batchId === null ? 0 : LINK_MEMBER;
  const tasks: NewTask[] = p.tasks.map((t) => {
    const parents = t.after?.length ?? 0;
    return parents === 0 && member === 0
      ? t
      : {...t, linked: {depsLeft: parents, links: (parents > 0 ? LINK_PARENTS : 0) | member, batchId}};
  });
  if (p.batch) tasks.push({...p.batch.callback, linked: {depsLeft: 1, links: LINK_CALLBACK, batchId}});
  // A callback's payload stays inline whatever its size: its release adds the batch's counts to it.
  const packed = await packBig(
    tasks.map((t) => (t.linked?.links === LINK_CALLBACK ? '' : t.payload)),
    inlineBytes,
  );
  const bodies = new Map<NewTask, Buffer>([...packed].map(([i, body]) => [tasks[i]!, body]));
  try {
    return await tx(db, async (c) => {
      const res = await insertOnce(db, c, cell, tasks, p.actor, localNowMs, false, bodies, new Set());
      const inserted = new Set(res.inserted);
      if (p.batch && inserted.size !== tasks.length)
        throw invalid(`a batch's tasks and callback must be new: ${tasks.length - inserted.size} of them are already stored`);
      const children = tasks.filter((t) => inserted.has(t.id) && t.after !== undefined);
      const due: DueRef[] = [];
      for (const t of tasks)
        if (inserted.has(t.id) && (t.linked?.depsLeft ?? 0) === 0 && t.runAtMs === null && t.delayMs === 0)
          due.push({id: t.id, type: t.type, pool: t.pool, priority: t.priority, fence: 0});
      if (children.length > 0) due.push(...(await writeEdges(db, c, cell, children, inserted, p.actor)));
      if (p.batch) {
        await exec(db, c, 'INSERT INTO task_batches (id, cell, callback_id, total, created_at) VALUES (?, ?, ?, ?, NOW(3))', [
          p.batch.id,
          cell,
          p.batch.callback.id,
          p.tasks.length,
        ]);
      }
      return {...res, due};
    });
  } catch (e) {
    if (isDataError(e)) throw new AxError('invalid_input', `ax's database refused a task of the batch: ${String(e)}`, {cause: e});
    if (driverCode(e) === 'ER_DUP_ENTRY')
      throw new AxError('conflict', 'a task of the batch was stored concurrently: submit again', {cause: e});
    throw e;
  }
}

/**
 * The edges of `children` (inserted now), the parents' flags, and the settling of parents that
 * already ended. Parents not inserted in this transaction must be stored in this cell (locked FOR
 * UPDATE, so an outcome ending one waits for this commit and then sees its new flag).
 */
async function writeEdges(
  db: Db,
  c: PoolConnection,
  cell: string,
  children: readonly NewTask[],
  inserted: ReadonlySet<string>,
  actor: string,
): Promise<DueRef[]> {
  const parents = [...new Set(children.flatMap((t) => t.after!))].sort();
  const stored = parents.filter((id) => !inserted.has(id));
  const ended: EndedTask[] = [];
  if (stored.length > 0) {
    const rows = await select(
      db,
      c,
      `SELECT id, cell, state, links, batch_id FROM tasks WHERE id IN (${marks(stored.length)}) FOR UPDATE`,
      stored,
    );
    const found = new Map(rows.map((r) => [r.id as string, r]));
    for (const id of stored) {
      const r = found.get(id);
      if (!r) throw invalid(`after: no task ${id} in this batch or in cell ${cell}`);
      if (r.cell !== cell) throw invalid(`after: task ${id} is in cell ${String(r.cell)}, not ${cell}: dependencies stay within a cell`);
      const state = r.state as TaskState;
      if (isTerminal(state)) ended.push({id, to: state as EndedTask['to'], links: LINK_DEPENDENTS, batchId: null});
    }
  }
  const values: string[] = [];
  const params: unknown[] = [];
  for (const t of children)
    for (const parent of t.after!) {
      values.push('(?, ?, ?)');
      params.push(parent, t.id, t.onParentFailure === 'run' ? 1 : 0);
    }
  for (let i = 0; i < values.length; i += 1000)
    await exec(
      db,
      c,
      `INSERT INTO task_deps (parent, child, run_on_failure) VALUES ${values.slice(i, i + 1000).join(', ')}`,
      params.slice(i * 3, (i + 1000) * 3),
    );
  await exec(
    db,
    c,
    `UPDATE tasks SET links = links | ${LINK_DEPENDENTS} WHERE id IN (${marks(parents.length)}) AND (links & ${LINK_DEPENDENTS}) = 0`,
    parents,
  );
  // Parents that ended before: their new edges are settled now, as their outcome would have.
  return ended.length > 0 ? resolveEnded(db, c, cell, ended, actor) : [];
}
