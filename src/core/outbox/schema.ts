import {MAX_DURATION_MS} from '../duration.js';
import {MAX_RETRIES_LIMIT} from '../task/validate.js';

/**
 * The `task_outbox` table: lives in the BUSINESS database, written by the business service in its
 * own transaction, drained by the relay. This DDL and the column list below are a documented SQL
 * contract (docs/reference/outbox-sql.md): a producer in any language may enqueue with a plain
 * INSERT of (type, payload) and optionally the other columns.
 *
 * The numeric columns are signed and wide, with CHECK constraints, so that the table itself
 * refuses out-of-range values in every SQL mode (MariaDB 10.2+, MySQL 8.0.16+ enforce CHECK): an
 * UNSIGNED column in a non-strict session would store a negative delay_ms as 0 (run at once)
 * and clamp a too-large one silently. Refused INSERTs fail with MySQL error 4025 (MariaDB) or
 * 3819 (MySQL) naming the constraint. (A session can still switch them off with MariaDB's
 * `check_constraint_checks = 0`; the relay checks every row again.)
 */
export const OUTBOX_TABLE = 'task_outbox';

/**
 * The CHECK constraints of task_outbox, each with the column definition it needs. The ranges are
 * the relay's own rules: a delay or timeout of at most 366 days, 0 to 100 retries.
 */
export const OUTBOX_CHECKS = [
  {
    name: 'chk_outbox_delay_ms',
    column: "delay_ms BIGINT NULL COMMENT 'counted from created_at'",
    check: `delay_ms BETWEEN 0 AND ${MAX_DURATION_MS}`,
  },
  {name: 'chk_outbox_max_retries', column: 'max_retries SMALLINT NULL', check: `max_retries BETWEEN 0 AND ${MAX_RETRIES_LIMIT}`},
  {name: 'chk_outbox_timeout_ms', column: 'timeout_ms BIGINT NULL', check: `timeout_ms BETWEEN 1 AND ${MAX_DURATION_MS}`},
  {name: 'chk_outbox_attempts', column: 'attempts INT NOT NULL DEFAULT 0', check: 'attempts >= 0'},
] as const;

export const OUTBOX_DDL = `CREATE TABLE IF NOT EXISTS task_outbox (
  id            BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  task_id       CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'optional UUID; default derived from the row',
  type          VARCHAR(64) NOT NULL COMMENT 'domain_action',
  payload       MEDIUMTEXT NOT NULL COMMENT 'a JSON object',
  run_at        DATETIME(3) NULL COMMENT 'UTC; exclusive with delay_ms',
  delay_ms      BIGINT NULL COMMENT 'counted from created_at',
  pool          VARCHAR(8) NULL COMMENT 'io (default) or cpu',
  priority      VARCHAR(8) NULL COMMENT 'high, normal (default) or low',
  max_retries   SMALLINT NULL,
  timeout_ms    BIGINT NULL,
  dedup_key     VARCHAR(191) NULL,
  task_key      VARCHAR(128) NULL COMMENT 'who the task is for, e.g. tenant:42 (TaskSpec.key)',
  traceparent   VARCHAR(55) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'W3C trace context of the writer (optional)',
  tracestate    VARCHAR(512) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'W3C tracestate (optional)',
  deps          TEXT NULL COMMENT 'JSON {after: [task ids], onParentFailure} (TaskSpec.after)',
  created_at    DATETIME(3) NOT NULL DEFAULT (UTC_TIMESTAMP(3)) COMMENT 'UTC, whatever the session time zone',
  sent_at       DATETIME(3) NULL COMMENT 'set by the relay once the task is in ax (and rung when due)',
  claimed_by    VARCHAR(128) NULL,
  claimed_until DATETIME(3) NULL,
  attempts      INT NOT NULL DEFAULT 0,
  last_error    TEXT NULL,
  failed_at     DATETIME(3) NULL COMMENT 'set when the row can never be relayed (see last_error)',
  PRIMARY KEY (id),
  KEY idx_outbox_unsent (sent_at, failed_at, id),
${OUTBOX_CHECKS.map((c) => `  CONSTRAINT ${c.name} CHECK (${c.check})`).join(',\n')}
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;

/** Columns a producer may write (the rest belong to the relay). */
export const OUTBOX_PRODUCER_COLUMNS = [
  'task_id',
  'type',
  'payload',
  'run_at',
  'delay_ms',
  'pool',
  'priority',
  'max_retries',
  'timeout_ms',
  'dedup_key',
  'task_key',
  'traceparent',
  'tracestate',
  'deps',
] as const;

/**
 * The columns added to task_outbox after its first release, each with its definition: `ax migrate
 * --outbox` adds those missing (one ALTER, instant on MariaDB 10.3+/MySQL 8.0). Until then the
 * relay reads a missing one as NULL, and enqueueInTransaction writes it only for a task that sets it.
 */
export const OUTBOX_ADDED_COLUMNS = [
  {name: 'priority', column: "priority VARCHAR(8) NULL COMMENT 'high, normal (default) or low'"},
  {name: 'task_key', column: "task_key VARCHAR(128) NULL COMMENT 'who the task is for, e.g. tenant:42 (TaskSpec.key)'"},
  {
    name: 'traceparent',
    column: "traceparent VARCHAR(55) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'W3C trace context of the writer (optional)'",
  },
  {name: 'tracestate', column: "tracestate VARCHAR(512) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'W3C tracestate (optional)'"},
  {name: 'deps', column: "deps TEXT NULL COMMENT 'JSON {after: [task ids], onParentFailure} (TaskSpec.after)'"},
] as const;

/** Which of OUTBOX_ADDED_COLUMNS task_outbox has (params: none; reads information_schema). */
export const OUTBOX_ADDED_PRESENT_SQL = `SELECT COLUMN_NAME AS name FROM information_schema.COLUMNS
  WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'task_outbox' AND COLUMN_NAME IN (${OUTBOX_ADDED_COLUMNS.map((c) => `'${c.name}'`).join(', ')})`;

/** The ALTER adding the columns missing from `present`; null when none is missing. */
export function outboxColumnsUpgradeSql(present: ReadonlySet<string>): string | null {
  const missing = OUTBOX_ADDED_COLUMNS.filter((c) => !present.has(c.name));
  if (missing.length === 0) return null;
  return `ALTER TABLE task_outbox ${missing.map((c) => `ADD COLUMN ${c.column}`).join(', ')}`;
}

/** The names of task_outbox's CHECK constraints present (params: none; reads information_schema). */
export const OUTBOX_CHECKS_PRESENT_SQL = `SELECT CONSTRAINT_NAME AS name FROM information_schema.TABLE_CONSTRAINTS
  WHERE CONSTRAINT_SCHEMA = DATABASE() AND TABLE_NAME = 'task_outbox' AND CONSTRAINT_TYPE = 'CHECK'`;

/**
 * The upgrade of a task_outbox made before the CHECK constraints: one ALTER (atomic) that widens
 * the columns and adds the constraints missing from `present`; null when none is missing.
 */
export function outboxChecksUpgradeSql(present: ReadonlySet<string>): string | null {
  const missing = OUTBOX_CHECKS.filter((c) => !present.has(c.name));
  if (missing.length === 0) return null;
  return `ALTER TABLE task_outbox ${[
    ...missing.map((c) => `MODIFY ${c.column}`),
    ...missing.map((c) => `ADD CONSTRAINT ${c.name} CHECK (${c.check})`),
  ].join(', ')}`;
}

/** Up to 20 ids of rows the missing constraints would refuse (params: none); the upgrade waits for them to be fixed. */
export function outboxViolationsSql(present: ReadonlySet<string>): string {
  const missing = OUTBOX_CHECKS.filter((c) => !present.has(c.name));
  return `SELECT id FROM task_outbox WHERE ${missing.map((c) => `NOT (${c.check})`).join(' OR ')} ORDER BY id LIMIT 20`;
}
