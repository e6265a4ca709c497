/**
 * The `task_outbox` table: lives in the BUSINESS database, written by the business service in its
 * own transaction, drained by the relay. This DDL and the column list below are a documented SQL
 * contract (README "Transactional outbox"): a producer in any language may enqueue with a plain
 * INSERT of (type, payload) and optionally the other columns.
 */
export const OUTBOX_TABLE = 'task_outbox';

export const OUTBOX_DDL = `CREATE TABLE IF NOT EXISTS task_outbox (
  id            BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  task_id       CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'optional UUID; default derived from the row',
  type          VARCHAR(64) NOT NULL COMMENT 'domain_action',
  payload       MEDIUMTEXT NOT NULL COMMENT 'a JSON object',
  run_at        DATETIME(3) NULL COMMENT 'UTC; exclusive with delay_ms',
  delay_ms      INT UNSIGNED NULL COMMENT 'counted from created_at',
  pool          VARCHAR(8) NULL COMMENT 'io (default) or cpu',
  max_retries   SMALLINT UNSIGNED NULL,
  timeout_ms    INT UNSIGNED NULL,
  dedup_key     VARCHAR(191) NULL,
  created_at    DATETIME(3) NOT NULL DEFAULT (UTC_TIMESTAMP(3)) COMMENT 'UTC, whatever the session time zone',
  sent_at       DATETIME(3) NULL COMMENT 'set by the relay once the task is in ax (and rung when due)',
  claimed_by    VARCHAR(128) NULL,
  claimed_until DATETIME(3) NULL,
  attempts      INT UNSIGNED NOT NULL DEFAULT 0,
  last_error    TEXT NULL,
  failed_at     DATETIME(3) NULL COMMENT 'set when the row can never be relayed (see last_error)',
  PRIMARY KEY (id),
  KEY idx_outbox_unsent (sent_at, failed_at, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;

/** Columns a producer may write (the rest belong to the relay). */
export const OUTBOX_PRODUCER_COLUMNS = [
  'task_id',
  'type',
  'payload',
  'run_at',
  'delay_ms',
  'pool',
  'max_retries',
  'timeout_ms',
  'dedup_key',
] as const;
