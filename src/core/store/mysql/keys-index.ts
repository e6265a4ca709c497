/**
 * The index of task keys, idx_tasks_key (cell, type, key_phase, task_key, key_run_at), over the
 * virtual columns of migration 19: what per-key limits, fair dispatch and the keys views read.
 * It is opt-in (`ax migrate --task-keys`) because every task pays for it, keyed or not: one more
 * index entry per INSERT, measured at −7.7 % P1 and +17 % MariaDB CPU per task (docs/benchmarks.md,
 * "The index of task keys"). A deployment that never sets a per-key limit or --fair has no use for it.
 */
import {type Db, exec, select} from './db.js';

export const KEYS_INDEX = 'idx_tasks_key';

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

/** Creates idx_tasks_key unless it exists; returns whether it created it. Idempotent (a concurrent run's duplicate is taken as done). */
export async function keysIndexCreate(db: Db): Promise<boolean> {
  if (await keysIndexed(db)) return false;
  try {
    await exec(db, db.pool, KEYS_INDEX_SQL);
    return true;
  } catch (e) {
    if ((e as {code?: string}).code === 'ER_DUP_KEYNAME') return false;
    throw e;
  }
}
