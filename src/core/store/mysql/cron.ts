import {AxError} from '../../errors.js';
import type {TaskState} from '../../task/state.js';
import type {
  OccurrencesPreviousParams,
  ScheduleRecord,
  SchedulesAddParams,
  SchedulesAdvanceParams,
  SchedulesSetPausedParams,
} from '../types.js';
import {type Db, type Row, exec, select} from './db.js';

const COLUMNS =
  'name, cron, tz, type, payload, pool, priority, max_retries, timeout_ms, task_key, overlap, misfire, paused, next_fire_at, last_fire_at, last_task_id, created_at, updated_at';

function toRecord(r: Row): ScheduleRecord {
  return {
    name: r.name as string,
    cron: r.cron as string,
    tz: r.tz as string,
    type: r.type as string,
    payload: r.payload as string,
    pool: r.pool as ScheduleRecord['pool'],
    priority: r.priority as ScheduleRecord['priority'],
    maxRetries: r.max_retries === null ? null : Number(r.max_retries),
    timeoutMs: r.timeout_ms === null ? null : Number(r.timeout_ms),
    key: (r.task_key as string | null) ?? null,
    overlap: r.overlap as ScheduleRecord['overlap'],
    misfire: r.misfire as ScheduleRecord['misfire'],
    paused: Number(r.paused) === 1,
    nextFireAt: (r.next_fire_at as Date | null) ?? null,
    lastFireAt: (r.last_fire_at as Date | null) ?? null,
    lastTaskId: (r.last_task_id as string | null) ?? null,
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
  };
}

export async function schedulesAdd(db: Db, cell: string, {schedule: s}: SchedulesAddParams): Promise<void> {
  try {
    await exec(
      db,
      db.pool,
      `INSERT INTO cron_schedules (cell, name, cron, tz, type, payload, pool, priority, max_retries, timeout_ms, task_key, overlap, misfire, paused, next_fire_at, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, NOW(3), NOW(3))`,
      [
        cell,
        s.name,
        s.cron,
        s.tz,
        s.type,
        s.payload,
        s.pool,
        s.priority,
        s.maxRetries,
        s.timeoutMs,
        s.key,
        s.overlap,
        s.misfire,
        s.nextFireAt,
      ],
    );
  } catch (e) {
    if ((e as {code?: string}).code === 'ER_DUP_ENTRY') throw new AxError('conflict', `a schedule named "${s.name}" already exists`);
    throw e;
  }
}

export async function schedulesGet(db: Db, cell: string, name: string): Promise<ScheduleRecord | null> {
  const rows = await select(db, db.pool, `SELECT ${COLUMNS} FROM cron_schedules WHERE cell = ? AND name = ?`, [cell, name]);
  return rows[0] ? toRecord(rows[0]) : null;
}

export async function schedulesList(db: Db, cell: string): Promise<ScheduleRecord[]> {
  return (await select(db, db.pool, `SELECT ${COLUMNS} FROM cron_schedules WHERE cell = ? ORDER BY name`, [cell])).map(toRecord);
}

export async function schedulesSetPaused(db: Db, cell: string, {name, paused, nextFireAt}: SchedulesSetPausedParams): Promise<boolean> {
  const r =
    nextFireAt === undefined
      ? await exec(db, db.pool, 'UPDATE cron_schedules SET paused = ?, updated_at = NOW(3) WHERE cell = ? AND name = ?', [
          paused ? 1 : 0,
          cell,
          name,
        ])
      : await exec(db, db.pool, 'UPDATE cron_schedules SET paused = ?, next_fire_at = ?, updated_at = NOW(3) WHERE cell = ? AND name = ?', [
          paused ? 1 : 0,
          nextFireAt,
          cell,
          name,
        ]);
  return r.affectedRows > 0;
}

export async function schedulesRemove(db: Db, cell: string, name: string): Promise<boolean> {
  return (await exec(db, db.pool, 'DELETE FROM cron_schedules WHERE cell = ? AND name = ?', [cell, name])).affectedRows > 0;
}

/** Params: cell, horizon µs. Index: idx_cron_due (cell, paused, next_fire_at). */
export async function schedulesDue(db: Db, cell: string, horizonMs: number): Promise<ScheduleRecord[]> {
  const rows = await select(
    db,
    db.pool,
    `SELECT ${COLUMNS} FROM cron_schedules WHERE cell = ? AND paused = 0 AND (next_fire_at IS NULL OR next_fire_at <= NOW(3) + INTERVAL ? MICROSECOND)`,
    [cell, horizonMs * 1000],
  );
  return rows.map(toRecord);
}

export async function schedulesAdvance(db: Db, cell: string, {name, expectedNext, next, last}: SchedulesAdvanceParams): Promise<boolean> {
  const r = await exec(
    db,
    db.pool,
    `UPDATE cron_schedules SET next_fire_at = ?, last_fire_at = COALESCE(?, last_fire_at), last_task_id = COALESCE(?, last_task_id), updated_at = NOW(3)
      WHERE cell = ? AND name = ? AND next_fire_at <=> ?`,
    [next, last?.fireAt ?? null, last?.taskId ?? null, cell, name, expectedNext],
  );
  return r.affectedRows > 0;
}

/**
 * The occurrence with the latest fire time before `before`. Occurrences' dedup keys are
 * `cron:<name>@<ISO fire time>` and ISO times sort as text, so this is one descending range read
 * of uq_tasks_dedup (cell, dedup_key).
 */
export async function occurrencesPrevious(
  db: Db,
  cell: string,
  {name, before, excludeId}: OccurrencesPreviousParams,
): Promise<{id: string; state: TaskState} | null> {
  const prefix = `cron:${name}@`;
  const rows = await select(
    db,
    db.pool,
    'SELECT id, state FROM tasks WHERE cell = ? AND dedup_key >= ? AND dedup_key < ? AND id <> ? ORDER BY dedup_key DESC LIMIT 1',
    [cell, prefix, `${prefix}${before.toISOString()}`, excludeId ?? ''],
  );
  return rows[0] ? {id: rows[0].id as string, state: rows[0].state as TaskState} : null;
}
