import type {
  OutboxClaimParams,
  OutboxLag,
  OutboxListParams,
  OutboxMarkFailedParams,
  OutboxMarkSentParams,
  OutboxPurgeSentParams,
  OutboxReleaseParams,
  OutboxRetryFailedParams,
  OutboxRow,
  OutboxRowStatesParams,
  OutboxStore,
} from '../types.js';
import {type Db, type DbOptions, type Row, dbUnavailable, driverCode, exec, outboxScoped, marks, openDb, select, tx} from './db.js';
import {clipError} from './rows.js';
import {likeLiteral} from './where.js';
import type {TypeSelector} from '../../cells/cells.js';
import {AxError} from '../../errors.js';
import {
  OUTBOX_ADDED_COLUMNS,
  OUTBOX_ADDED_PRESENT_SQL,
  OUTBOX_CHECKS_PRESENT_SQL,
  OUTBOX_DDL,
  outboxChecksUpgradeSql,
  outboxColumnsUpgradeSql,
  outboxViolationsSql,
} from '../../outbox/schema.js';

/**
 * The columns read into an OutboxRow; a column added since the first release (OUTBOX_ADDED_COLUMNS:
 * priority, task_key, traceparent, tracestate) as NULL on a table `ax migrate --outbox` has not upgraded yet.
 */
const columns = (present: ReadonlySet<string>): string => {
  const added = (c: string): string => (present.has(c) ? c : `NULL AS ${c}`);
  return `id, task_id, type, payload, run_at, delay_ms, pool, ${added('priority')}, max_retries, timeout_ms, dedup_key, ${added('task_key')}, ${added('traceparent')}, ${added('tracestate')}, ${added('deps')}, created_at, attempts, last_error, failed_at`;
};
const ALL_ADDED: ReadonlySet<string> = new Set(OUTBOX_ADDED_COLUMNS.map((c) => c.name));

/**
 * The claim's type filter of a cell's relay (`AND …`, bound parameters only): the types of the
 * selector's exact names and prefixes, or every type but those (negate). A residual filter on the
 * unsent rows idx_outbox_unsent walks: rows of another cell's types are stepped over, not locked.
 */
function typesWhere(t: TypeSelector | undefined): {sql: string; params: string[]} {
  if (t === undefined || t.all) return {sql: '', params: []};
  const parts: string[] = [];
  const params: string[] = [];
  if (t.exact.length > 0) {
    parts.push(`type IN (${marks(t.exact.length)})`);
    params.push(...t.exact);
  }
  for (const p of t.prefixes) {
    parts.push("type LIKE CONCAT(?, '%') ESCAPE '\\\\'");
    params.push(likeLiteral(p));
  }
  const any = parts.length === 0 ? 'FALSE' : `(${parts.join(' OR ')})`;
  return {sql: ` AND ${t.negate ? `NOT ${any}` : any}`, params};
}

function toRow(r: Row): OutboxRow {
  const n = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
  return {
    id: Number(r.id),
    taskId: (r.task_id as string | null) ?? null,
    type: String(r.type),
    payload: String(r.payload),
    runAt: (r.run_at as Date | null) ?? null,
    delayMs: n(r.delay_ms),
    pool: (r.pool as string | null) ?? null,
    priority: (r.priority as string | null) ?? null,
    maxRetries: n(r.max_retries),
    timeoutMs: n(r.timeout_ms),
    dedupKey: (r.dedup_key as string | null) ?? null,
    key: (r.task_key as string | null) ?? null,
    traceparent: (r.traceparent as string | null) ?? null,
    tracestate: (r.tracestate as string | null) ?? null,
    deps: (r.deps as string | null | undefined) ?? null,
    createdAt: r.created_at as Date,
    attempts: Number(r.attempts),
    lastError: (r.last_error as string | null) ?? null,
    failedAt: (r.failed_at as Date | null) ?? null,
  };
}

/** The outbox seams on the business database's MySQL/MariaDB (10.6+ for SKIP LOCKED). */
export class MysqlOutboxStore implements OutboxStore {
  private closing: Promise<void> | undefined;
  readonly database: string;
  /** The SELECT list of outbox rows, fixed at open by which added columns the table has. */
  private rowColumns = columns(ALL_ADDED);
  private constructor(readonly db: Db) {
    this.database = db.database;
  }

  /**
   * Opens the business database. Unless `requireTable` is false (migrations), checks that
   * task_outbox exists and throws AxError('unavailable') naming `ax migrate --outbox` if not. On a
   * table that lacks a column added since (priority, task_key), rows read it as NULL until the migration.
   */
  static async open(opts: DbOptions & {requireTable?: boolean}): Promise<MysqlOutboxStore> {
    let db: Db;
    try {
      db = await openDb(opts);
    } catch (e) {
      if (driverCode(e) === 'ER_BAD_DB_ERROR') {
        throw dbUnavailable(
          'unknown_database',
          'the business database named in AX_OUTBOX_MYSQL_URL (default AX_MYSQL_URL) does not exist: ax never creates it',
          e,
          'outbox',
        );
      }
      throw outboxScoped(e);
    }
    const store = new MysqlOutboxStore(db);
    if (await store.outboxTableExists()) {
      const present = new Set((await select(db, db.pool, OUTBOX_ADDED_PRESENT_SQL)).map((r) => String(r.name)));
      store.rowColumns = columns(present);
    } else if (opts.requireTable !== false) {
      await db.pool.end().catch(() => undefined);
      throw dbUnavailable(
        'not_migrated',
        `task_outbox does not exist in database ${db.database}: create it with \`ax migrate --outbox\``,
        undefined,
        'outbox',
      );
    }
    return store;
  }

  /** Whether task_outbox exists in the business database (`ax migrate --outbox --status`). */
  async outboxTableExists(): Promise<boolean> {
    const rows = await select(
      this.db,
      this.db.pool,
      "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'task_outbox'",
    );
    return rows.length > 0;
  }

  /**
   * Creates `task_outbox` if missing, and gives a table made before them its CHECK constraints
   * (`ax migrate --outbox`; re-runnable). Throws AxError('invalid_input'), changing nothing, when
   * existing rows break a constraint (their ids are in the message).
   */
  async outboxCreateTable(): Promise<void> {
    await exec(this.db, this.db.pool, OUTBOX_DDL);
    const added = outboxColumnsUpgradeSql(
      new Set((await select(this.db, this.db.pool, OUTBOX_ADDED_PRESENT_SQL)).map((r) => String(r.name))),
    );
    if (added !== null) await exec(this.db, this.db.pool, added);
    this.rowColumns = columns(ALL_ADDED);
    const present = new Set((await select(this.db, this.db.pool, OUTBOX_CHECKS_PRESENT_SQL)).map((r) => String(r.name)));
    const upgrade = outboxChecksUpgradeSql(present);
    if (upgrade === null) return;
    const bad = (await select(this.db, this.db.pool, outboxViolationsSql(present))).map((r) => Number(r.id));
    if (bad.length > 0) {
      throw new AxError(
        'invalid_input',
        `task_outbox has rows out of range for its new CHECK constraints (ids ${bad.join(', ')}${bad.length === 20 ? ', …' : ''}): ` +
          'delay_ms and timeout_ms must be 0/1 ms to 366 days, max_retries 0 to 100, attempts ≥ 0; fix or delete them and run `ax migrate --outbox` again',
        {details: {ids: bad}},
      );
    }
    await exec(this.db, this.db.pool, upgrade);
  }

  /**
   * One short transaction: SELECT … FOR UPDATE SKIP LOCKED (idx_outbox_unsent), then the claim
   * UPDATE. `skip`'s ranges are `NOT (id BETWEEN …)` conditions on the index's id, which InnoDB
   * checks in the index entry (index condition pushdown) before it reads the row.
   */
  outboxClaim({owner, limit, leaseMs, types, skip = []}: OutboxClaimParams): Promise<OutboxRow[]> {
    const byType = typesWhere(types);
    const skipSql = skip.map(() => ' AND NOT (id BETWEEN ? AND ?)').join('');
    return tx(this.db, async (c) => {
      const rows = await select(
        this.db,
        c,
        `SELECT ${this.rowColumns} FROM task_outbox
          WHERE sent_at IS NULL AND failed_at IS NULL AND (claimed_until IS NULL OR claimed_until < NOW(3))${byType.sql}${skipSql}
          ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED`,
        [...byType.params, ...skip.flat(), limit],
      );
      if (rows.length === 0) return [];
      const ids = rows.map((r) => Number(r.id));
      await exec(
        this.db,
        c,
        `UPDATE task_outbox FORCE INDEX (PRIMARY) SET claimed_by = ?, claimed_until = NOW(3) + INTERVAL ? MICROSECOND, attempts = attempts + 1 WHERE id IN (${marks(ids.length)})`,
        [owner, leaseMs * 1000, ...ids],
      );
      return rows.map(toRow);
    });
  }

  async outboxMarkSent({ids, owner}: OutboxMarkSentParams): Promise<number> {
    if (ids.length === 0) return 0;
    const r = await exec(
      this.db,
      this.db.pool,
      `UPDATE task_outbox FORCE INDEX (PRIMARY) SET sent_at = NOW(3), claimed_by = NULL, claimed_until = NULL, last_error = NULL
        WHERE id IN (${marks(ids.length)}) AND claimed_by = ? AND sent_at IS NULL`,
      [...ids, owner],
    );
    return r.affectedRows;
  }

  async outboxMarkFailed({rows, owner}: OutboxMarkFailedParams): Promise<void> {
    for (const r of rows) {
      await exec(
        this.db,
        this.db.pool,
        'UPDATE task_outbox SET failed_at = NOW(3), last_error = ?, claimed_by = NULL, claimed_until = NULL WHERE id = ? AND claimed_by = ?',
        [clipError(r.error), r.id, owner],
      );
    }
  }

  async outboxRelease({ids, owner, error}: OutboxReleaseParams): Promise<void> {
    if (ids.length === 0) return;
    await exec(
      this.db,
      this.db.pool,
      `UPDATE task_outbox SET claimed_by = NULL, claimed_until = NULL, last_error = ? WHERE id IN (${marks(ids.length)}) AND claimed_by = ?`,
      [clipError(error), ...ids, owner],
    );
  }

  async outboxPurgeSent({olderThanMs, limit}: OutboxPurgeSentParams): Promise<number> {
    const r = await exec(
      this.db,
      this.db.pool,
      'DELETE FROM task_outbox WHERE sent_at < NOW(3) - INTERVAL ? MICROSECOND ORDER BY sent_at LIMIT ?',
      [olderThanMs * 1000, limit],
    );
    return r.affectedRows;
  }

  async outboxLag(): Promise<OutboxLag> {
    const [u] = await select(
      this.db,
      this.db.pool,
      'SELECT COUNT(*) AS n, TIMESTAMPDIFF(MICROSECOND, MIN(created_at), NOW(3)) AS age FROM task_outbox WHERE sent_at IS NULL AND failed_at IS NULL',
    );
    const [f] = await select(
      this.db,
      this.db.pool,
      'SELECT COUNT(*) AS n FROM task_outbox WHERE sent_at IS NULL AND failed_at IS NOT NULL',
    );
    return {
      unsent: Number(u?.n ?? 0),
      failed: Number(f?.n ?? 0),
      oldestAgeMs: u?.age === null || u?.age === undefined ? null : Math.round(Number(u.age) / 1000),
    };
  }

  /** Rows not yet sent nor failed, oldest first. */
  async outboxListUnsent({limit}: OutboxListParams): Promise<OutboxRow[]> {
    const rows = await select(
      this.db,
      this.db.pool,
      `SELECT ${this.rowColumns} FROM task_outbox WHERE sent_at IS NULL AND failed_at IS NULL ORDER BY id LIMIT ?`,
      [limit],
    );
    return rows.map(toRow);
  }

  /** Where each row stands: pending, sent or failed (missing ids are absent from the map). */
  async outboxRowStates({ids}: OutboxRowStatesParams): Promise<Map<number, 'pending' | 'sent' | 'failed'>> {
    if (ids.length === 0) return new Map();
    const rows = await select(
      this.db,
      this.db.pool,
      `SELECT id, sent_at IS NOT NULL AS sent, failed_at IS NOT NULL AS failed FROM task_outbox WHERE id IN (${marks(ids.length)})`,
      ids,
    );
    return new Map(rows.map((r) => [Number(r.id), Number(r.sent) ? 'sent' : Number(r.failed) ? 'failed' : 'pending'] as const));
  }

  async outboxListFailed({limit}: OutboxListParams): Promise<OutboxRow[]> {
    const rows = await select(
      this.db,
      this.db.pool,
      `SELECT ${this.rowColumns} FROM task_outbox WHERE sent_at IS NULL AND failed_at IS NOT NULL ORDER BY id LIMIT ?`,
      [limit],
    );
    return rows.map(toRow);
  }

  async outboxRetryFailed({ids}: OutboxRetryFailedParams): Promise<number> {
    if (ids !== 'all' && ids.length === 0) return 0;
    const where = ids === 'all' ? '' : ` AND id IN (${marks(ids.length)})`;
    const r = await exec(
      this.db,
      this.db.pool,
      `UPDATE task_outbox SET failed_at = NULL, claimed_by = NULL, claimed_until = NULL WHERE sent_at IS NULL AND failed_at IS NOT NULL${where}`,
      ids === 'all' ? [] : ids,
    );
    return r.affectedRows;
  }

  /** Ends the pool; idempotent. */
  close(): Promise<void> {
    return (this.closing ??= this.db.pool.end());
  }
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
