/** FlowStore's parked backlog on MySQL (`tasks.parked`): tasksDefer parks unclaimed tasks, parkedRelease makes them due again. */
import {TRANSITIONS, type TaskState} from '../../task/state.js';
import type {DispatchRef, ParkedKind, ParkedReleaseParams, TasksDeferParams, TasksDeferResult} from '../types.js';
import {type Db, type Row, exec, marks, select, tx} from './db.js';
import {endedOf, resolveEnded} from './links.js';
import {type FencedRef, MARK_LEFT_UNRUNG, guardedWhere, inList} from './guards.js';
import {pickThenLock} from './pick-lock.js';
import {clipError, historyInsert, type HistoryRow} from './rows.js';
import {liveHandlers} from './flow.js';

/** See FlowStore.tasksDefer. */
export async function tasksDefer(db: Db, cell: string, p: TasksDeferParams): Promise<TasksDeferResult> {
  const byId = new Map(p.tasks.map((t) => [t.id, t]));
  const ids = [...byId.keys()].sort();
  const out: TasksDeferResult = {deferred: [], dead: [], skipped: []};
  if (ids.length === 0) return out;
  return tx(db, async (c) => {
    const rows = await select(
      db,
      c,
      `SELECT id, type, state, attempt, fence, parked, parked_at < NOW(3) - INTERVAL ? MICROSECOND AS overdue, links, batch_id
         FROM tasks WHERE id IN (${marks(ids.length)}) AND cell = ? FOR UPDATE`,
      [p.unhandledDeadAfterMs * 1000, ...ids, cell],
    );
    const found = new Map(rows.map((r) => [r.id as string, r]));
    // The worker decided from a snapshot up to AX_FLOW_REFRESH old: a resume, a closed breaker, or a
    // worker with the handler, may have come since. Those tasks are not parked but due again at once.
    const typesOf = (kind: ParkedKind): string[] =>
      [...new Set(p.tasks.filter((t) => t.parked === kind).map((t) => found.get(t.id)?.type as string | undefined))].filter(
        (t): t is string => t !== undefined,
      );
    const pausedTypes = typesOf('paused');
    const stillPaused = new Set(
      pausedTypes.length === 0
        ? []
        : (
            await select(db, c, `SELECT type FROM task_types WHERE cell = ? AND paused = 1 AND type IN (${marks(pausedTypes.length)})`, [
              cell,
              ...pausedTypes,
            ])
          ).map((r) => r.type as string),
    );
    const breakerTypes = typesOf('breaker');
    const stillBreaking = new Set(
      breakerTypes.length === 0
        ? []
        : (
            await select(
              db,
              c,
              `SELECT type FROM task_types WHERE cell = ? AND breaker_state <> 'closed' AND type IN (${marks(breakerTypes.length)})`,
              [cell, ...breakerTypes],
            )
          ).map((r) => r.type as string),
    );
    const handledNow =
      typesOf('unhandled').length === 0 ? new Set<string>() : new Set(Object.keys((await liveHandlers(db, cell, p.liveMs)).handlers));
    const groups = new Map<string, {delayMs: number; parked: ParkedKind | null; refs: FencedRef[]}>();
    const dead: Array<FencedRef & {type: string}> = [];
    const history: HistoryRow[] = [];
    const claimable = TRANSITIONS.defer.from as readonly TaskState[];
    for (const id of ids) {
      const r = found.get(id);
      const t = byId.get(id)!;
      if (!r || !claimable.includes(r.state as TaskState)) {
        out.skipped.push({id, state: r ? (r.state as TaskState) : null});
        continue;
      }
      const ref = {id, fence: Number(r.fence)};
      const type = r.type as string;
      const t2 =
        t.parked === 'paused' && !stillPaused.has(type)
          ? {...t, delayMs: 0, parked: null, reason: 'not parked: its type was resumed meanwhile'}
          : t.parked === 'breaker' && !stillBreaking.has(type)
            ? {...t, delayMs: 0, parked: null, reason: 'not parked: its breaker closed meanwhile'}
            : t.parked === 'unhandled' && handledNow.has(type)
              ? {...t, delayMs: 0, parked: null, reason: 'not parked: a worker with its handler started meanwhile'}
              : t;
      if (t2.parked === 'unhandled' && r.parked === 'unhandled' && Number(r.overdue) === 1) {
        const why = `no live worker has a handler for type "${r.type as string}" (waited AX_UNHANDLED_DEAD_AFTER)`;
        dead.push({...ref, type: r.type as string});
        history.push([id, r.state as TaskState, TRANSITIONS.unhandledDead.to, Number(r.attempt), p.actor, why, null]);
        continue;
      }
      const key = `${t2.delayMs}|${t2.parked ?? ''}`;
      const g = groups.get(key) ?? {delayMs: t2.delayMs, parked: t2.parked, refs: []};
      g.refs.push(ref);
      groups.set(key, g);
      history.push([id, r.state as TaskState, TRANSITIONS.defer.to, Number(r.attempt), p.actor, clipError(t2.reason), null]);
    }
    for (const g of groups.values()) {
      const where = guardedWhere('defer', g.refs);
      // parked_at before parked: MySQL evaluates SET left to right with the new values.
      await exec(
        db,
        c,
        `UPDATE tasks SET state = '${TRANSITIONS.defer.to}', run_at = NOW(3) + INTERVAL ? MICROSECOND, published_at = NULL,
                fence = fence + 1, parked_at = IF(? IS NULL, NULL, IF(parked <=> ?, parked_at, NOW(3))), parked = ?, updated_at = NOW(3)
          WHERE ${where.sql}`,
        [Math.max(0, Math.round(g.delayMs)) * 1000, g.parked, g.parked, g.parked, ...where.params],
      );
      out.deferred.push(...g.refs.map((r) => r.id));
    }
    if (dead.length > 0) {
      const where = guardedWhere('unhandledDead', dead);
      await exec(
        db,
        c,
        `UPDATE tasks SET state = '${TRANSITIONS.unhandledDead.to}', finished_at = NOW(3), updated_at = NOW(3), parked = NULL, ${MARK_LEFT_UNRUNG},
                last_error = CONCAT('no live worker has a handler for type "', type, '" (waited AX_UNHANDLED_DEAD_AFTER)')
          WHERE ${where.sql}`,
        where.params,
      );
      out.dead.push(...dead.map(({id, type}) => ({id, type})));
      // Their dependents and batches (links.ts); what that makes due is rung by the scheduler.
      const ended = endedOf(
        dead.map((d) => found.get(d.id) as Row & {id: string}),
        'dead',
      );
      if (ended.length > 0) await resolveEnded(db, c, cell, ended, p.actor);
    }
    if (history.length > 0) {
      const h = historyInsert(history);
      await exec(db, c, h.sql, h.params);
    }
    return out;
  });
}

/**
 * See FlowStore.parkedRelease, read then locked (pickThenLock): the candidates, a plain read of the
 * type's parked waiting rows (idx_tasks_due (cell, state, run_at, type): the waiting entries, the
 * type checked in the index); then per round one transaction: the candidates by primary key FOR
 * UPDATE, re-checked (a claim or a defer may have moved one since), and one UPDATE of the rows
 * still parked.
 */
export async function parkedRelease(db: Db, cell: string, p: ParkedReleaseParams): Promise<Array<DispatchRef & {fence: number}>> {
  if (p.kinds.length === 0) return [];
  const parkedWhere = `cell = ? AND type = ? AND state IN (${inList(TRANSITIONS.defer.from)}) AND parked IN (${marks(p.kinds.length)})`;
  const pick = async (want: number) =>
    (await select(db, db.pool, `SELECT id FROM tasks WHERE ${parkedWhere} ORDER BY id LIMIT ?`, [cell, p.type, ...p.kinds, want])).map(
      (r) => r.id as string,
    );
  return pickThenLock(p.limit, pick, (picked) =>
    tx(db, async (c) => {
      const rows = await select(
        db,
        c,
        `SELECT id, type, pool, priority, fence FROM tasks WHERE id IN (${marks(picked.length)}) AND ${parkedWhere} ORDER BY id FOR UPDATE`,
        [...picked, cell, p.type, ...p.kinds],
      );
      if (rows.length === 0) return [];
      const ids = rows.map((r) => r.id as string);
      await exec(
        db,
        c,
        `UPDATE tasks SET run_at = NOW(3), parked = NULL, parked_at = NULL, published_at = NULL, updated_at = NOW(3)
          WHERE id IN (${marks(ids.length)}) AND state IN (${inList(TRANSITIONS.defer.from)})`,
        ids,
      );
      return rows.map((r) => ({
        id: r.id as string,
        type: r.type as string,
        pool: r.pool as DispatchRef['pool'],
        priority: r.priority as DispatchRef['priority'],
        fence: Number(r.fence),
      }));
    }),
  );
}
