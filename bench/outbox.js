#!/usr/bin/env node
// P3 of the benchmark suite (shared/design/performance.md), runnable alone:
//   node bench/outbox.js [--quick] [--json]      (after npm run build)
// and called by bench/run.js --outbox. In its own ax database, business database and AMQP prefix:
//   (d)  raw: the relay's scan-and-mark loop alone — SELECT … LIMIT 500 FOR UPDATE SKIP LOCKED +
//        UPDATE … SET sent_at over the same backlog (in a copy of the table), rows/s;
//   (e)  raw: confirmed publishing of as many messages in windows of 500 (quorum), msg/s;
//   P3   one ax relay draining the backlog into ax (tasks written, rung, rows marked sent), rows/s;
//   idle one ax relay with the default 1 s poll: commit → published latency p50/p99 over single rows.
import {randomBytes} from 'node:crypto';
import {parseArgs} from 'node:util';
import amqp from 'amqplib';
import mysql from 'mysql2/promise';
import {loadConfig} from '../dist/core/config/config.js';
import {createRuntime, openBroker, openDatabase, openOutbox, openStore} from './lib/ax.js';
import {schemaMigrate} from '../dist/core/store/mysql/migrate.js';
import {createRelayService} from '../dist/core/outbox/service.js';
import {createLogger} from '../dist/core/log.js';

const MYSQL_ROOT = process.env.AX_BENCH_MYSQL_ROOT ?? 'mysql://root@127.0.0.1:3306';
const AMQP_URL = process.env.AX_BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (sorted, p) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] : NaN;

async function fillOutbox(sql, table, n) {
  for (let done = 0; done < n; done += 1000) {
    const k = Math.min(1000, n - done);
    const values = [];
    for (let i = 0; i < k; i++) values.push(`('bench_noop', '{"i":${done + i}}')`);
    await sql(`INSERT INTO ${table} (type, payload) VALUES ${values.join(',')}`);
  }
}

async function rawScanAndMark(pool, table) {
  const t0 = performance.now();
  let total = 0;
  for (;;) {
    const c = await pool.getConnection();
    try {
      await c.query('START TRANSACTION');
      const [rows] = await c.query(
        `SELECT id FROM ${table} WHERE sent_at IS NULL AND failed_at IS NULL ORDER BY id LIMIT 500 FOR UPDATE SKIP LOCKED`,
      );
      if (rows.length > 0) await c.query(`UPDATE ${table} SET sent_at = NOW(3) WHERE id IN (?)`, [rows.map((r) => r.id)]);
      await c.query('COMMIT');
      total += rows.length;
      if (rows.length === 0) break;
    } finally {
      c.release();
    }
  }
  return total / ((performance.now() - t0) / 1000);
}

async function rawPublish(n) {
  const conn = await amqp.connect(AMQP_URL);
  const q = `ax_bench_pub_${randomBytes(3).toString('hex')}`;
  try {
    const ch = await conn.createConfirmChannel();
    await ch.assertQueue(q, {durable: true, arguments: {'x-queue-type': 'quorum'}});
    const body = Buffer.from('{"v":1,"id":"00000000-0000-7000-8000-000000000000","type":"bench_noop"}');
    const t0 = performance.now();
    for (let sent = 0; sent < n; sent += 500) {
      for (let i = 0; i < Math.min(500, n - sent); i++) ch.publish('', q, body, {persistent: true});
      await ch.waitForConfirms();
    }
    return n / ((performance.now() - t0) / 1000);
  } finally {
    const ch2 = await conn.createChannel();
    await ch2.deleteQueue(q).catch(() => undefined);
    await conn.close();
  }
}

async function environment() {
  const tag = `ax_bench_o_${randomBytes(3).toString('hex')}`;
  const biz = `${tag}_biz`;
  const root = await mysql.createConnection(`${MYSQL_ROOT}/mysql`);
  await root.query(`CREATE DATABASE ${biz}`);
  const env = {
    AX_MYSQL_URL: `${MYSQL_ROOT}/${tag}`,
    AX_OUTBOX_MYSQL_URL: `${MYSQL_ROOT}/${biz}`,
    AX_AMQP_URL: AMQP_URL,
    AX_AMQP_PREFIX: tag,
    AX_LOG_LEVEL: 'warn',
  };
  const config = loadConfig({env, cwd: '/nonexistent'});
  const rt = createRuntime(config, createLogger('warn', {bench: tag}));
  const db = await openDatabase(rt);
  await schemaMigrate(db);
  const outbox = await openOutbox(rt, {requireTable: false});
  await outbox.outboxCreateTable();
  const store = await openStore(rt);
  const broker = await openBroker(rt, {reconnect: true});
  const bizPool = mysql.createPool({uri: `${MYSQL_ROOT}/${biz}`, connectionLimit: 2});
  return {
    rt,
    config,
    outbox,
    store,
    broker,
    bizPool,
    sql: async (q, p) => (await bizPool.query(q, p))[0],
    async dispose() {
      await broker.close();
      await store.close();
      await outbox.close();
      await bizPool.end();
      await db.pool.query(`DROP DATABASE IF EXISTS \`${tag}\``);
      await db.pool.end();
      await root.query(`DROP DATABASE IF EXISTS \`${biz}\``);
      await root.end();
      const conn = await amqp.connect(AMQP_URL);
      const ch = await conn.createChannel();
      for (const q of ['io', 'cpu', 'poison']) await ch.deleteQueue(`${tag}.default.${q}`).catch(() => undefined);
      await ch.deleteExchange(tag).catch(() => undefined);
      await conn.close();
    },
  };
}

/** Runs (d), (e), P3 and the idle latency; returns the figures and a Markdown section. */
export async function runOutboxBench({quick = false} = {}) {
  const n = quick ? 20_000 : 200_000;
  const idleN = quick ? 20 : 100;
  const e = await environment();
  try {
    // (d) on a copy of the table with the same backlog.
    await e.sql('CREATE TABLE task_outbox_raw LIKE task_outbox');
    await fillOutbox(e.sql, 'task_outbox_raw', n);
    const rawScan = await rawScanAndMark(e.bizPool, 'task_outbox_raw');
    await e.sql('DROP TABLE task_outbox_raw');
    const rawPub = await rawPublish(n);

    await fillOutbox(e.sql, 'task_outbox', n);
    const relay = createRelayService({...e.rt, outbox: e.outbox, store: e.store, broker: e.broker});
    const t0 = performance.now();
    relay.start();
    for (;;) {
      const [r] = await e.sql('SELECT COUNT(*) AS n FROM task_outbox WHERE sent_at IS NULL');
      if (Number(r.n) === 0) break;
      await sleep(100);
    }
    const p3 = n / ((performance.now() - t0) / 1000);

    // Idle: one row at a time, at random moments within the 1 s poll.
    await e.sql('DELETE FROM task_outbox');
    const ids = [];
    for (let i = 0; i < idleN; i++) {
      await sleep(150 + Math.random() * 300);
      const [res] = await e.bizPool.query("INSERT INTO task_outbox (type, payload) VALUES ('bench_noop', '{}')");
      ids.push(res.insertId);
    }
    for (;;) {
      const [r] = await e.sql('SELECT COUNT(*) AS n FROM task_outbox WHERE sent_at IS NULL');
      if (Number(r.n) === 0) break;
      await sleep(200);
    }
    await relay.stop();
    // commit → rung: the task's published_at (ax database) minus the row's created_at (same server clock).
    const rows = await e.sql('SELECT id, created_at FROM task_outbox WHERE id IN (?)', [ids]);
    const created = new Map(rows.map((r) => [Number(r.id), r.created_at.getTime()]));
    const lat = [];
    for (const id of ids) {
      const {idFromDedupKey} = await import('../dist/core/task/id.js');
      const taskId = idFromDedupKey('default', `outbox:${id}:${created.get(id)}`);
      const t = await e.store.tasksGet({id: taskId});
      if (t?.publishedAt) lat.push(t.publishedAt.getTime() - created.get(id));
    }
    lat.sort((a, b) => a - b);
    const idle = {n: lat.length, p50: pct(lat, 50), p99: pct(lat, 99), max: lat.at(-1)};
    const f = (x, d = 0) => (Number.isFinite(x) ? x.toLocaleString('en-US', {maximumFractionDigits: d, minimumFractionDigits: d}) : '–');
    const md = [
      '### Outbox relay (P3)',
      '',
      '| workload | figure | goal |',
      '| --- | --- | --- |',
      `| (d) raw SKIP LOCKED scan-and-mark loop, ${f(n)} rows | ${f(rawScan)} rows/s | calibration |`,
      `| (e) raw confirmed publish (quorum, windows of 500), ${f(n)} msgs | ${f(rawPub)} msg/s | calibration |`,
      `| P3: one relay drains a ${f(n)}-row backlog into ax | ${f(p3)} rows/s (${f(p3 / rawScan, 2)}× (d)) | ≥ 15,000 rows/s |`,
      `| idle: commit → published, 1 s poll, ${idle.n} rows | p50 ${f(idle.p50)} ms, p99 ${f(idle.p99)} ms, max ${f(idle.max)} ms | p99 ≤ 1,100 ms |`,
    ].join('\n');
    return {n, rawScan, rawPub, p3, idle, stats: relay.stats, markdown: md};
  } finally {
    await e.dispose();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const {values} = parseArgs({options: {quick: {type: 'boolean', default: false}, json: {type: 'boolean', default: false}}});
  const r = await runOutboxBench({quick: values.quick});
  console.log(values.json ? JSON.stringify(r, null, 2) : r.markdown);
  process.exit(0);
}
