/**
 * The index of task keys, idx_tasks_key (cell, type, key_phase, task_key, key_run_at), and the
 * virtual columns it ranges over: what per-key limits, fair dispatch and the keys views read. Both
 * are opt-in (`ax migrate --task-keys`) because every task pays for them at insert, keyed or not:
 * the index's entry cost P1 −7.7 % and +17 % MariaDB CPU per task (same run); the columns, a few
 * per cent of an INSERT (docs/benchmarks.md, "Task keys"). A deployment that never sets a per-key
 * limit or --fair has no use for them.
 */
import {type Db, exec, select} from './db.js';

export const KEYS_INDEX = 'idx_tasks_key';

/**
 * What the index ranges over: virtual columns, NULL on a row without a key, so such a row's entry
 * never changes with its state or due time. key_phase: 1 claimable (submitted, failed), 2 running,
 * 0 ended; key_run_at: run_at. Instant (not stored); a statement of its own, since MariaDB builds an
 * index online only when it is the ALTER's one action.
 */
export const KEYS_COLUMNS_SQL = `ALTER TABLE tasks
  ADD COLUMN key_phase TINYINT AS (CASE WHEN task_key IS NULL THEN NULL
    WHEN state IN ('submitted', 'failed') THEN 1 WHEN state = 'running' THEN 2 ELSE 0 END) VIRTUAL,
  ADD COLUMN key_run_at DATETIME(3) AS (IF(task_key IS NULL, NULL, run_at)) VIRTUAL`;

/** Online (INPLACE, LOCK=NONE): writes go on while it builds; about a second per million tasks here. */
export const KEYS_INDEX_SQL = `ALTER TABLE tasks ADD INDEX ${KEYS_INDEX} (cell, type, key_phase, task_key, key_run_at), ALGORITHM=INPLACE, LOCK=NONE`;

/** Whether the tasks table has idx_tasks_key. */
export async function keysIndexed(db: Db): Promise<boolean> {
  const rows = await select(
    db,
    db.pool,
    `SELECT 1 FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'tasks' AND INDEX_NAME = ? LIMIT 1`,
    [KEYS_INDEX],
  );
  return rows.length > 0;
}

/**
 * Adds the virtual columns (unless there) and idx_tasks_key (unless there); returns whether it
 * created the index. Idempotent: re-run after a crash half-way, or concurrently (the other run's
 * column or index is taken as done).
 */
export async function keysIndexCreate(db: Db): Promise<boolean> {
  if (await keysIndexed(db)) return false;
  const hasColumns =
    (
      await select(
        db,
        db.pool,
        `SELECT 1 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'tasks' AND COLUMN_NAME = 'key_phase'`,
      )
    ).length > 0;
  const run = async (sql: string, done: string): Promise<boolean> => {
    try {
      await exec(db, db.pool, sql);
      return true;
    } catch (e) {
      if ((e as {code?: string}).code === done) return false;
      throw e;
    }
  };
  if (!hasColumns) await run(KEYS_COLUMNS_SQL, 'ER_DUP_FIELDNAME');
  return run(KEYS_INDEX_SQL, 'ER_DUP_KEYNAME');
}
