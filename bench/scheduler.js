#!/usr/bin/env node
// P5 and P6 of the benchmark suite (shared/design/performance.md), runnable alone:
//   node bench/scheduler.js [--quick]     (after npm run build)
// and called by bench/run.js. Against the local MariaDB and RabbitMQ, in its own database/prefix:
//   P5a  N delayed tasks spread over [lo, hi] s; one ax scheduler (in this process), one ax worker
//        (child process): lateness = first start (history `running`, database clock) − run_at;
//        p50/p99/max and the count started early (must be 0).
//   P5b  N tasks due at one instant: how long after it the last one started (goal ≤ 5 s).
//   P6   RSS of an `ax scheduler` process: with an empty table, with M far-future tasks in the table
//        (must stay the same: memory bounded by the horizon), and holding K tasks due within it.
import {spawn} from 'node:child_process';
import {randomBytes} from 'node:crypto';
import {readFileSync} from 'node:fs';
import {fileURLToPath} from 'node:url';
import {parseArgs} from 'node:util';
import amqp from 'amqplib';
import {loadConfig} from '../dist/core/config/config.js';
import {createRuntime, openBroker, openDatabase, openStore} from './lib/ax.js';
import {schemaMigrate} from '../dist/core/store/mysql/migrate.js';
import {createClient} from '../dist/core/client.js';
import {createSchedulerService} from '../dist/core/scheduler/service.js';
import {createLogger} from '../dist/core/log.js';
import {leftover, phase, phaseTimeouts, stopChild, trackChild} from './lib/guard.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MYSQL_ROOT = process.env.AX_BENCH_MYSQL_ROOT ?? 'mysql://root@127.0.0.1:3306';
const AMQP_URL = process.env.AX_BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function pct(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

async function environment(extraEnv = {}) {
  const tag = `ax_bench_s_${randomBytes(3).toString('hex')}`;
  const env = {AX_MYSQL_URL: `${MYSQL_ROOT}/${tag}`, AX_AMQP_URL: AMQP_URL, AX_AMQP_PREFIX: tag, AX_LOG_LEVEL: 'warn', ...extraEnv};
  const config = loadConfig({env, cwd: '/nonexistent'});
  const rt = createRuntime(config, createLogger('warn', {bench: tag}));
  const db = await openDatabase(rt);
  await schemaMigrate(db);
  const closers = [];
  let disposing;
  async function dispose() {
    try {
      for (const c of closers.reverse()) await c().catch(() => undefined);
    } finally {
      // Dropped whatever happened above.
      await db.pool.query(`DROP DATABASE IF EXISTS \`${tag}\``);
      await db.pool.end();
      const conn = await amqp.connect(AMQP_URL);
      const ch = await conn.createChannel();
      for (const q of ['io', 'cpu', 'poison']) await ch.deleteQueue(`${tag}.default.${q}`).catch(() => undefined);
      await ch.deleteExchange(tag).catch(() => undefined);
      await conn.close();
    }
  }
  // Also run if the phase using this environment times out (bench/lib/guard.js).
  const forget = leftover(() => (disposing ??= dispose()));
  return {
    tag,
    env,
    config,
    rt,
    db,
    sql: async (q, p = []) => (await db.pool.query(q, p))[0],
    async store() {
      const s = await openStore(rt);
      closers.push(() => s.close());
      return s;
    },
    async broker() {
      const b = await openBroker(rt, {reconnect: true});
      closers.push(() => b.close());
      return b;
    },
    spawnAx(args, env2 = {}) {
      const child = trackChild(
        spawn(process.execPath, ['bin/run.js', ...args], {
          cwd: ROOT,
          env: {...process.env, ...env, ...env2, NODE_ENV: 'production'},
          stdio: ['ignore', 'ignore', 'pipe'],
        }),
      );
      child.stderr.pipe(process.stderr, {end: false});
      // stopChild also resolves for a child that is already gone (one killed by a signal has
      // exitCode null: waiting for its 'exit' again hung the suite).
      closers.push(() => stopChild(child));
      return child;
    },
    async dispose() {
      forget();
      await (disposing ??= dispose());
    },
  };
}

async function waitAllStarted(e, n, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [r] = await e.sql("SELECT COUNT(*) AS n FROM tasks WHERE state = 'succeeded'");
    if (Number(r.n) >= n) return;
    if (Date.now() > deadline) throw new Error(`only ${r.n} of ${n} tasks finished within ${timeoutMs} ms`);
    await sleep(250);
  }
}

/** Submits `n` tasks with run_at from `dueAt(i)` (epoch ms, producer clock) and measures starts. */
async function delayedRun({n, dueAt, timeoutMs}) {
  const e = await environment();
  try {
    const worker = e.spawnAx(['worker', '--handlers', 'bench/handlers.js', '--pools', 'io', '--io-concurrency', '256']);
    const store = await e.store();
    const broker = await e.broker();
    const scheduler = createSchedulerService({...e.rt, config: e.config, store, broker});
    await scheduler.start();
    const client = createClient({...e.rt, store, broker, release: async () => undefined});
    const t0 = Date.now();
    for (let i = 0; i < n; i++)
      await client.submit({type: 'bench_noop', payload: {i}, delay: Math.max(0, Math.round(dueAt(i, t0) - Date.now()))});
    await client.flush();
    await waitAllStarted(e, n, timeoutMs);
    const rows = await e.sql(
      // The first attempt's start: on its outcome row (started_at), all finished here.
      "SELECT TIMESTAMPDIFF(MICROSECOND, t.run_at, h.started_at) / 1000 AS late FROM tasks t JOIN task_history h ON h.task_id = t.id AND h.from_state = 'running' AND h.attempt = 1 AND h.started_at IS NOT NULL",
    );
    const late = rows.map((r) => Number(r.late)).sort((a, b) => a - b);
    await scheduler.stop();
    void worker;
    return {
      n,
      started: late.length,
      early: late.filter((x) => x < 0).length,
      p50: pct(late, 50),
      p99: pct(late, 99),
      max: late[late.length - 1],
      summary: scheduler.summary(),
    };
  } finally {
    await e.dispose();
  }
}

function rssMb(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** Resolves when `child` writes a stderr line matching `re`; rejects if it exits first. */
function stderrLine(child, re) {
  return new Promise((resolve, reject) => {
    let buf = '';
    const onData = (d) => {
      buf += d.toString();
      if (re.test(buf)) {
        child.stderr.off('data', onData);
        child.off('exit', onExit);
        resolve();
      }
    };
    const onExit = (code, signal) => reject(new Error(`ax scheduler exited (${code ?? signal}) before it was running`));
    child.stderr.on('data', onData);
    child.once('exit', onExit);
  });
}

/** RSS of an `ax scheduler` process a few loads after its start (the first load done) over the table as it is. */
async function schedulerRss(e, settleMs) {
  const child = e.spawnAx(['scheduler', '--summary-every', '0'], {AX_SCHEDULER_LOAD_EVERY: '500ms'});
  await stderrLine(child, /ax scheduler \S+ running/);
  await sleep(settleMs);
  const rss = rssMb(child.pid);
  await stopChild(child);
  return rss;
}

async function p6({farFuture, inHorizon, settleMs}) {
  const e = await environment();
  try {
    const empty = await schedulerRss(e, settleMs);
    // Far-future rows straight in SQL (they only have to exist): 30 days ahead, in batches.
    for (let done = 0; done < farFuture; done += 100_000) {
      const k = Math.min(100_000, farFuture - done);
      await e.sql(
        `INSERT INTO tasks (id, cell, type, pool, state, attempt, max_retries, run_at, fence, content_hash, created_at, updated_at, payload)
         SELECT CONCAT(LPAD(HEX(${done} + seq), 8, '0'), '-0000-7000-8000-', LPAD(HEX(seq), 12, '0')), 'default', 'bench_noop', 'io', 'submitted', 0, 5,
                NOW(3) + INTERVAL 30 DAY + INTERVAL seq SECOND, 0, 'x', NOW(3), NOW(3), '{}'
           FROM seq_1_to_${k}`,
      );
    }
    const withFar = await schedulerRss(e, settleMs);
    await e.sql(
      `INSERT INTO tasks (id, cell, type, pool, state, attempt, max_retries, run_at, fence, content_hash, created_at, updated_at, payload)
       SELECT CONCAT('ffffffff-0000-7000-8000-', LPAD(HEX(seq), 12, '0')), 'default', 'bench_noop', 'io', 'submitted', 0, 5,
              NOW(3) + INTERVAL 60 SECOND, 0, 'x', NOW(3) - INTERVAL 1 MINUTE, NOW(3), '{}'
         FROM seq_1_to_${inHorizon}`,
    );
    const holding = await schedulerRss({...e, spawnAx: (a, env2) => e.spawnAx(a, {...env2, AX_SCHEDULER_HORIZON: '2m'})}, settleMs);
    return {farFuture, inHorizon, emptyMb: empty, farFutureMb: withFar, holdingMb: holding};
  } finally {
    await e.dispose();
  }
}

export const SCHEDULER_PARTS = ['p5a', 'p5b', 'p6'];

/**
 * Runs P5a, P5b and P6 (or the `parts` named), each as one phase of `runPhase(name, fn)` (run.js
 * passes its timeout wrapper; alone, bench/lib/guard.js's phase() with --phase-timeout). Sizes:
 * `n` (P5 tasks), `farFuture` and `inHorizon` (P6 rows). Returns the figures and a Markdown section.
 */
export async function runSchedulerBench({quick = false, parts = SCHEDULER_PARTS, runPhase = (name, fn) => fn(), sizes = {}} = {}) {
  const n = sizes.n ?? (quick ? 5000 : 50_000);
  const farFuture = sizes.farFuture ?? (quick ? 100_000 : 1_000_000);
  const inHorizon = sizes.inHorizon ?? (quick ? 5000 : 50_000);
  const spread = quick ? [3000, 15_000] : [5000, 60_000];
  const want = new Set(parts);
  const p5a = want.has('p5a')
    ? await runPhase('p5a', () =>
        delayedRun({n, dueAt: (i, t0) => t0 + spread[0] + ((spread[1] - spread[0]) * i) / n, timeoutMs: spread[1] + 60_000}),
      )
    : undefined;
  const p5b = want.has('p5b')
    ? await runPhase('p5b', () => {
        const burstAt = Date.now() + (quick ? 8000 : 20_000);
        return delayedRun({n, dueAt: () => burstAt, timeoutMs: 120_000});
      })
    : undefined;
  const p6r = want.has('p6') ? await runPhase('p6', () => p6({farFuture, inHorizon, settleMs: quick ? 3000 : 5000})) : undefined;
  const f = (x, d = 0) => (Number.isFinite(x) ? x.toLocaleString('en-US', {maximumFractionDigits: d, minimumFractionDigits: d}) : '–');
  const md = ['### Scheduler (P5, P6)', '', '| workload | figure | goal |', '| --- | --- | --- |'];
  if (p5a)
    md.push(
      `| P5a: ${f(n)} tasks due over ${spread[0] / 1000}–${spread[1] / 1000} s | lateness p50 ${f(p5a.p50, 1)} ms, p99 ${f(p5a.p99, 1)} ms, max ${f(p5a.max, 1)} ms; early ${p5a.early} | p99 ≤ 50 ms, early 0 |`,
    );
  if (p5b)
    md.push(
      `| P5b: ${f(n)} tasks due at one instant | last started ${f(p5b.max / 1000, 2)} s after it (p50 ${f(p5b.p50, 0)} ms); early ${p5b.early} | ≤ 5 s, early 0 |`,
    );
  if (p6r)
    md.push(
      `| P6: scheduler RSS, empty table | ${f(p6r.emptyMb, 1)} MB | |`,
      `| P6: … with ${f(p6r.farFuture)} far-future tasks in the table | ${f(p6r.farFutureMb, 1)} MB | ≈ empty (bounded by the horizon) |`,
      `| P6: … holding ${f(p6r.inHorizon)} tasks due within its horizon | ${f(p6r.holdingMb, 1)} MB | |`,
    );
  return {p5a, p5b, p6: p6r, markdown: md.join('\n')};
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const {values} = parseArgs({
    options: {
      quick: {type: 'boolean', default: false},
      json: {type: 'boolean', default: false},
      only: {type: 'string'},
      'phase-timeout': {type: 'string'},
      n: {type: 'string'},
      'far-future': {type: 'string'},
      'in-horizon': {type: 'string'},
    },
  });
  const int = (x) => (x === undefined ? undefined : Math.max(1, Number.parseInt(x, 10)));
  const timeoutOf = phaseTimeouts(values['phase-timeout'], values.quick ? 5 * 60_000 : 20 * 60_000);
  const log = (m) => process.stderr.write(`[bench scheduler] ${m}\n`);
  try {
    const r = await runSchedulerBench({
      quick: values.quick,
      parts: values.only ? values.only.split(',').map((x) => x.trim()) : SCHEDULER_PARTS,
      runPhase: (name, fn) => phase(name, timeoutOf(name), fn, log),
      sizes: {n: int(values.n), farFuture: int(values['far-future']), inHorizon: int(values['in-horizon'])},
    });
    console.log(values.json ? JSON.stringify(r, null, 2) : r.markdown);
  } catch (e) {
    log(`FAILED: ${e?.stack ?? e}`);
    process.exitCode = 1;
  }
  // Pools and connections of an abandoned phase must not keep the process alive.
  process.exit();
}
