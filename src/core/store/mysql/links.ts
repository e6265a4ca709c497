/**
 * Dependencies and batches (docs/workflows.md) in the transactions that end tasks: when a task with
 * link flags (tasks.links, read by the claim or the locking read of the ending path) ends, its
 * dependents and its batch are updated by guarded UPDATEs in the same transaction, batched over
 * every task the transaction ended. Tasks without flags cost nothing: callers pass only flagged rows.
 */
import {TRANSITIONS, guardOf} from '../../task/state.js';
import type {PoolName, Priority} from '../../task/model.js';
import {AxError} from '../../errors.js';
import {type Db, type PoolConnection, type Row, exec, marks, select} from './db.js';
import {MARK_LEFT_UNRUNG, inList} from './guards.js';
import {caseById, clipError, historyInsert, type HistoryRow} from './rows.js';

import {LINK_DEPENDENTS, LINK_MEMBER} from '../../task/links.js';
export {LINK_CALLBACK, LINK_DEPENDENTS, LINK_MEMBER, LINK_PARENTS} from '../../task/links.js';

/**
 * The run_at of a waiting task (a dependent before its last parent, a batch callback before its
 * last member): never reached, so no claim, due scan, republish or fair pick takes it. The
 * transaction that releases it sets run_at = NOW(3) (and deps_left = 0).
 */
export const WAITING_RUN_AT = '9999-12-31 00:00:00.000';

/** A task a transaction ended, with the link flags and batch its row had. */
export interface EndedTask {
  id: string;
  to: 'succeeded' | 'dead' | 'cancelled';
  links: number;
  batchId: string | null;
}

/** A task the transaction made due (a released dependent or callback): to be rung after the commit. */
export interface DueRef {
  id: string;
  type: string;
  pool: PoolName;
  priority: Priority;
  fence: number;
}

/** The ended rows of a locking read (id, links, batch_id) that have link flags, as EndedTask. */
export function endedOf(rows: ReadonlyArray<{id: string; links?: unknown; batch_id?: unknown}>, to: EndedTask['to']): EndedTask[] {
  const out: EndedTask[] = [];
  for (const r of rows) {
    const links = Number(r.links ?? 0);
    if (links !== 0) out.push({id: r.id, to, links, batchId: (r.batch_id as string | null | undefined) ?? null});
  }
  return out;
}

/**
 * Updates the dependents and batches of `ended` (tasks this transaction ended; those without link
 * flags are skipped) and, level by level, of the dependents it cancels (a cancel cascades).
 * Returns the tasks it made due. Statements: none without flagged rows; per level, for parents a
 * locking read of their waiting edges and children, one UPDATE of the edges per end state, one
 * cancel UPDATE and one history INSERT when any child is cancelled, one UPDATE of the counters;
 * for batch members one UPDATE per batch and one read (plus the release when a batch completes).
 */
export async function resolveEnded(db: Db, c: PoolConnection, cell: string, ended: readonly EndedTask[], actor: string): Promise<DueRef[]> {
  const due: DueRef[] = [];
  let level = ended.filter((e) => e.links !== 0);
  while (level.length > 0) {
    const members = level.filter((e) => (e.links & LINK_MEMBER) !== 0 && e.batchId !== null);
    if (members.length > 0) due.push(...(await bumpBatches(db, c, members)));
    const parents = level.filter((e) => (e.links & LINK_DEPENDENTS) !== 0);
    level = [];
    if (parents.length > 0) {
      const r = await resolveParents(db, c, cell, parents, actor);
      due.push(...r.released);
      level = r.cancelled;
    }
  }
  return due;
}

/** A child's tally over the parents that ended in this round. */
interface Tally {
  row: Row;
  done: number;
  cancelBy: EndedTask | null;
  ranDespite: EndedTask[];
}

async function resolveParents(
  db: Db,
  c: PoolConnection,
  cell: string,
  parents: readonly EndedTask[],
  actor: string,
): Promise<{released: DueRef[]; cancelled: EndedTask[]}> {
  const byId = new Map(parents.map((p) => [p.id, p]));
  const ids = [...byId.keys()].sort();
  const edges = await select(
    db,
    c,
    `SELECT d.parent, d.child, d.run_on_failure, t.state, t.deps_left, t.links, t.batch_id, t.type, t.pool, t.priority, t.fence, t.attempt
       FROM task_deps d JOIN tasks t ON t.id = d.child
      WHERE d.parent IN (${marks(ids.length)}) AND d.state = 'waiting' ORDER BY d.child FOR UPDATE`,
    ids,
  );
  if (edges.length === 0) return {released: [], cancelled: []};
  // Each edge is settled once: a parent replayed and ended again finds none waiting.
  for (const to of ['succeeded', 'dead', 'cancelled'] as const) {
    const group = ids.filter((id) => byId.get(id)!.to === to);
    if (group.length === 0) continue;
    await exec(db, c, `UPDATE task_deps SET state = ? WHERE parent IN (${marks(group.length)}) AND state = 'waiting'`, [to, ...group]);
  }
  const tallies = new Map<string, Tally>();
  for (const e of edges) {
    // Only a child still waiting counts (one cancelled meanwhile, by an operator or another parent, is left alone).
    if (e.state !== 'submitted' || Number(e.deps_left) === 0) continue;
    const child = e.child as string;
    const t = tallies.get(child) ?? {row: e, done: 0, cancelBy: null, ranDespite: []};
    tallies.set(child, t);
    const p = byId.get(e.parent as string)!;
    t.done++;
    if (p.to !== 'succeeded') {
      if (Number(e.run_on_failure) === 1) t.ranDespite.push(p);
      else t.cancelBy ??= p;
    }
  }
  const history: HistoryRow[] = [];
  const cancel: Tally[] = [];
  const count: Tally[] = [];
  for (const [id, t] of tallies) {
    const attempt = Number(t.row.attempt);
    if (t.cancelBy) {
      cancel.push(t);
      history.push([id, 'submitted', TRANSITIONS.cancel.to, attempt, actor, parentNote(t.cancelBy), null]);
      continue;
    }
    count.push(t);
    for (const p of t.ranDespite)
      history.push([id, 'submitted', 'submitted', attempt, actor, `${parentNote(p)}; runs anyway (onParentFailure: run)`, null]);
  }
  const waitingGuard = `state IN (${inList(guardOf('cancel').from.filter((s) => s === 'submitted'))}) AND deps_left > 0`;
  if (cancel.length > 0) {
    const cids = cancel.map((t) => t.row.child as string);
    const err = caseById(
      cancel.map((t) => [t.row.child as string, parentNote(t.cancelBy!)]),
      'last_error',
    );
    const res = await exec(
      db,
      c,
      `UPDATE tasks SET state = '${TRANSITIONS.cancel.to}', finished_at = NOW(3), updated_at = NOW(3), deps_left = 0, ${MARK_LEFT_UNRUNG},
              last_error = ${err.sql}
        WHERE id IN (${marks(cids.length)}) AND cell = ? AND ${waitingGuard}`,
      [...err.params, ...cids, cell],
    );
    if (res.affectedRows !== cids.length)
      throw new AxError('internal', `dependents: cancelled ${res.affectedRows} of ${cids.length} locked rows`);
  }
  const released: DueRef[] = [];
  if (count.length > 0) {
    const cids = count.map((t) => t.row.child as string);
    const dec = caseById(
      count.map((t) => [t.row.child as string, t.done]),
      '0',
    );
    // SET runs left to right: run_at sees the new deps_left.
    const res = await exec(
      db,
      c,
      `UPDATE tasks SET deps_left = deps_left - ${dec.sql}, run_at = IF(deps_left = 0, NOW(3), run_at), updated_at = NOW(3)
        WHERE id IN (${marks(cids.length)}) AND cell = ? AND ${waitingGuard}`,
      [...dec.params, ...cids, cell],
    );
    if (res.affectedRows !== cids.length)
      throw new AxError('internal', `dependents: counted ${res.affectedRows} of ${cids.length} locked rows`);
    for (const t of count) if (Number(t.row.deps_left) === t.done) released.push(dueRef(t.row, 'child'));
  }
  if (history.length > 0) {
    const h = historyInsert(history);
    await exec(db, c, h.sql, h.params);
  }
  const cancelled = cancel.map((t) => ({
    id: t.row.child as string,
    to: 'cancelled' as const,
    links: Number(t.row.links),
    batchId: (t.row.batch_id as string | null) ?? null,
  }));
  return {released, cancelled};
}

const parentNote = (p: EndedTask): string => clipError(`parent ${p.id} ended ${p.to}`)!;

function dueRef(r: Row, idColumn: string): DueRef {
  return {
    id: r[idColumn] as string,
    type: r.type as string,
    pool: r.pool as PoolName,
    priority: r.priority as Priority,
    fence: Number(r.fence),
  };
}

/**
 * Adds the members' ends to their batches' counters (one UPDATE per batch), then releases the
 * callback of every batch whose counters reached its total in this transaction: the batch row is
 * locked by the counter UPDATE, so exactly one transaction sees the total reached with done_at
 * unset, and the guarded release (done_at IS NULL, callback waiting) happens once.
 */
async function bumpBatches(db: Db, c: PoolConnection, members: readonly EndedTask[]): Promise<DueRef[]> {
  const counts = new Map<string, {succeeded: number; dead: number; cancelled: number}>();
  for (const m of members) {
    const n = counts.get(m.batchId!) ?? {succeeded: 0, dead: 0, cancelled: 0};
    n[m.to]++;
    counts.set(m.batchId!, n);
  }
  const ids = [...counts.keys()].sort();
  // One UPDATE for every batch the outcome batch touched (rows locked in primary-key order).
  const by = (k: 'succeeded' | 'dead' | 'cancelled') =>
    caseById(
      ids.map((id) => [id, counts.get(id)![k]]),
      '0',
    );
  const [ok, dead, cancelled] = [by('succeeded'), by('dead'), by('cancelled')];
  await exec(
    db,
    c,
    `UPDATE task_batches SET succeeded = succeeded + ${ok.sql}, dead = dead + ${dead.sql}, cancelled = cancelled + ${cancelled.sql}
      WHERE id IN (${marks(ids.length)})`,
    [...ok.params, ...dead.params, ...cancelled.params, ...ids],
  );
  const done = await select(
    db,
    c,
    `SELECT b.id AS batch, t.id, t.type, t.pool, t.priority, t.fence, t.state, t.deps_left
       FROM task_batches b JOIN tasks t ON t.id = b.callback_id
      WHERE b.id IN (${marks(ids.length)}) AND b.done_at IS NULL AND b.succeeded + b.dead + b.cancelled >= b.total
      ORDER BY b.id FOR UPDATE`,
    ids,
  );
  if (done.length === 0) return [];
  const batches = done.map((r) => r.batch as string);
  await exec(db, c, `UPDATE task_batches SET done_at = NOW(3) WHERE id IN (${marks(batches.length)}) AND done_at IS NULL`, batches);
  const waiting = done.filter((r) => r.state === 'submitted' && Number(r.deps_left) > 0);
  if (waiting.length === 0) return [];
  const cids = waiting.map((r) => r.id as string);
  // The callback's payload gains the batch's counts as they are now (its payload is stored inline: links-insert.ts).
  const res = await exec(
    db,
    c,
    `UPDATE tasks t JOIN task_batches b ON b.callback_id = t.id
        SET t.payload = JSON_SET(t.payload, '$.batch', JSON_OBJECT('id', b.id, 'total', b.total, 'succeeded', b.succeeded, 'dead', b.dead, 'cancelled', b.cancelled)),
            t.deps_left = 0, t.run_at = NOW(3), t.updated_at = NOW(3)
      WHERE t.id IN (${marks(cids.length)}) AND t.state = 'submitted' AND t.deps_left > 0`,
    cids,
  );
  if (res.affectedRows !== cids.length) throw new AxError('internal', `batches: released ${res.affectedRows} of ${cids.length} callbacks`);
  return waiting.map((r) => dueRef(r, 'id'));
}
