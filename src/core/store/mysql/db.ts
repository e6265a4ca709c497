import mysql from 'mysql2/promise';
import type {Pool, PoolConnection, ResultSetHeader, RowDataPacket} from 'mysql2/promise';
import {AxError} from '../../errors.js';
import {redactUrl} from '../../config/config.js';
import {parseMysqlUrl} from './url.js';

export type Conn = Pool | PoolConnection;
export type Row = RowDataPacket;
export type {ResultSetHeader, PoolConnection, Pool};

export interface DbOptions {
  url: string;
  /** Create the database when missing (ignored when the user may not). */
  createDatabase: boolean;
  queryTimeoutMs: number;
  connectionLimit?: number;
}

export interface Db {
  pool: Pool;
  database: string;
  queryTimeoutMs: number;
  url: string;
}

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
  'ER_ACCESS_DENIED_ERROR',
  'ER_DBACCESS_DENIED_ERROR',
  'ER_BAD_DB_ERROR',
]);

/**
 * MySQL's "this value cannot be stored" errors: SQLSTATE classes 22 (data exception) and 23
 * (integrity constraint), e.g. a NULL in a NOT NULL column, a duplicate key, a value too long or
 * out of range. They are about the data written, not the server's state.
 */
export function isDataError(e: unknown): boolean {
  const state = (e as {sqlState?: unknown} | null)?.sqlState;
  return typeof state === 'string' && (state.startsWith('22') || state.startsWith('23'));
}

/** Maps driver errors to AxError('unavailable'|'timeout'); anything else is returned unchanged. */
export function mapDbError(e: unknown, url: string): unknown {
  const err = e as {code?: string; message?: string};
  if (err?.code && UNAVAILABLE_CODES.has(err.code)) {
    const hint = err.code === 'ER_BAD_DB_ERROR' ? ' (run `ax migrate` to create it)' : '';
    return new AxError('unavailable', `MySQL at ${redactUrl(url)} is unavailable: ${err.message ?? err.code}${hint}`, {cause: e});
  }
  if (err?.code === 'PROTOCOL_SEQUENCE_TIMEOUT' || /Query inactivity timeout/i.test(err?.message ?? '')) {
    return new AxError('timeout', `MySQL query timed out: ${err.message}`, {cause: e});
  }
  return e;
}

/**
 * Opens a pool on ax's database. Sessions run in UTC (`time_zone = '+00:00'`) so that DATETIME
 * values and NOW(3) mean the same instant everywhere. Throws AxError('unavailable') when the server
 * cannot be reached or the database is missing and cannot be created.
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
  try {
    if (opts.createDatabase) {
      const c = await mysql.createConnection(base);
      try {
        await c.query(`CREATE DATABASE IF NOT EXISTS \`${t.database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
      } catch (e) {
        if ((e as {code?: string}).code !== 'ER_DBACCESS_DENIED_ERROR' && (e as {code?: string}).code !== 'ER_ACCESS_DENIED_ERROR') throw e;
      } finally {
        await c.end().catch(() => undefined);
      }
    }
    const pool = mysql.createPool({
      ...base,
      database: t.database,
      connectionLimit: opts.connectionLimit ?? 10,
      waitForConnections: true,
      queueLimit: 0,
    });
    pool.pool.on('connection', (c) => {
      c.query("SET time_zone = '+00:00'");
    });
    // Fail fast on a bad URL/database rather than at the first real query.
    await pool.query({sql: 'SELECT 1', timeout: opts.queryTimeoutMs});
    return {pool, database: t.database, queryTimeoutMs: opts.queryTimeoutMs, url: opts.url};
  } catch (e) {
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

const RETRYABLE = new Set(['ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT']);
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
      const code = (e as {code?: string}).code ?? (e as {cause?: {code?: string}}).cause?.code;
      if (code && RETRYABLE.has(code) && attempt < MAX_TX_ATTEMPTS) continue;
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
