/**
 * SQL of the type registry and flow control (FlowStore in ../types.ts): `task_types`, its history,
 * the handler types of live workers, and the parked backlog (`tasks.parked`).
 */
import {TRANSITIONS, type TaskState} from '../../task/state.js';
import type {
  BreakerTransitionParams,
  OutcomeCount,
  OutcomeCountsParams,
  TypeSetSettingsParams,
  DispatchRef,
  FlowView,
  FlowViewParams,
  HandlersRegisterParams,
  ParkedKind,
  ParkedReleaseParams,
  TasksDeferParams,
  TasksDeferResult,
  TypeEvent,
  TypeHistoryParams,
  TypeRecord,
  TypeSetPausedParams,
  TypeSetPausedResult,
  TypesReport,
} from '../types.js';
import {insertAudit} from './audit.js';
import {type Conn, type Db, exec, marks, type Row, select, tx} from './db.js';
import {type FencedRef, MARK_LEFT_UNRUNG, guardedWhere, inList} from './guards.js';
import {pickThenLock} from './pick-lock.js';
import {clipError, historyInsert, type HistoryRow} from './rows.js';

const TYPE_COLUMNS =
  'type, paused, paused_by, paused_reason, paused_at, settings, breaker_state, breaker_until, breaker_openings, breaker_changed_at, created_at, updated_at';

/** A registry row's settings JSON as an object ({} when absent or not an object). */
export function parseSettings(text: string | null): Record<string, unknown> {
  if (text === null || text === '') return {};
  try {
    const o = JSON.parse(text) as unknown;
    return o !== null && typeof o === 'object' && !Array.isArray(o) ? (o as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function toTypeRecord(r: Row): TypeRecord {
  return {
    type: r.type as string,
    paused: Number(r.paused) === 1,
    pausedBy: (r.paused_by as string | null) ?? null,
    pausedReason: (r.paused_reason as string | null) ?? null,
    pausedAt: (r.paused_at as Date | null) ?? null,
    settings: parseSettings(r.settings as string | null),
    breaker: {
      state: r.breaker_state as TypeRecord['breaker']['state'],
      until: (r.breaker_until as Date | null) ?? null,
      openings: Number(r.breaker_openings),
      changedAt: (r.breaker_changed_at as Date | null) ?? null,
    },
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
  };
}

/** INSERT IGNORE of registry rows. Params: cell, type per row. Index: PRIMARY. */
export async function registerTypes(db: Db, c: Conn, cell: string, {types}: HandlersRegisterParams): Promise<void> {
  const unique = [...new Set(types)].sort();
  if (unique.length === 0) return;
  await exec(
    db,
    c,
    `INSERT IGNORE INTO task_types (cell, type, created_at, updated_at) VALUES ${unique.map(() => '(?, ?, NOW(3), NOW(3))').join(', ')}`,
    unique.flatMap((t) => [cell, t]),
  );
}

/** Live workers' handler types: idx_workers_cell (cell, heartbeat_at) range. */
async function liveHandlers(db: Db, cell: string, liveMs: number): Promise<{at: Date; handlers: Record<string, string[]>}> {
  const rows = await select(
    db,
    db.pool,
    `SELECT id, types, NOW(3) AS now FROM workers
      WHERE cell = ? AND heartbeat_at >= NOW(3) - INTERVAL ? MICROSECOND AND stopped_at IS NULL AND types IS NOT NULL`,
    [cell, liveMs * 1000],
  );
  const handlers: Record<string, string[]> = {};
  for (const r of rows) {
    let types: unknown;
    try {
      types = JSON.parse(r.types as string);
    } catch {
      continue;
    }
    if (!Array.isArray(types)) continue;
    for (const t of types) if (typeof t === 'string') (handlers[t] ??= []).push(r.id as string);
  }
  const at = rows[0]?.now as Date | undefined;
  return {at: at ?? (await select(db, db.pool, 'SELECT NOW(3) AS now'))[0]!.now, handlers};
}

/**
 * See FlowStore.flowView. Registry rows that say something, and the live handlers. A closed breaker
 * that has ever moved says something too: its `breaker_changed_at` is what the next transition's
 * compare-and-set expects and where its failure window starts (without it a type could open once).
 */
export async function flowView(db: Db, cell: string, {liveMs}: FlowViewParams): Promise<FlowView> {
  const rows = await select(
    db,
    db.pool,
    `SELECT ${TYPE_COLUMNS} FROM task_types
      WHERE cell = ? AND (paused = 1 OR breaker_state <> 'closed' OR breaker_changed_at IS NOT NULL OR settings IS NOT NULL)`,
    [cell],
  );
  const live = await liveHandlers(db, cell, liveMs);
  return {at: live.at, types: rows.map(toTypeRecord), handlers: live.handlers};
}

/** See FlowStore.typesReport. The parked counts read the waiting states through idx_tasks_due. */
export async function typesReport(db: Db, cell: string, p: FlowViewParams): Promise<TypesReport> {
  const rows = await select(db, db.pool, `SELECT ${TYPE_COLUMNS} FROM task_types WHERE cell = ? ORDER BY type`, [cell]);
  const counts = await select(
    db,
    db.pool,
    `SELECT type, parked, COUNT(*) AS n FROM tasks
      WHERE cell = ? AND state IN ('submitted', 'failed') AND parked IS NOT NULL GROUP BY type, parked`,
    [cell],
  );
  const parked: TypesReport['parked'] = {};
  for (const r of counts) (parked[r.type as string] ??= {})[r.parked as ParkedKind] = Number(r.n);
  const live = await liveHandlers(db, cell, p.liveMs);
  const all = rows.map(toTypeRecord);
  const saying = all.filter(
    (t) => t.paused || t.breaker.state !== 'closed' || t.breaker.changedAt !== null || Object.keys(t.settings).length > 0,
  );
  return {at: live.at, types: saying, handlers: live.handlers, all, parked};
}

/** Newest first. Index: idx_type_history (cell, type, seq). */
export async function typeHistory(db: Db, cell: string, {type, limit}: TypeHistoryParams): Promise<TypeEvent[]> {
  const rows = await select(
    db,
    db.pool,
    'SELECT at, event, actor, detail FROM task_type_history WHERE cell = ? AND type = ? ORDER BY seq DESC LIMIT ?',
    [cell, type, limit],
  );
  return rows.map((r) => ({
    at: r.at as Date,
    event: r.event as string,
    actor: r.actor as string,
    detail: (r.detail as string | null) ?? null,
  }));
}

/** Appends a row to a type's history on `c` (the connection of the change's transaction). */
export async function insertTypeEvent(
  db: Db,
  c: Conn,
  cell: string,
  type: string,
  event: string,
  actor: string,
  detail: string | null,
): Promise<void> {
  await exec(db, c, 'INSERT INTO task_type_history (cell, type, at, event, actor, detail) VALUES (?, ?, NOW(3), ?, ?, ?)', [
    cell,
    type,
    event,
    actor,
    clipError(detail),
  ]);
}

/** See FlowStore.typeSetPaused. One transaction: insert-if-missing, locking read, update, history, audit. */
export async function setPaused(db: Db, cell: string, p: TypeSetPausedParams): Promise<TypeSetPausedResult> {
  return tx(db, async (c) => {
    const ins = await exec(db, c, 'INSERT IGNORE INTO task_types (cell, type, created_at, updated_at) VALUES (?, ?, NOW(3), NOW(3))', [
      cell,
      p.type,
    ]);
    const existed = ins.affectedRows === 0;
    const read = async () =>
      toTypeRecord(
        (await select(db, c, `SELECT ${TYPE_COLUMNS} FROM task_types WHERE cell = ? AND type = ? FOR UPDATE`, [cell, p.type]))[0]!,
      );
    const before = await read();
    if (before.paused === p.paused) return {changed: false, existed, record: before};
    if (p.paused) {
      await exec(
        db,
        c,
        `UPDATE task_types SET paused = 1, paused_by = ?, paused_reason = ?, paused_at = NOW(3), updated_at = NOW(3)
          WHERE cell = ? AND type = ? AND paused = 0`,
        [p.operator, clipError(p.reason), cell, p.type],
      );
    } else {
      await exec(
        db,
        c,
        `UPDATE task_types SET paused = 0, paused_by = NULL, paused_reason = NULL, paused_at = NULL, updated_at = NOW(3)
          WHERE cell = ? AND type = ? AND paused = 1`,
        [cell, p.type],
      );
    }
    await insertTypeEvent(db, c, cell, p.type, p.paused ? 'paused' : 'resumed', p.operator, p.reason);
    await insertAudit(db, c, cell, p.audit, []);
    return {changed: true, existed, record: await read()};
  });
}

/** See FlowStore.tasksDefer. */
export async function deferTasks(db: Db, cell: string, p: TasksDeferParams): Promise<TasksDeferResult> {
  const byId = new Map(p.tasks.map((t) => [t.id, t]));
  const ids = [...byId.keys()].sort();
  const out: TasksDeferResult = {deferred: [], dead: [], skipped: []};
  if (ids.length === 0) return out;
  return tx(db, async (c) => {
    const rows = await select(
      db,
      c,
      `SELECT id, type, state, attempt, fence, parked, parked_at < NOW(3) - INTERVAL ? MICROSECOND AS overdue
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
export async function releaseParked(db: Db, cell: string, p: ParkedReleaseParams): Promise<Array<DispatchRef & {fence: number}>> {
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

/** See FlowStore.outcomeCounts. Params: cell, window (s). Index: idx_type_outcomes_second range. */
export async function outcomeCounts(db: Db, cell: string, {windowMs}: OutcomeCountsParams): Promise<OutcomeCount[]> {
  const rows = await select(
    db,
    db.pool,
    `SELECT type, second, SUM(ok) AS ok, SUM(failed) AS failed FROM type_outcomes
      WHERE cell = ? AND second >= NOW() - INTERVAL ? SECOND GROUP BY type, second`,
    [cell, Math.ceil(windowMs / 1000)],
  );
  return rows.map((r) => ({type: r.type as string, at: r.second as Date, ok: Number(r.ok), failed: Number(r.failed)}));
}

/** See FlowStore.outcomesPurge. */
export async function purgeOutcomes(db: Db, cell: string, olderThanMs: number): Promise<number> {
  const r = await exec(db, db.pool, 'DELETE FROM type_outcomes WHERE cell = ? AND second < NOW() - INTERVAL ? SECOND LIMIT 5000', [
    cell,
    Math.ceil(olderThanMs / 1000),
  ]);
  return r.affectedRows;
}

/** See FlowStore.breakerTransition: compare-and-set on (breaker_state, breaker_changed_at). */
export async function breakerTransition(db: Db, cell: string, p: BreakerTransitionParams): Promise<boolean> {
  return tx(db, async (c) => {
    await exec(db, c, 'INSERT IGNORE INTO task_types (cell, type, created_at, updated_at) VALUES (?, ?, NOW(3), NOW(3))', [cell, p.type]);
    const r = await exec(
      db,
      c,
      `UPDATE task_types SET breaker_state = ?, breaker_until = ?, breaker_openings = ?, breaker_changed_at = ?, updated_at = NOW(3)
        WHERE cell = ? AND type = ? AND breaker_state = ? AND breaker_changed_at <=> ?`,
      [p.to.state, p.to.until, p.to.openings, p.to.changedAt, cell, p.type, p.expect.state, p.expect.changedAt],
    );
    if (r.affectedRows !== 1) return false;
    await insertTypeEvent(db, c, cell, p.type, p.event, p.actor, p.detail);
    if (p.audit) await insertAudit(db, c, cell, p.audit, []);
    return true;
  });
}

/** See FlowStore.typeSetSettings. */
export async function setSettings(db: Db, cell: string, p: TypeSetSettingsParams): Promise<TypeRecord> {
  return tx(db, async (c) => {
    await exec(db, c, 'INSERT IGNORE INTO task_types (cell, type, created_at, updated_at) VALUES (?, ?, NOW(3), NOW(3))', [cell, p.type]);
    const empty = Object.keys(p.settings).length === 0;
    await exec(
      db,
      c,
      `UPDATE task_types SET settings = ?, rate_tokens = IF(?, NULL, rate_tokens), rate_at = IF(?, NULL, rate_at), updated_at = NOW(3)
        WHERE cell = ? AND type = ?`,
      [empty ? null : JSON.stringify(p.settings), p.resetBucket === true, p.resetBucket === true, cell, p.type],
    );
    await insertTypeEvent(db, c, cell, p.type, 'settings', p.operator, JSON.stringify(p.settings));
    await insertAudit(db, c, cell, p.audit, []);
    return toTypeRecord((await select(db, c, `SELECT ${TYPE_COLUMNS} FROM task_types WHERE cell = ? AND type = ?`, [cell, p.type]))[0]!);
  });
}
