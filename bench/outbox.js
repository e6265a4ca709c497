#!/usr/bin/env node
// P3 of the benchmark suite (shared/design/performance.md), runnable alone:
//   node bench/outbox.js [--quick] [--json]      (after npm run build)
// and called by bench/run.js --outbox. In its own ax database, business database and AMQP prefix:
//   (d)  raw: the relay's scan-and-mark loop alone — SELECT … LIMIT 500 FOR UPDATE SKIP LOCKED +
//        UPDATE … SET sent_at over the same backlog (in a copy of the table), rows/s;
//   (e)  raw: confirmed publishing of as many messages in windows of 500 (quorum), msg/s;
//   P3   one ax relay draining the backlog into ax (tasks written, rung, rows marked sent), rows/s
//        (the end is read from the relay's own counters, so no COUNT(*) of the backlog loads MariaDB);
//   idle one ax relay with the default 1 s poll: commit → published latency p50/p99 over single rows
//        that each come in once the relay has been idle for a while (gaps of 1.6–2.6 intervals);
//   busy the same for rows 50–250 ms apart, while the relay is busy (it found rows within an interval).
// "Published" is the task row's published_at: the relay writes due tasks marked published in their
// INSERT, just before the doorbell's publish (before issue 22 it marked them after the confirm).
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
/** Resolves once `cond()` holds, checked every 5 ms in this process (no query); throws after 10 min. */
async function until(cond, ms = 600_000) {
  for (const t0 = performance.now(); !cond(); await sleep(5))
    if (performance.now() - t0 > ms) throw new Error(`gave up after ${ms / 1000} s`);
}
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
  const idleN = quick ? 6 : 30;
  const busyN = quick ? 20 : 100;
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
    const relayed = (k) => until(() => relay.stats.relayed >= k);
    const t0 = performance.now();
    relay.start();
    await relayed(n);
    const p3 = n / ((performance.now() - t0) / 1000);
    const [left] = await e.sql('SELECT COUNT(*) AS n FROM task_outbox WHERE sent_at IS NULL');
    if (Number(left.n) !== 0) throw new Error(`P3: the relay counted ${n} rows relayed, but ${left.n} are unsent`);

    await e.sql('DELETE FROM task_outbox');
    const interval = e.config.relayIntervalMs;
    const insertRow = async () =>
      (await e.bizPool.query("INSERT INTO task_outbox (type, payload) VALUES ('bench_noop', '{}')"))[0].insertId;
    // Idle: each row comes in long enough after the last one was relayed for the relay to be idle.
    const idleIds = [];
    for (let i = 0; i < idleN; i++) {
      await sleep(interval * (1.6 + Math.random()));
      idleIds.push(await insertRow());
      await relayed(n + idleIds.length);
    }
    // Busy: one row to wake it, then rows 50–250 ms apart (within an interval of the last one found).
    await insertRow();
    await relayed(n + idleN + 1);
    const busyIds = [];
    for (let i = 0; i < busyN; i++) {
      await sleep(50 + Math.random() * 200);
      busyIds.push(await insertRow());
    }
    await relayed(n + idleN + 1 + busyN);
    await relay.stop();
    const {idFromDedupKey} = await import('../dist/core/task/id.js');
    // commit → rung: the task's published_at (ax database) minus the row's created_at (same server clock).
    const latency = async (ids) => {
      const rows = await e.sql('SELECT id, created_at FROM task_outbox WHERE id IN (?)', [ids]);
      const lat = [];
      for (const r of rows) {
        const t = await e.store.tasksGet({id: idFromDedupKey('default', `outbox:${r.id}:${r.created_at.getTime()}`)});
        if (t?.publishedAt) lat.push(t.publishedAt.getTime() - r.created_at.getTime());
      }
      lat.sort((a, b) => a - b);
      return {n: lat.length, p50: pct(lat, 50), p99: pct(lat, 99), max: lat.at(-1)};
    };
    const idle = await latency(idleIds);
    const busy = await latency(busyIds);
    const f = (x, d = 0) => (Number.isFinite(x) ? x.toLocaleString('en-US', {maximumFractionDigits: d, minimumFractionDigits: d}) : '–');
    const md = [
      '### Outbox relay (P3)',
      '',
      '| workload | figure | goal |',
      '| --- | --- | --- |',
      `| (d) raw SKIP LOCKED scan-and-mark loop, ${f(n)} rows | ${f(rawScan)} rows/s | calibration |`,
      `| (e) raw confirmed publish (quorum, windows of 500), ${f(n)} msgs | ${f(rawPub)} msg/s | calibration |`,
      `| P3: one relay drains a ${f(n)}-row backlog into ax | ${f(p3)} rows/s (${f(p3 / rawScan, 2)}× (d)) | ≥ 15,000 rows/s |`,
      `| idle: commit → published, 1 s poll, ${idle.n} rows | p50 ${f(idle.p50)} ms, p99 ${f(idle.p99)} ms, max ${f(idle.max)} ms | p50 ≤ 600 ms, p99 ≤ 1,100 ms |`,
      `| busy: commit → published, rows 50–250 ms apart, ${busy.n} rows | p50 ${f(busy.p50)} ms, p99 ${f(busy.p99)} ms, max ${f(busy.max)} ms | p50 ≤ 50 ms |`,
    ].join('\n');
    return {n, rawScan, rawPub, p3, idle, busy, stats: relay.stats, markdown: md};
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
