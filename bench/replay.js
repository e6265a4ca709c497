#!/usr/bin/env node
// The dead-letter replay benchmark (issue 10), runnable alone:
//   node bench/replay.js [--quick] [--n N] [--rate R] [--json]      (after npm run build)
// and called by bench/run.js --replay (or --only replay). In its own ax database and AMQP prefix,
// with no worker (the doorbells stay queued and are purged after each run):
//   R0  calibration: the statements a replay needs, by hand on copies of the tables, rows/s;
//   R1  N dead tasks of one type replayed without --rate, as `ax dlq replay --type T --yes` does it
//       (planReplay, then runReplay: pages by id, one guarded transaction per 500 with history and
//       audit, doorbells published with confirms and marked): tasks/s marked, and where the time went;
//   R2  the same N made dead again (one UPDATE), replayed at --rate R: achieved rate vs the target.
// Goals (docs/benchmarks.md): R1 >= 20,000 tasks/s; R2 within +-5 % of R.
import {randomBytes} from 'node:crypto';
import {parseArgs} from 'node:util';
import amqp from 'amqplib';
import {loadConfig} from '../dist/core/config/config.js';
import {createLogger} from '../dist/core/log.js';
import {schemaMigrate} from '../dist/core/store/mysql/migrate.js';
import {planReplay, runReplay} from '../dist/core/dlq/replay.js';
import {createIdGenerator} from '../dist/core/task/id.js';
import {validateTaskSpec} from '../dist/core/task/validate.js';
import {createRuntime, openBroker, openDatabase, openStore} from './lib/ax.js';

const MYSQL_ROOT = process.env.AX_BENCH_MYSQL_ROOT ?? 'mysql://root@127.0.0.1:3306';
const AMQP_URL = process.env.AX_BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const TYPE = 'bench_dead';
const CHUNK = 2000;

/** Wraps `obj[name]` to add the time of each call to `timing[label]` (ms). */
function timed(obj, name, label, timing) {
  const f = obj[name].bind(obj);
  obj[name] = async (...a) => {
    const t0 = performance.now();
    try {
      return await f(...a);
    } finally {
      timing[label] = (timing[label] ?? 0) + performance.now() - t0;
    }
  };
}

async function environment() {
  const tag = `ax_bench_r_${randomBytes(3).toString('hex')}`;
  const env = {AX_MYSQL_URL: `${MYSQL_ROOT}/${tag}`, AX_AMQP_URL: AMQP_URL, AX_AMQP_PREFIX: tag, AX_LOG_LEVEL: 'warn'};
  const config = loadConfig({env, cwd: '/nonexistent'});
  const rt = createRuntime(config, createLogger('warn', {bench: tag}));
  const db = await openDatabase(rt);
  await schemaMigrate(db);
  const store = await openStore(rt);
  const broker = await openBroker(rt, {reconnect: false});
  const timing = {};
  timed(store, 'deadPage', 'page', timing);
  timed(store, 'deadReplay', 'replay transaction', timing);
  timed(store, 'doorbellsMark', 'mark rung', timing);
  timed(broker, 'publish', 'publish + confirms', timing);
  const conn = await amqp.connect(AMQP_URL);
  const ch = await conn.createChannel();
  return {
    rt,
    store,
    broker,
    timing,
    sql: async (q, p = []) => (await db.pool.query(q, p))[0],
    connection: () => db.pool.getConnection(),
    purge: () => ch.purgeQueue(broker.names.queue('io')),
    async dispose() {
      const queues = broker.names.allQueues();
      await broker.close();
      await store.close();
      await db.pool.query(`DROP DATABASE IF EXISTS \`${tag}\``);
      await db.pool.end();
      for (const q of queues) await ch.deleteQueue(q).catch(() => undefined);
      await ch.deleteExchange(broker.names.exchange).catch(() => undefined);
      await conn.close();
    },
  };
}

/** `n` dead tasks of TYPE, through the store in batches (insert, claim, dead-letter): real rows and history. */
async function makeDead(e, n) {
  const newId = createIdGenerator(Date.now);
  const defaults = {maxRetries: 0, payloadLimitBytes: 65_536, cell: 'default'};
  for (let done = 0; done < n; done += CHUNK) {
    const k = Math.min(CHUNK, n - done);
    const tasks = Array.from({length: k}, (_, i) => validateTaskSpec({type: TYPE, payload: {n: done + i}}, defaults, Date.now(), newId));
    await e.store.tasksInsert({tasks, actor: 'bench:1'});
    const {claimed} = await e.store.tasksClaim({ids: tasks.map((t) => t.id), worker: 'bench:setup', leaseMs: 600_000});
    await e.store.outcomesApply({
      outcomes: claimed.map((c) => ({kind: 'deadLetter', id: c.id, fence: c.fence, error: 'downstream 503'})),
      actor: 'bench:setup',
    });
  }
}

/**
 * R0, the machine's ceiling: the statements a replay must run, by hand on copies of the tables
 * (no ax code): per 2000 ids in id order, a locking read, the state UPDATE and a history INSERT in
 * one transaction. Rows/s.
 */
async function rawReplay(e) {
  await e.sql('CREATE TABLE raw_tasks LIKE tasks');
  await e.sql('CREATE TABLE raw_history LIKE task_history');
  await e.sql('INSERT INTO raw_tasks SELECT * FROM tasks');
  const c = await e.connection();
  try {
    const t0 = performance.now();
    let n = 0;
    for (let after = ''; ;) {
      const [rows] = await c.query(
        "SELECT id FROM raw_tasks WHERE cell = 'default' AND type = ? AND state = 'dead' AND id > ? ORDER BY id LIMIT 2000",
        [TYPE, after],
      );
      if (rows.length === 0) break;
      const ids = rows.map((r) => r.id);
      await c.query('START TRANSACTION');
      await c.query('SELECT id, attempt, fence FROM raw_tasks WHERE id IN (?) FOR UPDATE', [ids]);
      await c.query(
        "UPDATE raw_tasks SET state = 'submitted', retry_base = attempt, run_at = NOW(3), published_at = NULL, finished_at = NULL, updated_at = NOW(3) WHERE id IN (?) AND state = 'dead'",
        [ids],
      );
      await c.query('INSERT INTO raw_history (task_id, from_state, to_state, attempt, worker, at, error) VALUES ?', [
        ids.map((id) => [id, 'dead', 'submitted', 1, 'raw:1', new Date(), 'replayed by bench']),
      ]);
      await c.query('COMMIT');
      n += ids.length;
      after = ids.at(-1);
    }
    return (n * 1000) / (performance.now() - t0);
  } finally {
    c.release();
    await e.sql('DROP TABLE raw_tasks');
    await e.sql('DROP TABLE raw_history');
  }
}

/** One replay of every dead TYPE task as the CLI runs it; returns the plan time and the run's figures. */
async function replayAll(e, rate) {
  for (const k of Object.keys(e.timing)) delete e.timing[k];
  const sel = {filter: {type: TYPE}};
  const t0 = performance.now();
  const plan = await planReplay(e.store, sel, {});
  const planMs = performance.now() - t0;
  const r = await runReplay(
    {
      store: e.store,
      broker: e.broker,
      clock: e.rt.clock,
      logger: e.rt.logger,
      actor: 'bench:1',
      operator: 'bench',
      reason: 'bench',
      command: 'dlq replay',
      ...(rate === undefined ? {} : {rate}),
    },
    sel,
    plan,
  );
  if (r.replayed !== plan.total || r.skipped.length > 0 || r.unrung > 0)
    throw new Error(`replay incomplete: ${r.replayed}/${plan.total} replayed, ${r.skipped.length} skipped, ${r.unrung} unrung`);
  await e.purge();
  return {planMs, replayed: r.replayed, elapsedMs: r.elapsedMs, perSecond: (r.replayed * 1000) / r.elapsedMs, timing: {...e.timing}};
}

/** R1 and R2 (see the header); returns the figures and a Markdown section. */
export async function runReplayBench({quick = false, n, rate = 5000} = {}) {
  n ??= quick ? 20_000 : 100_000;
  const e = await environment();
  try {
    const s0 = performance.now();
    await makeDead(e, n);
    const setupMs = performance.now() - s0;
    const raw = await rawReplay(e);
    const free = await replayAll(e, undefined);
    // The same tasks dead again: one statement (setup, not measured).
    await e.sql("UPDATE tasks SET state = 'dead', finished_at = NOW(3), published_at = NULL WHERE type = ?", [TYPE]);
    const paced = await replayAll(e, rate);
    const off = (paced.perSecond / rate - 1) * 100;
    const f = (x, d = 0) => (Number.isFinite(x) ? x.toLocaleString('en-US', {maximumFractionDigits: d, minimumFractionDigits: d}) : '–');
    const where = Object.entries(free.timing)
      .map(([k, ms]) => `${k} ${f((ms * 100) / free.elapsedMs)} %`)
      .join(', ');
    const md = [
      '### Dead-letter replay',
      '',
      '| workload | figure | goal |',
      '| --- | --- | --- |',
      `| R0: raw locking read + UPDATE + history INSERT per 2,000, ${f(n)} rows | ${f(raw)} rows/s | calibration (this machine's ceiling) |`,
      `| R1: ${f(n)} dead tasks replayed, no --rate (plan ${f(free.planMs)} ms, not counted) | **${f(free.perSecond)}** tasks/s marked (${f(free.perSecond / raw, 2)}× R0; ${f(free.elapsedMs)} ms; ${where}) | ≥ 20,000 tasks/s |`,
      `| R2: the same ${f(n)}, --rate ${f(rate)} | ${f(paced.perSecond)} tasks/s achieved (${off >= 0 ? '+' : ''}${f(off, 1)} % of the target) | within ±5 % |`,
      '',
      `Setup (not measured): ${f(n)} tasks inserted, claimed and dead-lettered through the store in batches of ${f(CHUNK)}, ${f(setupMs / 1000, 1)} s.`,
    ].join('\n');
    return {n, rate, setupMs, raw, free, paced, rateErrorPercent: off, markdown: md};
  } finally {
    await e.dispose();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const {values} = parseArgs({
    options: {
      quick: {type: 'boolean', default: false},
      n: {type: 'string'},
      rate: {type: 'string'},
      json: {type: 'boolean', default: false},
    },
  });
  const r = await runReplayBench({
    quick: values.quick,
    ...(values.n === undefined ? {} : {n: Number.parseInt(values.n, 10)}),
    ...(values.rate === undefined ? {} : {rate: Number.parseInt(values.rate, 10)}),
  });
  console.log(values.json ? JSON.stringify(r, null, 2) : r.markdown);
  process.exit(0);
}
