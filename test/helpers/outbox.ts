/**
 * The outbox's test kit: a separate BUSINESS database (`axt_biz_<random>`) holding `task_outbox`,
 * a ledger of rows tagged `{run, k}` in their payload, and the invariant checker that compares the
 * ledger with ax's tasks after quiescence (lost, duplicated, unexpected; outbox fully sent).
 */
import {randomBytes} from 'node:crypto';
import mysql from 'mysql2/promise';
import {MysqlOutboxStore} from '../../src/core/store/mysql/outbox.js';
import {eventually, MYSQL_ROOT, type TestEnv} from './env.js';

export interface BusinessDb {
  /** Database name `axt_biz_<random>`. */
  name: string;
  /** mysql2 URL of the business database (AX_OUTBOX_MYSQL_URL). */
  url: string;
  /** A plain mysql2 promise pool, configured the way a business service would (no ax settings). */
  pool: mysql.Pool;
  sql<T = Record<string, unknown>>(query: string, params?: unknown[]): Promise<T[]>;
  /** Opens a MysqlOutboxStore on this database (closed by dispose). */
  outbox(): Promise<MysqlOutboxStore>;
  dispose(): Promise<void>;
}

/** Creates an empty business database; `migrate` also creates task_outbox through MysqlOutboxStore. */
export async function createBusinessDb(opts: {migrate?: boolean} = {}): Promise<BusinessDb> {
  const name = `axt_biz_${randomBytes(4).toString('hex')}`;
  const url = `${MYSQL_ROOT}/${name}`;
  const root = await mysql.createConnection(MYSQL_ROOT);
  try {
    await root.query(`CREATE DATABASE \`${name}\``);
  } finally {
    await root.end();
  }
  const pool = mysql.createPool({uri: url, connectionLimit: 8});
  const stores: MysqlOutboxStore[] = [];
  const open = async (): Promise<MysqlOutboxStore> => {
    const s = await MysqlOutboxStore.open({url, createDatabase: false, queryTimeoutMs: 30_000, connectionLimit: 4, requireTable: false});
    stores.push(s);
    return s;
  };
  if (opts.migrate) await (await open()).outboxCreateTable();
  return {
    name,
    url,
    pool,
    async sql<T>(query: string, params: unknown[] = []) {
      const [rows] = await pool.query(query, params);
      return rows as T[];
    },
    outbox: open,
    async dispose() {
      for (const s of stores) await s.close().catch(() => undefined);
      await pool.end().catch(() => undefined);
      const c = await mysql.createConnection(MYSQL_ROOT);
      try {
        await c.query(`DROP DATABASE IF EXISTS \`${name}\``);
      } finally {
        await c.end().catch(() => undefined);
      }
    },
  };
}

/** A fresh run tag: every payload of one test carries it, so tests sharing a database never mix. */
export const newRun = (what: string): string => `${what}_${randomBytes(3).toString('hex')}`;

/**
 * Inserts ledger rows `{run, k}` for k in [from, from + count) as plain SQL, one multi-row INSERT
 * per `chunk` rows (a non-Node producer would do the same). Returns the keys inserted.
 */
export async function insertLedger(
  biz: BusinessDb,
  run: string,
  count: number,
  opts: {from?: number; chunk?: number; type?: string} = {},
): Promise<number[]> {
  const from = opts.from ?? 0;
  const chunk = opts.chunk ?? 1000;
  const keys: number[] = [];
  for (let start = from; start < from + count; start += chunk) {
    const n = Math.min(chunk, from + count - start);
    const values: unknown[] = [];
    for (let k = start; k < start + n; k++) {
      values.push(opts.type ?? 'test_noop', JSON.stringify({run, k}));
      keys.push(k);
    }
    await biz.pool.query(`INSERT INTO task_outbox (type, payload) VALUES ${Array(n).fill('(?, ?)').join(', ')}`, values);
  }
  return keys;
}

export interface OutboxCounts {
  rows: number;
  sent: number;
  unsent: number;
  failed: number;
  claimedUnsent: number;
}

/** The run's rows in task_outbox, by state. */
export async function outboxCounts(biz: BusinessDb, run: string): Promise<OutboxCounts> {
  const [r] = await biz.sql<Record<string, unknown>>(
    `SELECT COUNT(*) AS rows_, COALESCE(SUM(sent_at IS NOT NULL), 0) AS sent,
            COALESCE(SUM(sent_at IS NULL AND failed_at IS NULL), 0) AS unsent,
            COALESCE(SUM(failed_at IS NOT NULL), 0) AS failed,
            COALESCE(SUM(sent_at IS NULL AND claimed_by IS NOT NULL), 0) AS claimed
       FROM task_outbox WHERE JSON_VALUE(payload, '$.run') = ?`,
    [run],
  );
  return {
    rows: Number(r?.rows_),
    sent: Number(r?.sent),
    unsent: Number(r?.unsent),
    failed: Number(r?.failed),
    claimedUnsent: Number(r?.claimed),
  };
}

export interface InvariantReport {
  /** Ledger size (keys 0..expected-1). */
  expected: number;
  outbox: OutboxCounts;
  /** ax tasks carrying the run tag. */
  tasks: number;
  /** Ledger keys without any task in ax: must be 0. */
  lost: number;
  /** Ledger keys that became more than one task: must be 0. */
  doubledTasks: number;
  /** Tasks whose key is not in the ledger: must be 0. */
  unexpected: number;
  /** Tasks not in a terminal state (succeeded, dead, cancelled): 0 after quiescence. */
  nonTerminal: number;
  /** Tasks in a terminal state other than succeeded. */
  notSucceeded: number;
  /** Tasks with more than one `succeeded` history row: must be 0. */
  duplicated: number;
  /** Tasks claimed more than once (re-executed, e.g. after a lost lease): more than one attempt row (from `running`). */
  reexecuted: number;
}

/** Compares the run's ledger with ax's tasks and history (see InvariantReport). */
export async function checkInvariants(env: TestEnv, biz: BusinessDb, run: string, expected: number): Promise<InvariantReport> {
  const outbox = await outboxCounts(biz, run);
  const rows = await env.sql<{k: string; n: number; terminal: number; ok: number}>(
    `SELECT JSON_VALUE(payload, '$.k') AS k, COUNT(*) AS n,
            SUM(state IN ('succeeded', 'dead', 'cancelled')) AS terminal, SUM(state = 'succeeded') AS ok
       FROM tasks WHERE JSON_VALUE(payload, '$.run') = ? GROUP BY k`,
    [run],
  );
  const byKey = new Map(rows.map((r) => [Number(r.k), r]));
  let lost = 0;
  for (let k = 0; k < expected; k++) if (!byKey.has(k)) lost++;
  const hist = await env.sql<{succeeded: number; running: number}>(
    `SELECT SUM(h.to_state = 'succeeded') AS succeeded, SUM(h.from_state = 'running') AS running
       FROM tasks t JOIN task_history h ON h.task_id = t.id
      WHERE JSON_VALUE(t.payload, '$.run') = ? GROUP BY t.id`,
    [run],
  );
  const tasks = rows.reduce((a, r) => a + Number(r.n), 0);
  const terminal = rows.reduce((a, r) => a + Number(r.terminal), 0);
  const ok = rows.reduce((a, r) => a + Number(r.ok), 0);
  return {
    expected,
    outbox,
    tasks,
    lost,
    doubledTasks: rows.filter((r) => Number(r.n) > 1).length,
    unexpected: rows.filter((r) => !(Number(r.k) >= 0 && Number(r.k) < expected)).length,
    nonTerminal: tasks - terminal,
    notSucceeded: terminal - ok,
    duplicated: hist.filter((h) => Number(h.succeeded) > 1).length,
    reexecuted: hist.filter((h) => Number(h.running) > 1).length,
  };
}

/** Waits until the run's outbox is fully sent and every one of its tasks in ax is terminal (polls every 250 ms). */
export async function waitForQuiescence(
  env: TestEnv,
  biz: BusinessDb,
  run: string,
  expected: number,
  timeoutMs = 60_000,
  /** Outbox rows of the run, when several rows name the same task (default: `expected`). */
  rows = expected,
): Promise<InvariantReport> {
  await eventually(
    async () => {
      const o = await outboxCounts(biz, run);
      const [t] = await env.sql<{n: number; terminal: number | null}>(
        `SELECT COUNT(*) AS n, SUM(state IN ('succeeded', 'dead', 'cancelled')) AS terminal FROM tasks WHERE JSON_VALUE(payload, '$.run') = ?`,
        [run],
      );
      if (o.sent === rows && Number(t?.n) >= expected && Number(t?.terminal) === Number(t?.n)) return true;
      await new Promise((r) => setTimeout(r, 250));
      return false;
    },
    timeoutMs,
    `run ${run} to quiesce (${rows} rows sent, all tasks terminal)`,
  );
  return checkInvariants(env, biz, run, expected);
}
