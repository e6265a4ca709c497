import mysql from 'mysql2/promise';
import type {Pool, PoolConnection, ResultSetHeader, RowDataPacket} from 'mysql2/promise';
import {AxError} from '../../errors.js';
import type {DbFailureReason} from '../types.js';
import {redactUrl} from '../../config/config.js';
import {parseMysqlUrl} from '../../config/mysql-url.js';

export type Conn = Pool | PoolConnection;
export type Row = RowDataPacket;
export type {ResultSetHeader, PoolConnection, Pool};

export interface DbOptions {
  url: string;
  /** Create the database when missing (ignored when the user may not). */
  createDatabase: boolean;
  queryTimeoutMs: number;
  /**
   * MariaDB's idle_transaction_timeout for every session of the pool, rounded up to whole seconds
   * (default 5 s): a transaction left idle this long (its process cut off, frozen or killed without
   * the server noticing) is rolled back and its locks freed. MySQL has no such setting and ignores it.
   */
  idleTxTimeoutMs?: number;
  connectionLimit?: number;
}

const DEFAULT_IDLE_TX_TIMEOUT_MS = 5000;

export interface Db {
  pool: Pool;
  database: string;
  queryTimeoutMs: number;
  /** The sessions' idle_transaction_timeout in seconds (DbOptions.idleTxTimeoutMs); absent: the default. */
  idleTxTimeoutS?: number;
  url: string;
}

export type {DbFailureReason} from '../types.js';

const REASONS: Record<string, DbFailureReason> = {
  ECONNREFUSED: 'unreachable',
  ECONNRESET: 'unreachable',
  ETIMEDOUT: 'unreachable',
  EPIPE: 'unreachable',
  ENOTFOUND: 'unreachable',
  EAI_AGAIN: 'unreachable',
  EHOSTUNREACH: 'unreachable',
  PROTOCOL_CONNECTION_LOST: 'unreachable',
  PROTOCOL_SEQUENCE_TIMEOUT: 'unreachable',
  ER_CON_COUNT_ERROR: 'unreachable',
  ER_SERVER_SHUTDOWN: 'unreachable',
  ER_ACCESS_DENIED_ERROR: 'access_denied', // 1045
  ER_ACCESS_DENIED_NO_PASSWORD_ERROR: 'access_denied', // 1698: the account does not log in with a password from here
  ER_NOT_SUPPORTED_AUTH_MODE: 'access_denied', // 1251
  AUTH_SWITCH_PLUGIN_ERROR: 'access_denied', // mysql2: the account uses an authentication plugin it lacks
  ER_DBACCESS_DENIED_ERROR: 'permission_denied', // 1044
  ER_TABLEACCESS_DENIED_ERROR: 'permission_denied', // 1142
  ER_BAD_DB_ERROR: 'unknown_database', // 1049
  ER_NO_SUCH_TABLE: 'not_migrated', // 1146
};

/** The driver's error code of `e`, or of the error it wraps (an AxError made by mapDbError). */
export function driverCode(e: unknown): string | undefined {
  const err = e as {code?: unknown; cause?: {code?: unknown}} | null;
  if (typeof err?.cause?.code === 'string') return err.cause.code;
  return typeof err?.code === 'string' ? err.code : undefined;
}

/**
 * An AxError('unavailable') with its reason in `details.reason`, and `details.scope: 'outbox'` when
 * it is about the business database's outbox (the CLI picks the hint from both).
 */
export function dbUnavailable(reason: DbFailureReason, message: string, cause?: unknown, scope?: 'outbox'): AxError {
  return new AxError('unavailable', message, {...(cause === undefined ? {} : {cause}), details: {reason, ...(scope ? {scope} : {})}});
}

/** `e` as an error about the outbox's database when it is one of the adapter's AxErrors; else `e`. */
export function outboxScoped(e: unknown): unknown {
  const reason = (e as AxError | null)?.details?.reason;
  return e instanceof AxError && typeof reason === 'string' ? dbUnavailable(reason as DbFailureReason, e.message, e.cause, 'outbox') : e;
}

/**
 * MySQL's "this value cannot be stored" errors: SQLSTATE classes 22 (data exception) and 23
 * (integrity constraint), e.g. a NULL in a NOT NULL column, a duplicate key, a value too long or
 * out of range. They are about the data written, not the server's state.
 */
export function isDataError(e: unknown): boolean {
  const state = (e as {sqlState?: unknown} | null)?.sqlState;
  return typeof state === 'string' && (state.startsWith('22') || state.startsWith('23'));
}

/**
 * Maps driver errors to AxError('unavailable') with a `details.reason` (see DbFailureReason) and a
 * message naming the server (password redacted), or to AxError('timeout'); anything else (SQL
 * errors about the data, bugs) is returned unchanged.
 */
export function mapDbError(e: unknown, url: string): unknown {
  const err = e as {code?: string; message?: string};
  const reason = err?.code === undefined ? undefined : REASONS[err.code];
  if (reason === undefined) {
    if (/Query inactivity timeout/i.test(err?.message ?? ''))
      return new AxError('timeout', `MySQL query timed out: ${err.message}`, {cause: e});
    return e;
  }
  const at = `MySQL at ${redactUrl(url)}`;
  const said = err.message ?? err.code;
  let t: ReturnType<typeof parseMysqlUrl> | undefined;
  try {
    t = parseMysqlUrl(url);
  } catch {
    t = undefined;
  }
  switch (reason) {
    case 'access_denied':
      return dbUnavailable(
        reason,
        `${at} refused the login of user "${t?.user ?? '?'}" (${t?.password ? 'with' : 'without'} a password): the user does not exist, the password is wrong, or the user may not connect from this host (MySQL does not say which). It said: ${said}`,
        e,
      );
    case 'permission_denied':
      return dbUnavailable(reason, `${at}: user "${t?.user ?? '?'}" is not allowed to do this: ${said}`, e);
    case 'unknown_database':
      return dbUnavailable(reason, `${at}: database "${t?.database ?? '?'}" does not exist`, e);
    case 'not_migrated':
      return dbUnavailable(reason, `${at}: a table is missing (${said}): the schema is not migrated`, e);
    default:
      return dbUnavailable(reason, `${at} is unavailable: ${said}`, e);
  }
}

/**
 * Opens a pool on ax's database. Sessions run in UTC (`time_zone = '+00:00'`) so that DATETIME
 * values and NOW(3) mean the same instant everywhere. Throws AxError('unavailable') when the server
 * cannot be reached, refuses the login, or the database is missing and cannot be created, with the
 * reason in `details.reason`. The pool it opened is then closed, so a failed attempt
 * leaves no sockets behind.
 */
export async function openDb(opts: DbOptions): Promise<Db> {
  const t = parseMysqlUrl(opts.url);
  const base = {
    host: t.host,
    port: t.port,
    user: t.user,
    password: t.password,
    ...(t.ssl ? {ssl: {}} : {}),
    timezone: 'Z' as const,
    dateStrings: false,
    supportBigNumbers: true,
    bigNumberStrings: false,
    enableKeepAlive: true,
    connectTimeout: 10_000,
    multipleStatements: false,
  };
  let pool: Pool | undefined;
  try {
    if (opts.createDatabase) {
      const c = await mysql.createConnection(base);
      try {
        await c.query(`CREATE DATABASE IF NOT EXISTS \`${t.database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
      } catch (e) {
        // A user who may not create databases may still use an existing one: the pool below says.
        if (driverCode(e) !== 'ER_DBACCESS_DENIED_ERROR' && driverCode(e) !== 'ER_ACCESS_DENIED_ERROR') throw e;
      } finally {
        await c.end().catch(() => undefined);
      }
    }
    pool = mysql.createPool({
      ...base,
      database: t.database,
      connectionLimit: opts.connectionLimit ?? 10,
      waitForConnections: true,
      queueLimit: 0,
    });
    // Queued first on every new connection, so every later statement on it runs in UTC and (on
    // MariaDB: the executable comment is skipped by MySQL) a transaction its process abandons ends
    // within idleTxTimeoutMs; bounded like every other statement so a server that stops answering
    // cannot hang a fresh connection.
    const idleS = Math.max(1, Math.ceil((opts.idleTxTimeoutMs ?? DEFAULT_IDLE_TX_TIMEOUT_MS) / 1000));
    const session = `SET time_zone = '+00:00' /*M!100300 , idle_transaction_timeout = ${idleS} */`;
    pool.pool.on('connection', (c) => {
      c.query({sql: session, timeout: opts.queryTimeoutMs});
    });
    // Fail fast on a bad URL/database rather than at the first real query. A probe that fails on
    // an open connection (a server that stopped answering) destroys that connection: ending it
    // politely would wait for the same server.
    const probe = await pool.getConnection();
    try {
      await probe.query({sql: 'SELECT 1', timeout: opts.queryTimeoutMs});
    } catch (e) {
      probe.destroy();
      throw e;
    }
    probe.release();
    return {pool, database: t.database, queryTimeoutMs: opts.queryTimeoutMs, idleTxTimeoutS: idleS, url: opts.url};
  } catch (e) {
    // A pool that failed its first query must not keep sockets (and the process) alive: the
    // caller may retry in a loop.
    await pool?.end().catch(() => undefined);
    throw mapDbError(e, opts.url);
  }
}

/** Runs a SELECT; returns its rows. */
export async function select<T extends Row = Row>(db: Db, c: Conn, sql: string, params: unknown[] = []): Promise<T[]> {
  try {
    const [rows] = await c.query<T[]>({sql, timeout: db.queryTimeoutMs}, params);
    return rows;
  } catch (e) {
    throw mapDbError(e, db.url);
  }
}

/** Runs a write; returns the result header (affectedRows, changedRows). */
export async function exec(db: Db, c: Conn, sql: string, params: unknown[] = []): Promise<ResultSetHeader> {
  try {
    const [res] = await c.query<ResultSetHeader>({sql, timeout: db.queryTimeoutMs}, params);
    return res;
  } catch (e) {
    throw mapDbError(e, db.url);
  }
}

/**
 * Runs `fn` with the idle_transaction_timeout of `c`'s session raised to `seconds` (MariaDB; a user
 * variable only on MySQL), for a transaction that waits on something other than the database by
 * design — the archiver writes and verifies its parts with the rows locked — and restores the
 * pool's value after, whatever `fn` does.
 */
export async function withLongIdle<T>(db: Db, c: Conn, seconds: number, fn: () => Promise<T>): Promise<T> {
  const set = (s: number): Promise<unknown> => exec(db, c, `SET @ax_idle = ${s} /*M!100300 , SESSION idle_transaction_timeout = ${s} */`);
  await set(seconds);
  try {
    return await fn();
  } finally {
    await set(db.idleTxTimeoutS ?? Math.ceil(DEFAULT_IDLE_TX_TIMEOUT_MS / 1000)).catch(() => undefined);
  }
}

/**
 * True when `e` is a lost lock race — a deadlock (1213) or a lock-wait timeout (1205). The server
 * rolled the statement (a lone one) or the whole transaction back; running it again is safe.
 */
export function isLockRace(e: unknown): boolean {
  const code = driverCode(e);
  return code === 'ER_LOCK_DEADLOCK' || code === 'ER_LOCK_WAIT_TIMEOUT';
}

const MAX_TX_ATTEMPTS = 5;

/**
 * Runs `fn` in a transaction on one pooled connection and commits. Deadlocks (1213) and lock-wait
 * timeouts (1205) roll back and retry up to 5 times; other errors roll back and propagate. The
 * connection is always released. `fn` must be safe to re-run (it sees a fresh transaction).
 */
export async function tx<T>(db: Db, fn: (c: PoolConnection) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    let conn: PoolConnection | undefined;
    try {
      conn = await db.pool.getConnection();
      await conn.query({sql: 'START TRANSACTION', timeout: db.queryTimeoutMs});
      const out = await fn(conn);
      await conn.query({sql: 'COMMIT', timeout: db.queryTimeoutMs});
      return out;
    } catch (e) {
      if (conn) await conn.query('ROLLBACK').catch(() => undefined);
      if (isLockRace(e) && attempt < MAX_TX_ATTEMPTS) continue;
      throw mapDbError(e, db.url);
    } finally {
      conn?.release();
    }
  }
}

/** `?, ?, ?` for n placeholders. */
export function marks(n: number): string {
  return n === 0 ? 'NULL' : new Array<string>(n).fill('?').join(', ');
}
