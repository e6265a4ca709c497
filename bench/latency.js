#!/usr/bin/env node
// Latency at ordinary load (P10 in shared/design/performance.md), runnable alone:
//   node bench/latency.js [--quick] [--json] [--seconds S] [--rates 100,2000] [--runs N] [--queue-type Q]   (after npm run build)
// and called by bench/run.js --latency (or --only latency). In its own ax database, business
// database, AMQP prefix and Redis key prefix, each run (ax and BullMQ alternating which goes first):
//   - submit → handler start at each steady rate (default 100/s and 2,000/s, 30 s each; --quick 5 s):
//     ax's SDK producer here (client.submit() per task, as a user calls it; no flush) and an ax
//     worker (io pool, default settings) in a child process; BullMQ's Queue.add per job here and a
//     Worker (concurrency 50) in a child process. The payload carries its due time `t`; a no-op
//     handler records start − t (lib/latency-sink.js). Open-loop pacing (lib/latency.js openLoop):
//     a stall delays no later submit, so it shows in the figures. The first second is left out;
//   - the durable floor (lib/latency-raw.js): the same schedule through the raw drivers with the
//     fewest durable steps (INSERT, confirmed publish, claim UPDATE), a bound from below for ax;
//   - outbox commit → start at 100/s: rows INSERTed with autocommit into task_outbox, one ax relay
//     here, the same ax worker;
//   - where ax's time goes: its store/broker calls here and its claims in the worker, per task id.
// Reports p50/p90/p99/max per system and rate, the ax ÷ BullMQ ratios, median [min–max] over runs.
import {execFileSync} from 'node:child_process';
import {randomBytes} from 'node:crypto';
import {fileURLToPath} from 'node:url';
import {parseArgs} from 'node:util';
import amqp from 'amqplib';
import mysql from 'mysql2/promise';
import {axConfig} from './lib/consumers.js';
import {forkConsumer} from './lib/fork.js';
import {leftover} from './lib/guard.js';
import {epochMs} from './lib/latency-sink.js';
import {breakdown, dist, openLoop, renderLatency, traceProducer} from './lib/latency.js';
import {sleep} from './lib/stats.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HANDLERS = fileURLToPath(new URL('handlers.js', import.meta.url));
const MYSQL_ROOT = process.env.AX_BENCH_MYSQL_ROOT ?? 'mysql://root@127.0.0.1:3306';
const AMQP_URL = process.env.AX_BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const TYPE = 'bench_latency';
const BULL_CONCURRENCY = 50;
const WARMUP_MS = 1000;
const STALL_MS = 30_000;
/** P10's goals, ms. */
const GOALS = {100: {p50: 5, p99: 25}, 2000: {p50: 10, p99: 50}};

const defaultLog = (msg) => process.stderr.write(`[latency ${String(Math.round(performance.now() / 1000)).padStart(4)} s] ${msg}\n`);

/** The databases, queues, producers, relay parts and consumers of one benchmark; `dispose()` removes them all. */
async function environment(log, queueType) {
  const tag = `ax_bench_lat_${randomBytes(3).toString('hex')}`;
  const biz = `${tag}_biz`;
  const disposers = [];
  // Also run when a phase of bench/run.js times out (lib/guard.js).
  const unregister = leftover(() => dispose());
  const dispose = async () => {
    unregister();
    for (const d of disposers.splice(0).reverse()) await d().catch((e) => log(`cleanup: ${e?.message ?? e}`));
  };
  try {
    const root = await mysql.createConnection(`${MYSQL_ROOT}/mysql`);
    disposers.push(async () => {
      await root.query(`DROP DATABASE IF EXISTS \`${tag}\``);
      await root.query(`DROP DATABASE IF EXISTS \`${biz}\``);
      await root.end();
    });
    await root.query(`CREATE DATABASE \`${biz}\``);
    const {createRuntime, openBroker, openDatabase, openOutbox, openStore} = await import('./lib/ax.js');
    const {createClient} = await import('../dist/core/client.js');
    const m = await import('../dist/core/store/mysql/migrate.js');
    const overrides = {mysqlUrl: `${MYSQL_ROOT}/${tag}`, amqpUrl: AMQP_URL, amqpPrefix: tag, queueType};
    const rt = createRuntime(await axConfig({...overrides, outboxMysqlUrl: `${MYSQL_ROOT}/${biz}`}));
    const db = await openDatabase(rt);
    disposers.push(() => db.pool.end());
    await (m.schemaMigrate ?? m.migrate)(db);
    const store = await openStore(rt);
    const broker = await openBroker(rt, {reconnect: false});
    const queues = broker.names.allQueues();
    disposers.push(async () => {
      const conn = await amqp.connect(AMQP_URL);
      for (const [kind, name] of [...queues.map((q) => ['queue', q]), ['exchange', broker.names.exchange]]) {
        const ch = await conn.createChannel();
        ch.on('error', () => undefined);
        await (kind === 'queue' ? ch.deleteQueue(name) : ch.deleteExchange(name)).catch(() => undefined);
        await ch.close().catch(() => undefined);
      }
      await conn.close();
    });
    const trace = traceProducer(store, broker);
    const client = createClient({...rt, store, broker, release: () => broker.close().then(() => store.close())});
    disposers.push(() => client.close());
    // The relay's own connections, as `ax relay` has.
    const outbox = await openOutbox(rt, {requireTable: false});
    disposers.push(() => outbox.close());
    await outbox.outboxCreateTable();
    const relayStore = await openStore(rt);
    disposers.push(() => relayStore.close());
    const relayBroker = await openBroker(rt, {reconnect: false});
    disposers.push(() => relayBroker.close());
    const bizPool = mysql.createPool({uri: `${MYSQL_ROOT}/${biz}`, connectionLimit: 4});
    disposers.push(() => bizPool.end());

    const axWorker = await forkConsumer(
      'ax-worker',
      {overrides, handlersModule: HANDLERS, workerId: `${tag}-worker`},
      'ax worker (latency)',
    );
    disposers.push(() => axWorker.dispose());

    // BullMQ on the local Redis, started (without persistence) when it is down.
    if (!process.env.AX_BENCH_REDIS_URL) execFileSync('bash', [`${ROOT}/scripts/redis.sh`], {stdio: ['ignore', 'ignore', 'inherit']});
    const {destroyQueue, openQueue} = await import('./lib/bullmq.js');
    const prefix = `${tag}_bull`;
    const queue = openQueue('latency', prefix);
    await queue.waitUntilReady();
    disposers.push(() => destroyQueue(queue));
    const bullWorker = await forkConsumer(
      'bullmq-worker',
      {name: 'latency', prefix, concurrency: BULL_CONCURRENCY},
      'BullMQ worker (latency)',
    );
    disposers.push(() => bullWorker.dispose());

    const truncate = async () => {
      for (const t of ['tasks', 'task_history']) await db.pool.query(`TRUNCATE TABLE \`${t}\``);
      const [has] = await db.pool.query("SHOW TABLES LIKE 'task_payloads'");
      if (has.length > 0) await db.pool.query('TRUNCATE TABLE task_payloads');
    };
    const relay = async () => {
      const {createRelayService} = await import('../dist/core/outbox/service.js');
      return createRelayService({...rt, outbox, store: relayStore, broker: relayBroker});
    };
    const {openRawFloor} = await import('./lib/latency-raw.js');
    const raw = await openRawFloor({mysqlUrl: `${MYSQL_ROOT}/${tag}`, amqpUrl: AMQP_URL, queue: `${tag}.rawfloor`, queueType});
    disposers.push(() => raw.dispose());
    return {tag, rt, client, trace, axWorker, queue, bullWorker, raw, bizPool, truncate, relay, dispose};
  } catch (e) {
    await dispose();
    throw e;
  }
}

/** Waits until `worker` has counted `n` completions since arm(n); {ok, error} after STALL_MS without progress. */
async function waitDone(worker, n) {
  let last = -1;
  let since = performance.now();
  for (;;) {
    const c = await worker.count();
    if (c >= n) return {ok: true};
    if (c !== last) [last, since] = [c, performance.now()];
    else if (performance.now() - since > STALL_MS) return {ok: false, error: `stalled at ${c} of ${n} for ${STALL_MS / 1000} s`};
    await sleep(100);
  }
}

/**
 * One measurement: `submit(i, t)` on an open-loop schedule at `rate` for `seconds`, then waits until
 * the worker has run them all. Returns {label, rate, schedule, latency: dist of start − t past the
 * warm-up, samples, claims, ok, error}.
 */
async function measure({label, worker, rate, seconds, submit, log}) {
  const n = Math.round(rate * seconds);
  await worker.arm(n);
  await worker.latencies();
  const schedule = await openLoop(rate, seconds, submit);
  const d =
    schedule.errors > 0 ? {ok: false, error: `${schedule.errors} submit(s) failed: ${schedule.firstError}`} : await waitDone(worker, n);
  const {starts, claims} = await worker.latencies();
  const samples = starts.filter(([, t]) => t >= schedule.t0 + WARMUP_MS);
  const latency = dist(samples.map(([, t, start]) => start - t));
  log(
    `${label} at ${rate}/s: p50 ${latency.p50.toFixed(2)} ms, p99 ${latency.p99.toFixed(2)} ms, max ${latency.max.toFixed(1)} ms (${latency.n} tasks)`,
  );
  return {label, rate, schedule, latency, samples, claims, ok: d.ok, error: d.error};
}

async function measureAx(e, rate, seconds, log) {
  await e.truncate();
  e.trace.take();
  e.trace.on = true;
  try {
    const r = await measure({
      label: 'ax',
      worker: e.axWorker,
      rate,
      seconds,
      log,
      submit: (n, t) => e.client.submit({type: TYPE, payload: {t, n}}),
    });
    return {...r, producer: e.trace.take()};
  } finally {
    e.trace.on = false;
  }
}

const measureBull = (e, rate, seconds, log) =>
  measure({label: 'BullMQ', worker: e.bullWorker, rate, seconds, log, submit: (n, t) => e.queue.add('latency', {t, n})});

const measureRaw = (e, rate, seconds, log) =>
  measure({label: 'durable floor', worker: e.raw.worker, rate, seconds, log, submit: (n, t) => e.raw.submit(n, t)});

const MEASURES = {ax: measureAx, bullmq: measureBull, raw: measureRaw};
/**
 * The durable floor runs at these rates only: one autocommit INSERT and one confirm per task saturate
 * near 2,000/s on this machine (it measured 1.4 s p50 there), and a baseline slower than ax bounds
 * nothing; made faster it would batch, which is what ax does.
 */
const RAW_MAX_RATE = 200;

/** Outbox rows at `rate` (autocommit INSERTs) through one relay; commit → start and INSERT call → start. */
async function measureOutbox(e, rate, seconds, log) {
  const relay = await e.relay();
  relay.start();
  const committed = new Float64Array(Math.round(rate * seconds));
  try {
    const r = await measure({
      label: 'outbox',
      worker: e.axWorker,
      rate,
      seconds,
      log,
      submit: async (n, t) => {
        await e.bizPool.query('INSERT INTO task_outbox (type, payload) VALUES (?, ?)', [TYPE, JSON.stringify({t, n})]);
        committed[n] = epochMs();
      },
    });
    const commitToStart = dist(r.samples.map(([, , start, n]) => start - committed[n]));
    return {label: 'outbox', rate, schedule: r.schedule, ok: r.ok, error: r.error, insertToStart: r.latency, commitToStart};
  } finally {
    await relay.stop();
  }
}

/**
 * Runs the latency benchmark (see the header) and returns {seconds, rates, runs: [{ax: {rate:
 * result}, bullmq: {rate: result}, outbox}], breakdown: {rate: …}, ok, markdown}. Throws when the
 * environment cannot be set up; a failed measurement is reported in its result (ok false, error).
 */
export async function runLatencyBench({
  quick = false,
  seconds,
  rates = [100, 2000],
  runs = 1,
  outboxRate = 100,
  queueType = 'quorum',
  log = defaultLog,
} = {}) {
  seconds ??= quick ? 5 : 30;
  const e = await environment(log, queueType);
  try {
    log(`database ${e.tag}, ${queueType} queues; ${runs} run(s) of ${seconds} s per rate (${rates.join(', ')}/s); warm-up first`);
    await measureAx(e, 100, 2, () => undefined);
    await measureBull(e, 100, 2, () => undefined);
    const out = [];
    const traced = Object.fromEntries(rates.map((r) => [r, []]));
    for (let run = 1; run <= runs; run++) {
      const res = {ax: {}, bullmq: {}, raw: {}};
      for (const rate of rates) {
        // Alternate the order of the systems, so a drift within the run favours none.
        for (const sys of run % 2 ? ['ax', 'bullmq', 'raw'] : ['raw', 'bullmq', 'ax']) {
          if (sys === 'raw' && rate > RAW_MAX_RATE) continue;
          await sleep(1000);
          const m = await MEASURES[sys](e, rate, seconds, log);
          if (sys === 'ax') traced[rate].push({samples: m.samples, producer: m.producer, claims: m.claims});
          const {samples: _s, claims: _c, producer: _p, ...kept} = m;
          res[sys][rate] = kept;
        }
      }
      if (outboxRate > 0) res.outbox = await measureOutbox(e, outboxRate, seconds, log);
      out.push(res);
    }
    const result = {
      seconds,
      rates,
      warmupMs: WARMUP_MS,
      bullConcurrency: BULL_CONCURRENCY,
      outboxRate,
      goals: GOALS,
      runs: out,
      breakdown: Object.fromEntries(rates.map((r) => [r, breakdown(traced[r])])),
    };
    result.ok = out.every((x) =>
      [...Object.values(x.ax), ...Object.values(x.bullmq), ...Object.values(x.raw), x.outbox ?? {ok: true}].every((m) => m.ok),
    );
    result.markdown = renderLatency(result);
    return result;
  } finally {
    await e.dispose();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const {values} = parseArgs({
    options: {
      quick: {type: 'boolean', default: false},
      json: {type: 'boolean', default: false},
      seconds: {type: 'string'},
      rates: {type: 'string'},
      runs: {type: 'string'},
      'outbox-rate': {type: 'string'},
      'queue-type': {type: 'string', default: 'quorum'},
      help: {type: 'boolean', short: 'h', default: false},
    },
  });
  if (values.help) {
    console.log(`usage: node bench/latency.js [--quick] [--json] [--seconds S] [--rates R,…] [--runs N] [--outbox-rate R]
  submit → handler start for ax (client.submit per task) and BullMQ (Queue.add per job) at steady rates,
  alternating in each run, plus the outbox's commit → start and where ax's time goes (after npm run build).
  --quick          5 s per rate, one run
  --seconds S      seconds per rate (default 30; quick 5)
  --rates R,…      tasks per second (default 100,2000)
  --runs N         rounds, each system at each rate once per round (default 1)
  --outbox-rate R  rows per second of the outbox part (default 100; 0 skips it)
  --queue-type Q   quorum (ax's default) or classic: ax's queues and the floor's (default quorum)
  --json           print the JSON result instead of Markdown`);
    process.exit(0);
  }
  const num = (name, s, min) => {
    if (s === undefined) return undefined;
    const x = Number(s);
    if (!(Number.isFinite(x) && x >= min)) {
      console.error(`--${name}: a number ≥ ${min}, got ${JSON.stringify(s)}`);
      process.exit(2);
    }
    return x;
  };
  if (!['quorum', 'classic'].includes(values['queue-type'])) {
    console.error(`--queue-type: quorum or classic, got ${JSON.stringify(values['queue-type'])}`);
    process.exit(2);
  }
  const r = await runLatencyBench({
    quick: values.quick,
    seconds: num('seconds', values.seconds, 2),
    rates: values.rates?.split(',').map((x) => num('rates', x.trim(), 1)),
    runs: num('runs', values.runs, 1),
    outboxRate: num('outbox-rate', values['outbox-rate'], 0),
    queueType: values['queue-type'],
  });
  console.log(values.json ? JSON.stringify(r, null, 2) : r.markdown);
  process.exit(r.ok ? 0 : 1);
}
