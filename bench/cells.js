#!/usr/bin/env node
// Cells isolation (issue 13 part 3), runnable alone after `npm run build`:
//   node bench/cells.js [--fast-tasks 500] [--slow-tasks 50000] [--slow-ms 1000]
// Two cells on two databases (same RabbitMQ, own queues), one `ax worker --cell default,fast`
// process (IO pool of 4 per cell). The fast cell gets --fast-tasks no-op tasks at ~100/s three
// times: idle, while the default cell holds --slow-tasks slow tasks (--slow-ms each: it drains 4 per
// second, so it stays saturated), and idle again after that backlog is cancelled. For each round:
// due→start of the fast tasks (history `running` − run_at, database clock), p50/p99/max; the goal
// (issue 13) is the loaded p99 within 20% of the idle one. Same run, rounds paired; say whether the
// machine was shared.
import {spawn} from 'node:child_process';
import {randomBytes} from 'node:crypto';
import {fileURLToPath} from 'node:url';
import {parseArgs} from 'node:util';
import amqp from 'amqplib';
import {loadConfig} from '../dist/core/config/config.js';
import {createRuntime, openClient, openDatabase} from '../dist/compose.js';
import {schemaMigrate} from '../dist/core/store/mysql/migrate.js';
import {createLogger} from '../dist/core/log.js';
import {topology} from '../dist/core/broker/amqp/topology.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MYSQL_ROOT = process.env.AX_BENCH_MYSQL_ROOT ?? 'mysql://root@127.0.0.1:3306';
const AMQP_URL = process.env.AX_BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (s, p) => s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];

const {values: o} = parseArgs({
  options: {
    'fast-tasks': {type: 'string', default: '500'},
    'slow-tasks': {type: 'string', default: '50000'},
    'slow-ms': {type: 'string', default: '1000'},
  },
});
const FAST = Number(o['fast-tasks']);
const SLOW = Number(o['slow-tasks']);

const tag = `ax_bench_c_${randomBytes(3).toString('hex')}`;
const env = {
  AX_MYSQL_URL: `${MYSQL_ROOT}/${tag}`,
  AX_AMQP_URL: AMQP_URL,
  AX_AMQP_PREFIX: tag,
  AX_CELLS: JSON.stringify({fast: {types: ['fast_*'], mysqlUrl: `${MYSQL_ROOT}/${tag}_fast`}}),
  AX_LOG_LEVEL: 'warn',
  AX_SUBMIT_FLUSH: '10',
  AX_SHUTDOWN_GRACE: '1s',
  AX_TEST_SLOW_MS: o['slow-ms'],
};
const config = loadConfig({env, cwd: '/nonexistent'});
const rt = createRuntime(config, createLogger('warn', {bench: tag}));
const dbs = {default: await openDatabase(rt), fast: await openDatabase(rt.forCell('fast'))};
for (const db of Object.values(dbs)) await schemaMigrate(db);
const sql = async (cell, q, p = []) => (await dbs[cell].pool.query(q, p))[0];

const worker = spawn(
  process.execPath,
  [
    'bin/run.js',
    'worker',
    '--handlers',
    'test/fixtures/cells-handlers.js',
    '--cell',
    'default,fast',
    '--pools',
    'io',
    '--io-concurrency',
    '4',
  ],
  {cwd: ROOT, env: {...process.env, ...env, NODE_ENV: 'production'}, stdio: ['ignore', 'ignore', 'inherit']},
);
const client = await openClient(rt, {reconnect: true});

async function until(what, check, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** FAST fast_work tasks at ~100/s; their due→start in ms, sorted. */
async function fastRound(round) {
  for (let i = 0; i < FAST; i++) {
    await client.submit({type: 'fast_work', payload: {round, i}});
    await sleep(10);
  }
  await client.flush();
  const started = async () =>
    Number(
      (await sql('fast', "SELECT COUNT(*) AS n FROM tasks WHERE state = 'succeeded' AND JSON_VALUE(payload, '$.round') = ?", [round]))[0].n,
    );
  await until(`round ${round}`, async () => (await started()) >= FAST);
  const rows = await sql(
    'fast',
    `SELECT TIMESTAMPDIFF(MICROSECOND, t.run_at, h.started_at) / 1000 AS late FROM tasks t
      JOIN task_history h ON h.task_id = t.id AND h.from_state = 'running' AND h.attempt = 1 AND h.started_at IS NOT NULL
      WHERE JSON_VALUE(t.payload, '$.round') = ?`,
    [round],
  );
  return rows.map((r) => Number(r.late)).sort((a, b) => a - b);
}

const slowDue = async () =>
  Number((await sql('default', "SELECT COUNT(*) AS n FROM tasks WHERE type = 'slow_work' AND state = 'submitted'"))[0].n);
const summary = (xs) => ({n: xs.length, p50: pct(xs, 50), p99: pct(xs, 99), max: xs[xs.length - 1]});

try {
  await until('the worker', async () => Number((await sql('fast', 'SELECT COUNT(*) AS n FROM workers'))[0].n) > 0, 30_000);
  const idle1 = await fastRound('idle1');
  const t0 = Date.now();
  for (let i = 0; i < SLOW; i++) await client.submit({type: 'slow_work', payload: {i}});
  await client.flush();
  const submitS = (Date.now() - t0) / 1000;
  await until(
    'the slow pool to fill',
    async () => Number((await sql('default', "SELECT COUNT(*) AS n FROM tasks WHERE state = 'running'"))[0].n) >= 4,
  );
  const before = await slowDue();
  const loaded = await fastRound('loaded');
  const after = await slowDue();
  const [oldest] = await sql(
    'default',
    "SELECT TIMESTAMPDIFF(MICROSECOND, MIN(run_at), NOW(3)) / 1000 AS age FROM tasks WHERE type = 'slow_work' AND state = 'submitted'",
  );
  await sql('default', "UPDATE tasks SET state = 'cancelled' WHERE type = 'slow_work' AND state = 'submitted'");
  await sleep(2000);
  const idle2 = await fastRound('idle2');
  const idleP99 = (pct(idle1, 99) + pct(idle2, 99)) / 2;
  const report = {
    fastTasksPerRound: FAST,
    slowTasks: SLOW,
    slowSubmitS: submitS,
    slowBacklog: {beforeLoadedRound: before, afterLoadedRound: after, oldestWaitingMs: Number(oldest.age)},
    idle1: summary(idle1),
    loaded: summary(loaded),
    idle2: summary(idle2),
    loadedP99OverIdleP99: Number((pct(loaded, 99) / idleP99).toFixed(3)),
    goal: 'loaded p99 within 20% of idle p99 (ratio ≤ 1.2)',
  };
  console.log(JSON.stringify(report, null, 2));
} finally {
  await client.close().catch(() => undefined);
  worker.kill('SIGTERM');
  await new Promise((r) => (worker.exitCode !== null ? r() : worker.once('exit', r)));
  for (const [cell, db] of Object.entries(dbs)) {
    await db.pool.query(`DROP DATABASE IF EXISTS \`${cell === 'default' ? tag : `${tag}_fast`}\``).catch(() => undefined);
    await db.pool.end().catch(() => undefined);
  }
  const conn = await amqp.connect(AMQP_URL);
  const ch = await conn.createChannel();
  for (const cell of ['default', 'fast'])
    for (const q of topology(tag, cell, config.queueType).allQueues()) await ch.deleteQueue(q).catch(() => undefined);
  await ch.deleteExchange(tag).catch(() => undefined);
  await conn.close();
}
