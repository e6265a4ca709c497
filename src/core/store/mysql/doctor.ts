/** `ax doctor`'s reads (DoctorStore): due tasks per pool, repeated successes, attempt durations. */
import type {AttemptTimes, DuePoolRow, SinceParams, SuccessRepeat} from '../types.js';
import type {PoolName} from '../../task/model.js';
import {type Db, select} from './db.js';

/** The statements, with the index each reads through. */
export const DOCTOR_SQL = {
  /** Params: cell. Index: idx_tasks_due (cell, state, run_at): the due part of two small states. */
  duePerPool: `SELECT type, pool, COUNT(*) AS n, MIN(run_at) AS oldest FROM tasks
      WHERE cell = ? AND state IN ('submitted', 'failed') AND run_at <= NOW(3)
      GROUP BY type, pool ORDER BY type, pool`,
  /**
   * Params: since, sample, cell, limit. The latest `sample` successes of the window: their row ids
   * from idx_history_failures (to_state, at) alone, read backwards; then those rows by primary key,
   * grouped by task; only the repeated tasks are looked up (primary key). A forced replay leaves
   * `replay` set.
   */
  successRepeats: `SELECT r.task_id, t.type, r.n, t.replay IS NOT NULL AS forced
      FROM (
        SELECT h.task_id, COUNT(*) AS n
        FROM (SELECT seq FROM task_history WHERE to_state = 'succeeded' AND at >= ? ORDER BY at DESC LIMIT ?) latest
        JOIN task_history h ON h.seq = latest.seq
        GROUP BY h.task_id HAVING COUNT(*) > 1
      ) r JOIN tasks t ON t.id = r.task_id
      WHERE t.cell = ? ORDER BY r.task_id LIMIT ?`,
  /**
   * Params: since, sample, cell. The latest `sample` attempt ends of the window (succeeded, failed,
   * dead: their row ids from idx_history_failures alone, sorted by time), each row by primary key
   * with its task (primary key). An attempt's start is on its row (started_at, schema version 18
   * on); for a row without one (written before), the latest `running` row of the task before it
   * (idx_history_task (task_id, seq): a few rows per task). Hand-backs (`released: …`) never ran
   * and are left out. The start's lateness (claim − run_at) is known for a task's latest attempt
   * only: run_at is rewritten by each retry.
   */
  attemptTimes: `SELECT type, COUNT(*) AS n, SUM(to_state <> 'succeeded') AS failed,
        SUM(COALESCE(error LIKE 'timeout:%', 0)) AS timeouts,
        AVG(TIMESTAMPDIFF(MICROSECOND, started, ended)) / 1000 AS avg_ms,
        MAX(TIMESTAMPDIFF(MICROSECOND, started, ended)) / 1000 AS max_ms,
        AVG(IF(latest AND started >= due, TIMESTAMPDIFF(MICROSECOND, due, started), NULL)) / 1000 AS late_avg_ms,
        MAX(IF(latest AND started >= due, TIMESTAMPDIFF(MICROSECOND, due, started), NULL)) / 1000 AS late_max_ms
      FROM (
        SELECT t.type, h.to_state, h.error, h.at AS ended, t.run_at AS due, h.attempt = t.attempt AS latest,
          IF(h.started_at IS NOT NULL, h.started_at,
            (SELECT MAX(r.at) FROM task_history r WHERE r.task_id = h.task_id AND r.to_state = 'running' AND r.seq < h.seq)) AS started
        FROM (
          SELECT seq FROM task_history WHERE to_state IN ('succeeded', 'failed', 'dead') AND at >= ? ORDER BY at DESC LIMIT ?
        ) last
        JOIN task_history h ON h.seq = last.seq
        JOIN tasks t ON t.id = h.task_id
        WHERE h.from_state = 'running' AND t.cell = ? AND (h.error IS NULL OR h.error NOT LIKE 'released:%')
      ) ends
      WHERE started IS NOT NULL
      GROUP BY type ORDER BY type`,
};

export async function duePerPool(db: Db, cell: string): Promise<DuePoolRow[]> {
  const rows = await select(db, db.pool, DOCTOR_SQL.duePerPool, [cell]);
  return rows.map((r) => ({type: r.type as string, pool: r.pool as PoolName, due: Number(r.n), oldestDueAt: r.oldest as Date}));
}

export async function successRepeats(db: Db, cell: string, p: SinceParams & {limit: number}): Promise<SuccessRepeat[]> {
  const rows = await select(db, db.pool, DOCTOR_SQL.successRepeats, [p.since, p.sample, cell, p.limit]);
  return rows.map((r) => ({taskId: r.task_id as string, type: r.type as string, successes: Number(r.n), forced: Number(r.forced) === 1}));
}

export async function attemptTimes(db: Db, cell: string, p: SinceParams): Promise<AttemptTimes[]> {
  const rows = await select(db, db.pool, DOCTOR_SQL.attemptTimes, [p.since, p.sample, cell]);
  return rows.map((r) => ({
    type: r.type as string,
    attempts: Number(r.n),
    failed: Number(r.failed),
    timeouts: Number(r.timeouts),
    avgMs: Math.round(Number(r.avg_ms)),
    maxMs: Math.round(Number(r.max_ms)),
    startLateAvgMs: r.late_avg_ms === null ? null : Math.round(Number(r.late_avg_ms)),
    startLateMaxMs: r.late_max_ms === null ? null : Math.round(Number(r.late_max_ms)),
  }));
}
