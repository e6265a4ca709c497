/**
 * Test environments on the real MariaDB and RabbitMQ: each call makes a fresh database and a fresh
 * AMQP prefix, so test files never see each other's rows or queues, and `dispose()` drops both.
 */
import {randomBytes} from 'node:crypto';
import amqp from 'amqplib';
import mysql from 'mysql2/promise';
import {loadConfig, type AxConfig} from '../../src/core/config/config.js';
import {createRuntime, openBroker, openDatabase, openStore, type Runtime} from '../../src/compose.js';
import {schemaMigrate} from '../../src/core/store/mysql/migrate.js';
import {keysIndexCreate} from '../../src/core/store/mysql/keys-index.js';
import {createLogger} from '../../src/core/log.js';
import type {AxStore} from '../../src/core/store/types.js';
import type {AmqpBroker} from '../../src/core/broker/amqp/broker.js';
import {topology} from '../../src/core/broker/amqp/topology.js';
import {decodeMessage} from '../../src/core/broker/types.js';
import {createWorkerService} from '../../src/core/worker/service.js';
import type {Worker} from '../../src/core/worker/worker.js';

export const MYSQL_ROOT = process.env.AX_TEST_MYSQL_ROOT ?? 'mysql://root@127.0.0.1:3306';
export const AMQP_URL = process.env.AX_TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

export interface TestEnv {
  config: AxConfig;
  /** Environment variables that point a spawned `bin/run.js` at this environment. */
  env: Record<string, string>;
  rt: Runtime;
  /** Raw SQL on the test database, for assertions. */
  sql<T = Record<string, unknown>>(query: string, params?: unknown[]): Promise<T[]>;
  /** A store of the default cell, or of `cell`. */
  store(cell?: string): Promise<AxStore>;
  /** The AMQP adapter itself: tests look at queue names and depths. */
  /** `declare: false`: connects without declaring the topology (like ax queues). */
  broker(opts?: {reconnect?: boolean; declare?: boolean; cell?: string}): Promise<AmqpBroker>;
  dispose(): Promise<void>;
}

/**
 * Creates a migrated database `axt_<random>` and prefix `axt_<random>`; `overrides` tune the config.
 * `cells` adds cells (AX_CELLS, also in `env.env`), each with the types given and a migrated
 * database of its own, `axt_<random>_<cell>` (dropped by dispose(), with its queues). `amqpUrl`
 * (default the shared RabbitMQ) is AX_AMQP_URL, e.g. the nodes of a test cluster (rabbit-cluster.ts).
 * `taskKeys: false` leaves out the opt-in index of task keys (`ax migrate --task-keys`).
 */
export async function createTestEnv(
  overrides: Partial<AxConfig> = {},
  opts: {cells?: Record<string, string[]>; amqpUrl?: string; taskKeys?: boolean} = {},
): Promise<TestEnv> {
  const tag = `axt_${randomBytes(4).toString('hex')}`;
  const cells = Object.fromEntries(
    Object.entries(opts.cells ?? {}).map(([cell, types]) => [cell, {types, mysqlUrl: `${MYSQL_ROOT}/${tag}_${cell.replace(/-/g, '_')}`}]),
  );
  const env: Record<string, string> = {
    AX_MYSQL_URL: `${MYSQL_ROOT}/${tag}`,
    AX_AMQP_URL: opts.amqpUrl ?? AMQP_URL,
    AX_AMQP_PREFIX: tag,
    AX_LOG_LEVEL: process.env.AX_TEST_LOG_LEVEL ?? 'warn',
    ...(opts.cells ? {AX_CELLS: JSON.stringify(cells)} : {}),
  };
  const config = loadConfig({env, overrides, cwd: '/nonexistent'});
  const rt = createRuntime(config, createLogger(config.logLevel, {test: tag}));
  const db = await openDatabase(rt);
  await schemaMigrate(db);
  // The opt-in index of task keys (`ax migrate --task-keys`): on, unless a test is about its absence.
  if (opts.taskKeys !== false) await keysIndexCreate(db);
  const cellDbs = await Promise.all(
    Object.keys(cells).map(async (cell) => {
      const cdb = await openDatabase(rt.forCell(cell));
      await schemaMigrate(cdb);
      if (opts.taskKeys !== false) await keysIndexCreate(cdb);
      return {cell, db: cdb, name: `${tag}_${cell.replace(/-/g, '_')}`};
    }),
  );
  const closers: Array<() => Promise<unknown>> = [];
  return {
    config,
    env,
    rt,
    async sql<T>(query: string, params: unknown[] = []) {
      const [rows] = await db.pool.query(query, params);
      return rows as T[];
    },
    async store(cell) {
      const s = await openStore(cell === undefined ? rt : rt.forCell(cell));
      closers.push(() => s.close());
      return s;
    },
    async broker(opts = {}) {
      const b = (await openBroker(opts.cell === undefined ? rt : rt.forCell(opts.cell), {
        reconnect: opts.reconnect ?? false,
        ...(opts.declare === undefined ? {} : {declare: opts.declare}),
      })) as AmqpBroker;
      closers.push(() => b.close());
      return b;
    },
    async dispose() {
      for (const c of closers.reverse()) await c().catch(() => undefined);
      await db.pool.query(`DROP DATABASE IF EXISTS \`${tag}\``).catch(() => undefined);
      await db.pool.end().catch(() => undefined);
      for (const c of cellDbs) {
        await c.db.pool.query(`DROP DATABASE IF EXISTS \`${c.name}\``).catch(() => undefined);
        await c.db.pool.end().catch(() => undefined);
      }
      const names = [config.cell, ...Object.keys(cells)].map((c) => topology(tag, c, config.queueType));
      await deleteQueues(
        env.AX_AMQP_URL!,
        names.flatMap((n) => n.allQueues()),
        [tag, ...names.map((n) => n.controlExchange)],
      );
    },
  };
}

/** Deletes them through the first node of `urls` (AX_AMQP_URL) that answers; none answering, nothing. */
async function deleteQueues(urls: string, queues: string[], exchanges: string[]): Promise<void> {
  let conn: amqp.ChannelModel | undefined;
  for (const url of urls.split(',')) {
    conn = await amqp.connect(url.trim()).catch(() => undefined);
    if (conn) break;
  }
  if (!conn) return;
  try {
    const ch = await conn.createChannel();
    for (const q of queues) await ch.deleteQueue(q).catch(() => undefined);
    for (const x of exchanges) await ch.deleteExchange(x).catch(() => undefined);
  } finally {
    await conn.close().catch(() => undefined);
  }
}

/**
 * Takes every message now waiting in one of `env`'s pool queues (acked, so they are gone) and
 * returns the task ids they ring for, in order, and how many messages carried them.
 */
export async function takeRung(env: TestEnv, pool: 'io' | 'cpu'): Promise<{ids: string[]; messages: number}> {
  const conn = await amqp.connect(AMQP_URL);
  try {
    const ch = await conn.createChannel();
    const queue = topology(env.config.amqpPrefix, env.config.cell, env.config.queueType).queue(pool);
    const out = {ids: [] as string[], messages: 0};
    for (let m = await ch.get(queue); m; m = await ch.get(queue)) {
      out.messages++;
      out.ids.push(...(decodeMessage(m.content) ?? []).map((r) => r.id));
      ch.ack(m);
    }
    return out;
  } finally {
    await conn.close().catch(() => undefined);
  }
}

/** Polls `check` until it returns a truthy value or `timeoutMs` passes (waiting on real servers). */
export async function eventually<T>(
  check: () => Promise<T | undefined | null | false>,
  timeoutMs = 20_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export {mysql};

/** The test handlers (test/fixtures/handlers.js), as a module URL. */
export const TEST_HANDLERS = new URL('../fixtures/handlers.js', import.meta.url).href;

/**
 * An in-process worker on the IO pool with the test handlers, on its own store and broker of `env`
 * (closed by env.dispose()); not started. Stop it with `stop(graceMs)`.
 */
export async function createTestWorker(env: TestEnv, opts: {workerId?: string} = {}): Promise<Worker> {
  return createWorkerService({
    ...env.rt,
    config: env.config,
    store: await env.store(),
    broker: await env.broker({reconnect: true}),
    handlersModule: TEST_HANDLERS,
    pools: ['io'],
    ...(opts.workerId === undefined ? {} : {workerId: opts.workerId}),
  });
}
