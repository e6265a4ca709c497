/**
 * Numbered, forward-only migrations of ax's own database. Never edit a released entry: add a new
 * one. Each statement runs on its own (MySQL DDL commits implicitly), so every statement must be
 * safe to re-run after a crash half-way (IF NOT EXISTS everywhere).
 */
/** A statement, optionally skipped when `unless` (a SELECT) returns a row: makes ALTERs re-runnable. */
export type MigrationStatement = string | {sql: string; unless: string};

export interface Migration {
  version: number;
  name: string;
  statements: MigrationStatement[];
}

const columnExists = (table: string, column: string): string =>
  `SELECT 1 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '${table}' AND COLUMN_NAME = '${column}'`;
const indexExists = (table: string, index: string): string =>
  `SELECT 1 FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '${table}' AND INDEX_NAME = '${index}'`;

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'tasks, history, workers',
    statements: [
      `CREATE TABLE IF NOT EXISTS tasks (
        id            CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        cell          VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'default',
        type          VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        pool          ENUM('io','cpu') NOT NULL DEFAULT 'io',
        state         ENUM('submitted','running','succeeded','failed','dead','cancelled') NOT NULL,
        attempt       SMALLINT UNSIGNED NOT NULL DEFAULT 0,
        max_retries   SMALLINT UNSIGNED NOT NULL,
        run_at        DATETIME(3) NOT NULL,
        timeout_ms    INT UNSIGNED NULL,
        lease_until   DATETIME(3) NULL,
        fence         INT UNSIGNED NOT NULL DEFAULT 0,
        worker        VARCHAR(128) NULL,
        dedup_key     VARCHAR(191) NULL,
        content_hash  CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        last_error    TEXT NULL,
        published_at  DATETIME(3) NULL,
        created_at    DATETIME(3) NOT NULL,
        updated_at    DATETIME(3) NOT NULL,
        finished_at   DATETIME(3) NULL,
        payload       MEDIUMTEXT NOT NULL,
        PRIMARY KEY (id),
        UNIQUE KEY uq_tasks_dedup (cell, dedup_key),
        KEY idx_tasks_due (cell, state, run_at),
        KEY idx_tasks_lease (cell, state, lease_until),
        KEY idx_tasks_created (cell, created_at),
        KEY idx_tasks_type_state (cell, type, state)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
      `CREATE TABLE IF NOT EXISTS task_history (
        seq        BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
        task_id    CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        from_state ENUM('submitted','running','succeeded','failed','dead','cancelled') NULL,
        to_state   ENUM('submitted','running','succeeded','failed','dead','cancelled') NOT NULL,
        attempt    SMALLINT UNSIGNED NOT NULL,
        worker     VARCHAR(128) NULL,
        at         DATETIME(3) NOT NULL,
        error      TEXT NULL,
        PRIMARY KEY (seq),
        KEY idx_history_task (task_id, seq)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
      `CREATE TABLE IF NOT EXISTS workers (
        id           VARCHAR(128) NOT NULL,
        cell         VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        host         VARCHAR(255) NOT NULL,
        pid          INT UNSIGNED NOT NULL,
        pools        VARCHAR(255) NOT NULL,
        in_flight    INT UNSIGNED NOT NULL DEFAULT 0,
        started_at   DATETIME(3) NOT NULL,
        heartbeat_at DATETIME(3) NOT NULL,
        stopped_at   DATETIME(3) NULL,
        PRIMARY KEY (id),
        KEY idx_workers_cell (cell, heartbeat_at)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
    ],
  },
  {
    version: 2,
    name: 'scheduler claims, cron schedules',
    statements: [
      {
        // Which scheduler holds a delayed task in its timing wheel, until when; and the cron
        // schedule an occurrence belongs to.
        sql: `ALTER TABLE tasks
          ADD COLUMN sched_owner VARCHAR(128) NULL AFTER worker,
          ADD COLUMN sched_until DATETIME(3) NULL AFTER sched_owner,
          ADD COLUMN schedule_name VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL AFTER dedup_key`,
        unless: columnExists('tasks', 'sched_owner'),
      },
      {sql: 'CREATE INDEX idx_tasks_schedule ON tasks (cell, schedule_name, run_at)', unless: indexExists('tasks', 'idx_tasks_schedule')},
      // The scheduler's load: unpublished, due-soon submitted/failed rows, without scanning a
      // backlog of already-rung ones.
      {
        sql: 'CREATE INDEX idx_tasks_dispatch ON tasks (cell, published_at, state, run_at)',
        unless: indexExists('tasks', 'idx_tasks_dispatch'),
      },
      `CREATE TABLE IF NOT EXISTS cron_schedules (
        cell          VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        name          VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        cron          VARCHAR(200) NOT NULL,
        tz            VARCHAR(64) NOT NULL,
        type          VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        payload       MEDIUMTEXT NOT NULL,
        pool          ENUM('io','cpu') NOT NULL DEFAULT 'io',
        max_retries   SMALLINT UNSIGNED NULL,
        timeout_ms    INT UNSIGNED NULL,
        overlap       ENUM('allow','skip') NOT NULL DEFAULT 'allow',
        misfire       ENUM('skip','fire-once') NOT NULL DEFAULT 'fire-once',
        paused        TINYINT(1) NOT NULL DEFAULT 0,
        next_fire_at  DATETIME(3) NULL,
        last_fire_at  DATETIME(3) NULL,
        last_task_id  CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NULL,
        created_at    DATETIME(3) NOT NULL,
        updated_at    DATETIME(3) NOT NULL,
        PRIMARY KEY (cell, name),
        KEY idx_cron_due (cell, paused, next_fire_at)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
    ],
  },
  {
    version: 3,
    name: 'fewer indexes on tasks',
    statements: [
      // Every index is written on every state change. Running rows are few (in-flight work), so the
      // rescuer's scan of state = 'running' through idx_tasks_due is cheap; a schedule's previous
      // occurrence is found through its dedup key (uq_tasks_dedup), whose fire times sort as text.
      {
        sql: 'DROP INDEX idx_tasks_lease ON tasks',
        unless: `SELECT 1 FROM DUAL WHERE NOT EXISTS (${indexExists('tasks', 'idx_tasks_lease')})`,
      },
      {
        sql: 'DROP INDEX idx_tasks_schedule ON tasks',
        unless: `SELECT 1 FROM DUAL WHERE NOT EXISTS (${indexExists('tasks', 'idx_tasks_schedule')})`,
      },
    ],
  },
  {
    version: 4,
    name: 'stack of each failed attempt in history',
    statements: [
      {
        // The first lines of the error's stack, for the history row of a failed or dead attempt only.
        sql: 'ALTER TABLE task_history ADD COLUMN stack TEXT NULL AFTER error',
        unless: columnExists('task_history', 'stack'),
      },
    ],
  },
  {
    version: 5,
    name: 'audit trail of admin actions, retry budget of replayed tasks',
    statements: [
      {
        // Attempts used before the latest DLQ replay: the retry budget and the backoff count from it
        // (attempt − retry_base), while `attempt` keeps counting so the timeline stays readable.
        sql: 'ALTER TABLE tasks ADD COLUMN retry_base SMALLINT UNSIGNED NOT NULL DEFAULT 0 AFTER max_retries',
        unless: columnExists('tasks', 'retry_base'),
      },
      // Append-only: one row per admin action that changed tasks, written in the transaction of the
      // change. `filter` is the command's selection as JSON; `task_ids` a JSON array of the ids
      // (null past AUDIT_MAX_IDS, when `filter` and `at` are the reference).
      `CREATE TABLE IF NOT EXISTS admin_audit (
        id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
        cell        VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        at          DATETIME(3) NOT NULL,
        operator    VARCHAR(255) NOT NULL,
        command     VARCHAR(64) NOT NULL,
        filter      TEXT NOT NULL,
        reason      TEXT NULL,
        task_count  INT UNSIGNED NOT NULL,
        task_ids    MEDIUMTEXT NULL,
        PRIMARY KEY (id),
        KEY idx_audit_cell (cell, id)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
    ],
  },
  {
    version: 6,
    name: 'forced replays seen by the handler',
    statements: [
      {
        // JSON {by, at, reason} of the latest `dlq replay --force`, read by the claim into ctx.replay;
        // NULL for tasks never force-replayed, and set back to NULL by a plain replay.
        sql: 'ALTER TABLE tasks ADD COLUMN replay TEXT NULL AFTER retry_base',
        unless: columnExists('tasks', 'replay'),
      },
    ],
  },
  {
    version: 7,
    name: 'failed and dead attempts by time, for ax errors',
    statements: [
      {
        // `ax errors` reads the failed and dead transitions of a time window; without it, a full scan
        // of task_history (the largest table). Built online (InnoDB, no table lock); one more
        // secondary-index entry per history row (about 16 bytes) in the batched history inserts.
        sql: 'ALTER TABLE task_history ADD INDEX idx_history_failures (to_state, at), ALGORITHM=INPLACE, LOCK=NONE',
        unless: indexExists('task_history', 'idx_history_failures'),
      },
    ],
  },
  {
    version: 10,
    name: 'per-type counters in worker heartbeats',
    statements: [
      {
        // Each heartbeat writes the worker's cumulative per-type counters (JSON, see WorkerStatsDoc)
        // and keeps the previous heartbeat's beside them, so one read of the registry gives a rate
        // per worker and type: (stats − prev_stats) / (heartbeat_at − prev_heartbeat_at).
        sql: `ALTER TABLE workers
          ADD COLUMN stats MEDIUMTEXT NULL,
          ADD COLUMN prev_stats MEDIUMTEXT NULL,
          ADD COLUMN prev_heartbeat_at DATETIME(3) NULL`,
        unless: columnExists('workers', 'stats'),
      },
    ],
  },
  {
    version: 11,
    name: 'the dead-letter scan watermark, shared by the schedulers of a cell',
    statements: [
      // One row per cell: deaths before scanned_until have been reported. Advanced by a
      // compare-and-set, so a restarted scheduler resumes where the cell's scan stopped and two
      // replicas report each death once.
      `CREATE TABLE IF NOT EXISTS dlq_scan (
        cell          VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        scanned_until DATETIME(3) NOT NULL,
        updated_at    DATETIME(3) NOT NULL,
        PRIMARY KEY (cell)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
    ],
  },
  {
    version: 12,
    name: 'backlog per type from one covering index',
    statements: [
      {
        // The backlog per type (due, delayed, running, dead, oldest due) is an index-only range over
        // the small states, grouped in index order: no primary-key lookup per live task, no
        // temporary table. It replaces idx_tasks_type_state (cell, type, state), whose users — the
        // type filters of tasks list, dlq and cancel-many — get the same range with state leading,
        // so a state change still updates as many indexes as before (docs/queries.md, backlog).
        sql: `ALTER TABLE tasks ADD INDEX idx_tasks_state_type (cell, state, type, run_at), DROP INDEX idx_tasks_type_state,
          ALGORITHM=INPLACE, LOCK=NONE`,
        unless: indexExists('tasks', 'idx_tasks_state_type'),
      },
    ],
  },
  {
    version: 8,
    name: 'task type registry: pause, breaker state, settings; handler types of workers; parked tasks',
    statements: [
      // One row per task type of the cell seen by a worker (its handlers) or an operator (pause, set).
      // settings: JSON of the type's limits and breaker thresholds (core/flow/settings.ts); breaker_*:
      // the cluster-wide breaker (closed | open | half_open), the time of its next probe and how often
      // it opened in a row (the cool-down grows with it).
      `CREATE TABLE IF NOT EXISTS task_types (
        cell               VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        type               VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        paused             TINYINT(1) NOT NULL DEFAULT 0,
        paused_by          VARCHAR(255) NULL,
        paused_reason      TEXT NULL,
        paused_at          DATETIME(3) NULL,
        settings           TEXT NULL,
        breaker_state      ENUM('closed','open','half_open') NOT NULL DEFAULT 'closed',
        breaker_until      DATETIME(3) NULL,
        breaker_openings   INT UNSIGNED NOT NULL DEFAULT 0,
        breaker_changed_at DATETIME(3) NULL,
        created_at         DATETIME(3) NOT NULL,
        updated_at         DATETIME(3) NOT NULL,
        PRIMARY KEY (cell, type)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
      // Append-only: what happened to a type (paused, resumed, breaker transitions), newest last.
      `CREATE TABLE IF NOT EXISTS task_type_history (
        seq     BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
        cell    VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        type    VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        at      DATETIME(3) NOT NULL,
        event   VARCHAR(32) NOT NULL,
        actor   VARCHAR(255) NOT NULL,
        detail  TEXT NULL,
        PRIMARY KEY (seq),
        KEY idx_type_history (cell, type, seq)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
      {
        // JSON array of the task types the worker has handlers for, written on start and with each heartbeat.
        sql: 'ALTER TABLE workers ADD COLUMN types TEXT NULL',
        unless: columnExists('workers', 'types'),
      },
      {
        // Why a waiting task is parked (paused | breaker | unhandled; NULL: not parked) and since when
        // (kept across re-parks of the same kind, cleared by the claim). Last columns: an instant ADD
        // on MariaDB 10.3+/MySQL 8.0, no table rebuild.
        sql: 'ALTER TABLE tasks ADD COLUMN parked VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NULL, ADD COLUMN parked_at DATETIME(3) NULL',
        unless: columnExists('tasks', 'parked'),
      },
    ],
  },
  {
    version: 9,
    name: 'attempt outcomes per type and second, for the cluster-wide circuit breaker',
    statements: [
      // One row per (type, second, worker): each worker adds its batch's counts to its own row in the
      // outcome transaction (no lock shared between workers); breakers sum the rows of a window.
      // Rows older than the longest window are purged by the workers (a few thousand at a time).
      `CREATE TABLE IF NOT EXISTS type_outcomes (
        cell    VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        type    VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        second  DATETIME NOT NULL,
        worker  VARCHAR(128) NOT NULL,
        ok      INT UNSIGNED NOT NULL DEFAULT 0,
        failed  INT UNSIGNED NOT NULL DEFAULT 0,
        PRIMARY KEY (cell, type, second, worker),
        KEY idx_type_outcomes_second (cell, second)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
    ],
  },
  {
    version: 15,
    name: 'big payloads stored apart from the hot task row',
    statements: [
      // A claim check: a payload longer than AX_PAYLOAD_INLINE bytes lives here, compressed, and its
      // task row keeps payload = '' (never a valid payload: payloads are JSON objects). body is in
      // the format of COMPRESS() (4-byte little-endian length of the text, then a zlib stream), so
      // UNCOMPRESS(body) reads it in SQL. Written and deleted with the task row, in its transaction.
      `CREATE TABLE IF NOT EXISTS task_payloads (
        task_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        body    MEDIUMBLOB NOT NULL,
        PRIMARY KEY (task_id)
      ) ENGINE=InnoDB`,
    ],
  },
  {
    version: 13,
    name: 'the shared token bucket of rate-limited task types',
    statements: [
      {
        // The rate limit of a type (settings.rate, core/flow/limits.ts) is a token bucket shared by
        // every worker of the cell: its tokens (below zero: slots reserved for deferred tasks) at
        // rate_at (database clock). Read and written by the claim with the row locked. NULL: full.
        // Last columns: an instant ADD, no table rebuild.
        sql: 'ALTER TABLE task_types ADD COLUMN rate_tokens DOUBLE NULL, ADD COLUMN rate_at DATETIME(3) NULL',
        unless: columnExists('task_types', 'rate_tokens'),
      },
    ],
  },
  {
    version: 14,
    name: 'priority levels of tasks and cron schedules',
    statements: [
      {
        // The level whose queue the task is rung on (core/task/model.ts PRIORITIES): the scheduler,
        // reconciler, relay and workers re-ring at the row's level. Last column, with a default: an
        // instant ADD on MariaDB 10.3+/MySQL 8.0, no table rebuild; existing rows are `normal`.
        sql: "ALTER TABLE tasks ADD COLUMN priority ENUM('high','normal','low') NOT NULL DEFAULT 'normal'",
        unless: columnExists('tasks', 'priority'),
      },
      {
        // The level of every occurrence a schedule fires.
        sql: "ALTER TABLE cron_schedules ADD COLUMN priority ENUM('high','normal','low') NOT NULL DEFAULT 'normal'",
        unless: columnExists('cron_schedules', 'priority'),
      },
    ],
  },
  {
    version: 16,
    name: 'the probes a half-open breaker let through, counted cluster-wide',
    statements: [
      {
        // The probe episode (core/flow/admission.ts probeEpisode) whose probes_used the claims have
        // spent, written by the claim with the row locked for update. Another episode: none spent.
        // Last columns, with a default: an instant ADD, no table rebuild.
        sql: 'ALTER TABLE task_types ADD COLUMN probe_episode DATETIME(3) NULL, ADD COLUMN probes_used INT UNSIGNED NOT NULL DEFAULT 0',
        unless: columnExists('task_types', 'probe_episode'),
      },
    ],
  },
  {
    version: 17,
    name: 'one secondary index of tasks changes with the state, not three',
    statements: [
      {
        // Every state change rewrote an entry in each index holding `state` (delete-mark + insert,
        // then purge): with three of them that was ~40 % of MariaDB's CPU per task end to end
        // (docs/benchmarks.md, "One index that changes with the state"). Now:
        // - idx_tasks_due gains `type` last and takes idx_tasks_state_type's readers (the backlog
        //   per type stays covering);
        // - idx_tasks_dispatch drops `state`: its only reader (the scheduler's load of unrung due
        //   rows) needs `published_at IS NULL`, which holds only for claimable rows since the
        //   claim, cancel and dead-letter transitions mark a row that was never rung (below); a
        //   claim or an outcome no longer touches it.
        // One ALTER, so a crash leaves either shape; re-run skips it once `type` is in idx_tasks_due.
        sql: `ALTER TABLE tasks DROP INDEX idx_tasks_due, ADD INDEX idx_tasks_due (cell, state, run_at, type),
                DROP INDEX idx_tasks_dispatch, ADD INDEX idx_tasks_dispatch (cell, published_at, run_at),
                DROP INDEX idx_tasks_state_type, ALGORITHM=INPLACE, LOCK=NONE`,
        unless: `SELECT 1 FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'tasks'
                   AND INDEX_NAME = 'idx_tasks_due' AND COLUMN_NAME = 'type'`,
      },
      // Rows that left the claimable states unrung (a claim that beat the scheduler's mark, a
      // cancelled delayed task) get the mark the transitions now write, so the scheduler's range
      // of idx_tasks_dispatch holds claimable rows only. Re-runnable: it matches nothing twice.
      // READ COMMITTED for this scan of the table only: it then locks just the rows it changes
      // (under REPEATABLE READ it would hold every row it reads until it ends, stalling workers).
      'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED',
      `UPDATE tasks SET published_at = updated_at WHERE published_at IS NULL AND state NOT IN ('submitted', 'failed')`,
      'SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ',
    ],
  },
  {
    version: 18,
    name: 'history as one row per attempt: the start on the task and outcome rows, the submitter on the task row',
    statements: [
      {
        // The claim records the attempt's start on the task row (worker is already set by it) instead
        // of writing a `running` history row; the outcome's history row copies it. Last column,
        // nullable: an instant ADD (MariaDB 10.3+, MySQL 8.0), no table rebuild; NULL on rows claimed
        // before this migration, whose attempts have their own `running` history rows.
        sql: 'ALTER TABLE tasks ADD COLUMN started_at DATETIME(3) NULL, ALGORITHM=INSTANT',
        unless: columnExists('tasks', 'started_at'),
      },
      {
        // The start of the attempt an outcome row ends (running → succeeded, failed, dead, or handed
        // back), copied from tasks.started_at; its `worker` is the worker the attempt ran on. NULL on
        // other transitions and on rows written before this migration. Instant, like the above.
        sql: 'ALTER TABLE task_history ADD COLUMN started_at DATETIME(3) NULL, ALGORITHM=INSTANT',
        unless: columnExists('task_history', 'started_at'),
      },
      {
        // A task's creation is its row: created_at, and who submitted it (the producer's, relay's or
        // scheduler's actor), written by the INSERT instead of a `submitted` history row. NULL on
        // rows inserted before this migration, whose creation is their first history row. Instant.
        sql: 'ALTER TABLE tasks ADD COLUMN submitted_by VARCHAR(128) NULL, ALGORITHM=INSTANT',
        unless: columnExists('tasks', 'submitted_by'),
      },
    ],
  },
  {
    version: 19,
    name: 'task keys: per-key limits and fair dispatch',
    statements: [
      {
        // Who a task is for (tenant, customer): TaskSpec.key. Last column, nullable: instant.
        sql: 'ALTER TABLE tasks ADD COLUMN task_key VARCHAR(128) NULL, ALGORITHM=INSTANT',
        unless: columnExists('tasks', 'task_key'),
      },
      // The claim's per-key reads range over virtual columns and their index, both opt-in (`ax
      // migrate --task-keys`, keys-index.ts): every INSERT would pay for them, keyed or not.
      // The token bucket per (type, key) of a type with a rate per key, like task_types' own.
      // full_at: when it is full again (no slot reserved): from then on the row says nothing a
      // missing row does not (a full bucket), and the flow refresh deletes it.
      `CREATE TABLE IF NOT EXISTS task_key_buckets (
        cell     VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        type     VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        task_key VARCHAR(128) NOT NULL,
        tokens   DOUBLE NOT NULL,
        at       DATETIME(3) NOT NULL,
        full_at  DATETIME(3) NOT NULL,
        PRIMARY KEY (cell, type, task_key),
        KEY idx_key_buckets_full (cell, full_at)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
      {
        // The key of every occurrence of a schedule (ax cron add --key). Instant.
        sql: 'ALTER TABLE cron_schedules ADD COLUMN task_key VARCHAR(128) NULL, ALGORITHM=INSTANT',
        unless: columnExists('cron_schedules', 'task_key'),
      },
      {
        // Fair dispatch's round-robin position per type: the key served last and how many of its
        // weight it has had in its current turn.
        sql: 'ALTER TABLE task_types ADD COLUMN fair_key VARCHAR(128) NULL, ADD COLUMN fair_taken INT NOT NULL DEFAULT 0, ALGORITHM=INSTANT',
        unless: columnExists('task_types', 'fair_key'),
      },
    ],
  },
  {
    version: 20,
    name: 'debounce and throttle gates',
    statements: [
      // One row per (cell, type, key, kind) ever debounced or throttled: the task it keeps and, for
      // a throttle, the end of its window (a debounce's is its task's due time, for reading only).
      // The producer's insert transaction locks the row (INSERT … ON DUPLICATE KEY UPDATE) before
      // it decides, so concurrent producers of one key take turns. A window is open while
      // until > NOW(3): a stale row is simply overwritten by the next submit, no cleanup needed.
      `CREATE TABLE IF NOT EXISTS task_gates (
        cell     VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        type     VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        gate_key VARCHAR(128) NOT NULL,
        kind     ENUM('debounce','throttle') NOT NULL,
        task_id  CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        until    DATETIME(3) NOT NULL,
        PRIMARY KEY (cell, type, gate_key, kind)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
    ],
  },
  {
    version: 21,
    name: 'task results and progress',
    statements: [
      {
        // The JSON text a handler returned with its success (≤ 64 KiB, core/worker/results.ts), and
        // the last progress it reported (0..100, a note, when written). Last columns, nullable:
        // instant, and a row that uses neither costs nothing.
        sql: `ALTER TABLE tasks ADD COLUMN result_json MEDIUMTEXT NULL, ADD COLUMN progress TINYINT UNSIGNED NULL,
              ADD COLUMN progress_note VARCHAR(200) NULL, ADD COLUMN progress_at DATETIME(3) NULL, ALGORITHM=INSTANT`,
        unless: columnExists('tasks', 'result_json'),
      },
    ],
  },
  {
    version: 22,
    name: 'task dependencies and batches with a callback',
    statements: [
      {
        // deps_left: parents a waiting task still waits for (> 0 only while it waits; its run_at is
        // then WAITING_RUN_AT, which no due scan reaches). links: bit flags, read by the claim so an
        // outcome touches task_deps/task_batches only for the rows that have any (core/store/mysql/
        // links.ts): 1 has dependents, 2 has parents, 4 batch member, 8 batch callback. batch_id:
        // the batch of a member or callback. Last columns, with defaults: instant.
        sql: `ALTER TABLE tasks ADD COLUMN deps_left SMALLINT UNSIGNED NOT NULL DEFAULT 0, ADD COLUMN links TINYINT UNSIGNED NOT NULL DEFAULT 0,
                ADD COLUMN batch_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NULL, ALGORITHM=INSTANT`,
        unless: columnExists('tasks', 'links'),
      },
      // One row per edge parent → child. state: waiting until the parent ends, then how it ended
      // (set by the guarded UPDATE of the parent's outcome transaction, once: a replayed parent that
      // ends again finds no waiting edge). run_on_failure: the child's onParentFailure is 'run'.
      `CREATE TABLE IF NOT EXISTS task_deps (
        parent         CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        child          CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        run_on_failure TINYINT UNSIGNED NOT NULL DEFAULT 0,
        state          ENUM('waiting','succeeded','dead','cancelled') NOT NULL DEFAULT 'waiting',
        PRIMARY KEY (parent, child),
        KEY idx_task_deps_child (child)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
      // A batch: its members' terminal counts, bumped in their outcome transactions; the callback is
      // released (done_at set) in the transaction where the counts reach total.
      `CREATE TABLE IF NOT EXISTS task_batches (
        id          CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        cell        VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        callback_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        total       INT UNSIGNED NOT NULL,
        succeeded   INT UNSIGNED NOT NULL DEFAULT 0,
        dead        INT UNSIGNED NOT NULL DEFAULT 0,
        cancelled   INT UNSIGNED NOT NULL DEFAULT 0,
        created_at  DATETIME(3) NOT NULL,
        done_at     DATETIME(3) NULL,
        PRIMARY KEY (id),
        KEY idx_task_batches_cell (cell, created_at)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
    ],
  },
  {
    version: 23,
    name: 'trace context of tasks',
    statements: [
      {
        // The W3C trace context active at a task's submit (traceparent, tracestate): the worker's
        // attempt span continues it. Nullable, last columns: instant; NULL for untraced tasks.
        sql: `ALTER TABLE tasks ADD COLUMN traceparent CHAR(55) CHARACTER SET ascii COLLATE ascii_bin NULL,
                ADD COLUMN tracestate VARCHAR(512) CHARACTER SET ascii COLLATE ascii_bin NULL, ALGORITHM=INSTANT`,
        unless: columnExists('tasks', 'traceparent'),
      },
    ],
  },
  {
    version: 24,
    name: 'indexed payload fields',
    statements: [
      // The payload fields operators search by, each a virtual column and an index of tasks and of
      // task_payloads, added and dropped by `ax payload-index` (payload-index.ts), not here: every
      // task pays for each at insert. building until both indexes exist, then ready.
      `CREATE TABLE IF NOT EXISTS payload_indexes (
        id         SMALLINT UNSIGNED NOT NULL AUTO_INCREMENT,
        field      VARCHAR(600) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
        state      ENUM('building','ready') NOT NULL,
        created_at DATETIME(3) NOT NULL,
        created_by VARCHAR(128) NULL,
        PRIMARY KEY (id),
        UNIQUE KEY uq_payload_indexes_field (field)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
    ],
  },
];

export const LATEST_VERSION = MIGRATIONS.reduce((m, x) => Math.max(m, x.version), 0);
