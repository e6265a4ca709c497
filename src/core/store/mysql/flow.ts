/**
 * SQL of the type registry and flow control (FlowStore, seams/flow.ts): `task_types`, its history,
 * the handler types of live workers, the outcome counts; the parked backlog is flow-park.ts's.
 */
import type {
  BreakerTransitionParams,
  OutcomeCount,
  OutcomeCountsParams,
  TypeSetSettingsParams,
  FlowView,
  FlowViewParams,
  HandlersRegisterParams,
  ParkedKind,
  TypeEvent,
  TypeHistoryParams,
  TypeRecord,
  TypeSetPausedParams,
  TypeSetPausedResult,
  TypesReport,
} from '../types.js';
import {auditInsert} from './audit.js';
import {type Conn, type Db, exec, type Row, select, tx} from './db.js';
import {clipError} from './rows.js';
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
export async function typesRegister(db: Db, c: Conn, cell: string, {types}: HandlersRegisterParams): Promise<void> {
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
export async function liveHandlers(db: Db, cell: string, liveMs: number): Promise<{at: Date; handlers: Record<string, string[]>}> {
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
export async function typeSetPaused(db: Db, cell: string, p: TypeSetPausedParams): Promise<TypeSetPausedResult> {
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
    await auditInsert(db, c, cell, p.audit, []);
    return {changed: true, existed, record: await read()};
  });
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

/** See FlowStore.outcomesPurge; also the per-key buckets that are full again (a missing one reads as full). */
export async function outcomesPurge(db: Db, cell: string, olderThanMs: number): Promise<number> {
  const r = await exec(db, db.pool, 'DELETE FROM type_outcomes WHERE cell = ? AND second < NOW() - INTERVAL ? SECOND LIMIT 5000', [
    cell,
    Math.ceil(olderThanMs / 1000),
  ]);
  await exec(db, db.pool, 'DELETE FROM task_key_buckets WHERE cell = ? AND full_at < NOW(3) LIMIT 5000', [cell]);
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
    if (p.audit) await auditInsert(db, c, cell, p.audit, []);
    return true;
  });
}

/** See FlowStore.typeSetSettings. */
export async function typeSetSettings(db: Db, cell: string, p: TypeSetSettingsParams): Promise<TypeRecord> {
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
    await auditInsert(db, c, cell, p.audit, []);
    return toTypeRecord((await select(db, c, `SELECT ${TYPE_COLUMNS} FROM task_types WHERE cell = ? AND type = ?`, [cell, p.type]))[0]!);
  });
}
