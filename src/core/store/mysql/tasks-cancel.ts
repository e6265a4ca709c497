/** InspectStore.tasksCancel, tasksCancelMany and tasksCancelIds on MySQL: guarded cancels with history and audit rows. */
import {endedOf, resolveEnded} from './links.js';
import {TRANSITIONS, guardOf, type TaskState} from '../../task/state.js';
import type {CancelledTask, StoppedAttempt, TasksCancelIdsParams, TasksCancelManyParams, TasksCancelParams} from '../types.js';
import {type Db, type PoolConnection, type Row, exec, marks, select, tx} from './db.js';
import {AxError} from '../../errors.js';
import {auditInsert} from './audit.js';
import {clipError, historyInsert, type HistoryRow} from './rows.js';
import {type FencedRef, MARK_LEFT_UNRUNG, guardedWhere} from './guards.js';
import {pickThenLock} from './pick-lock.js';

/**
 * See InspectStore.tasksCancelMany, read then locked (pickThenLock): the candidates, a plain read of
 * the type's rows in the states (idx_tasks_due, the type checked in the index); then per round one
 * transaction: the candidates by primary key FOR UPDATE, re-checked, guarded UPDATEs (cancel for
 * the waiting ones, cancelRunning at the fences read for the running ones; affectedRows must equal
 * the rows read, else it rolls back), one history INSERT, one audit row.
 */
export async function tasksCancelMany(db: Db, cell: string, p: TasksCancelManyParams): Promise<CancelledTask[]> {
  const cancellable = [...guardOf('cancel').from, ...guardOf('cancelRunning').from];
  const states = p.states.filter((s) => cancellable.includes(s));
  if (states.length === 0) return [];
  const match = `cell = ? AND type = ? AND state IN (${marks(states.length)})`;
  return pickThenLock(
    p.limit,
    async (want) =>
      (await select(db, db.pool, `SELECT id FROM tasks WHERE ${match} ORDER BY id LIMIT ?`, [cell, p.type, ...states, want])).map(
        (r) => r.id as string,
      ),
    (ids) => cancelLocked(db, cell, p, match, states, ids),
  );
}

/**
 * See InspectStore.tasksCancelIds: one transaction that locks the named rows still in a cancellable
 * state by primary key (the others are left alone, locked only until it ends), cancels them
 * (cancelRows) and writes one audit row when it cancelled any.
 */
export async function tasksCancelIds(db: Db, cell: string, p: TasksCancelIdsParams): Promise<CancelledTask[]> {
  const ids = [...new Set(p.ids)];
  if (ids.length === 0) return [];
  const states = [...guardOf('cancel').from, ...guardOf('cancelRunning').from];
  return lockAndCancel(db, cell, p, `id IN (${marks(ids.length)}) AND cell = ? AND state IN (${marks(states.length)})`, [
    ...ids,
    cell,
    ...states,
  ]);
}

/** One round of tasksCancelMany: the picked rows that still match, locked by primary key, cancelled. */
async function cancelLocked(
  db: Db,
  cell: string,
  p: TasksCancelManyParams,
  match: string,
  states: readonly TaskState[],
  picked: readonly string[],
): Promise<CancelledTask[]> {
  return lockAndCancel(db, cell, p, `id IN (${marks(picked.length)}) AND ${match}`, [...picked, cell, p.type, ...states]);
}

/**
 * One transaction: locks the rows `where` selects (by primary key, in id order), cancels them
 * (cancelRows) and writes one audit row naming them when it cancelled any.
 */
function lockAndCancel(
  db: Db,
  cell: string,
  p: {actor: string; reason: string | null; audit: TasksCancelIdsParams['audit']},
  where: string,
  params: unknown[],
): Promise<CancelledTask[]> {
  return tx(db, async (c) => {
    const rows = await select(
      db,
      c,
      `SELECT id, state, attempt, fence, worker, started_at, links, batch_id FROM tasks WHERE ${where} ORDER BY id FOR UPDATE`,
      params,
    );
    if (rows.length === 0) return [];
    const done = await cancelRows(db, c, cell, rows, {actor: p.actor, reason: p.reason, by: p.audit.operator});
    await auditInsert(
      db,
      c,
      cell,
      p.audit,
      done.map((d) => d.id),
    );
    return done;
  });
}

/**
 * Cancels `rows` (id, state, attempt, fence, worker, started_at; locked FOR UPDATE on `c`, each in
 * a state cancel or cancelRunning starts from): one guarded UPDATE per transition, affectedRows
 * checked (else AxError internal: the transaction rolls back), one history INSERT. A running row's
 * fence moves on (its worker's outcome becomes stale); its history row is the attempt's, like an
 * outcome's (the worker it ran on, its start), with the note `cancelled by <by>[: <reason>]`.
 */
async function cancelRows(
  db: Db,
  c: PoolConnection,
  cell: string,
  rows: readonly Row[],
  who: {actor: string; reason: string | null; by: string},
): Promise<CancelledTask[]> {
  const out: CancelledTask[] = [];
  const history: HistoryRow[] = [];
  const waiting: FencedRef[] = [];
  const running: FencedRef[] = [];
  const stoppedNote = clipError(`cancelled by ${who.by}${who.reason ? `: ${who.reason}` : ''}`);
  for (const r of rows) {
    const id = r.id as string;
    const from = r.state as TaskState;
    const attempt = Number(r.attempt);
    if (from === 'running') {
      running.push({id, fence: Number(r.fence)});
      out.push({id, from, stopped: {id, fence: Number(r.fence), attempt, worker: (r.worker as string | null) ?? null}});
      const ranOn = (r.worker as string | null) ?? who.actor;
      history.push([id, from, TRANSITIONS.cancelRunning.to, attempt, ranOn, stoppedNote, null, (r.started_at as Date | null) ?? null]);
    } else {
      waiting.push({id, fence: 0});
      out.push({id, from});
      history.push([id, from, TRANSITIONS.cancel.to, attempt, who.actor, clipError(who.reason), null]);
    }
  }
  const set = `finished_at = NOW(3), updated_at = NOW(3), lease_until = NULL`;
  for (const [t, refs, extra] of [
    ['cancel', waiting, MARK_LEFT_UNRUNG],
    ['cancelRunning', running, 'fence = fence + 1'],
  ] as const) {
    if (refs.length === 0) continue;
    const where = guardedWhere(t, refs);
    const res = await exec(db, c, `UPDATE tasks SET state = '${TRANSITIONS[t].to}', ${set}, ${extra} WHERE ${where.sql} AND cell = ?`, [
      ...where.params,
      cell,
    ]);
    if (res.affectedRows !== refs.length)
      throw new AxError('internal', `${t} changed ${res.affectedRows} rows, expected ${refs.length}: rolled back`);
  }
  const h = historyInsert(history);
  await exec(db, c, h.sql, h.params);
  // Dependents are cancelled or counted, batches counted (links.ts); what that makes due is rung by the scheduler.
  await resolveEnded(db, c, cell, endedOf(rows as Array<Row & {id: string}>, 'cancelled'), who.actor);
  return out;
}

/**
 * Cancels a submitted/failed task, and with `running` a running one (see InspectStore.tasksCancel),
 * with history, and the audit row when `audit` is given. Returns its previous state (null: unknown
 * id) and, for a running one, the attempt it stopped.
 */
export async function tasksCancel(
  db: Db,
  cell: string,
  {id, actor, reason, audit, running}: TasksCancelParams,
): Promise<{from: TaskState | null; cancelled: boolean; stopped?: StoppedAttempt}> {
  return tx(db, async (c) => {
    const rows = await select(
      db,
      c,
      'SELECT id, state, attempt, fence, worker, started_at, links, batch_id FROM tasks WHERE id = ? AND cell = ? FOR UPDATE',
      [id, cell],
    );
    const r = rows[0];
    if (!r) return {from: null, cancelled: false};
    const from = r.state as TaskState;
    const allowed = running === true && guardOf('cancelRunning').from.includes(from);
    if (!guardOf('cancel').from.includes(from) && !allowed) return {from, cancelled: false};
    const [done] = await cancelRows(db, c, cell, rows, {actor, reason, by: audit?.operator ?? actor});
    if (audit) await auditInsert(db, c, cell, audit, [id]);
    return done?.stopped ? {from, cancelled: true, stopped: done.stopped} : {from, cancelled: true};
  });
}
