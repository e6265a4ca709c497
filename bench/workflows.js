#!/usr/bin/env node
// Dependencies and batches (docs/workflows.md), runnable alone (after npm run build):
//   node bench/workflows.js [--quick] [--chain N] [--batch M] [--json]
// In its own ax database and AMQP prefix, with one in-process ax worker (io pool, default settings,
// the no-op handler of bench/handlers.js):
//   - a chain of N tasks (default 1,000; --quick 200), each `after` the previous, submitted in one
//     submitBatch: steps/s = (N − 1) / (last finish − first finish), from the rows' finished_at
//     (database clock). Goal (issue 26): ≥ 200 steps/s;
//   - a batch of M no-op tasks (default 100,000; --quick 10,000) with a callback: the callback's
//     latency = its start (started_at) − the last member's finished_at. Goal: ≤ 2 s.
// Keep runs short on a shared machine: --quick takes a few seconds.
import {randomBytes, randomUUID} from 'node:crypto';
import {fileURLToPath} from 'node:url';
import {parseArgs} from 'node:util';
import amqp from 'amqplib';
import mysql from 'mysql2/promise';
import {axConfig} from './lib/consumers.js';

const HANDLERS = fileURLToPath(new URL('handlers.js', import.meta.url));
const MYSQL_ROOT = process.env.AX_BENCH_MYSQL_ROOT ?? 'mysql://root@127.0.0.1:3306';
const AMQP_URL = process.env.AX_BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const log = (msg) => process.stderr.write(`[workflows] ${msg}\n`);

const {values: args} = parseArgs({
  options: {quick: {type: 'boolean'}, chain: {type: 'string'}, batch: {type: 'string'}, json: {type: 'boolean'}},
});
const chainN = Number(args.chain ?? (args.quick ? 200 : 1000));
const batchN = Number(args.batch ?? (args.quick ? 10_000 : 100_000));

const tag = `ax_bench_wf_${randomBytes(3).toString('hex')}`;
const {createRuntime, openBroker, openDatabase, openStore} = await import('./lib/ax.js');
const {createClient} = await import('../dist/core/client.js');
const {createWorkerService} = await import('../dist/core/worker/service.js');
const {schemaMigrate} = await import('../dist/core/store/mysql/migrate.js');
const rt = createRuntime(await axConfig({mysqlUrl: `${MYSQL_ROOT}/${tag}`, amqpUrl: AMQP_URL, amqpPrefix: tag}));
const db = await openDatabase(rt);
await schemaMigrate(db);
const sql = async (q, p = []) => (await db.pool.query(q, p))[0];
const store = await openStore(rt);
const broker = await openBroker(rt, {reconnect: false});
const client = createClient({...rt, store, broker, release: async () => undefined});
const worker = await createWorkerService({
  ...rt,
  store: await openStore(rt),
  broker: await openBroker(rt, {reconnect: false}),
  handlersModule: HANDLERS,
  pools: ['io'],
  workerId: 'bench-wf',
});
await worker.start();

const waitEnded = async (id, timeoutMs) => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [r] = await sql('SELECT state FROM tasks WHERE id = ?', [id]);
    if (r && ['succeeded', 'dead', 'cancelled'].includes(r.state)) return r.state;
    if (Date.now() > deadline) throw new Error(`task ${id} did not end within ${timeoutMs} ms`);
    await new Promise((res) => setTimeout(res, 20));
  }
};

const report = {};
try {
  // A chain.
  const ids = Array.from({length: chainN}, () => randomUUID());
  log(`chain of ${chainN}`);
  await client.submitBatch(ids.map((id, i) => ({id, type: 'bench_noop', ...(i === 0 ? {} : {after: [ids[i - 1]]})})));
  await waitEnded(ids[chainN - 1], 600_000);
  const [c] = await sql(
    `SELECT TIMESTAMPDIFF(MICROSECOND, MIN(finished_at), MAX(finished_at)) / 1000 AS ms, SUM(state = 'succeeded') AS ok FROM tasks WHERE id IN (?)`,
    [ids],
  );
  const rows = await sql('SELECT id, started_at, finished_at, updated_at FROM tasks WHERE id IN (?)', [ids]);
  const byId = new Map(rows.map((r) => [r.id, r]));
  const med = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const run = [];
  const gap = [];
  for (let i = 1; i < chainN; i++) {
    const p = byId.get(ids[i - 1]);
    const t = byId.get(ids[i]);
    run.push(t.finished_at - t.started_at);
    gap.push(t.started_at - p.finished_at);
  }
  log(`chain step (median ms): claim → outcome commit ${med(run)}, parent's outcome → child's claim ${med(gap)}`);
  report.chain = {
    tasks: chainN,
    succeeded: Number(c.ok),
    ms: Number(c.ms),
    stepsPerSecond: Math.round(((chainN - 1) / Number(c.ms)) * 1000),
  };
  log(`chain: ${report.chain.stepsPerSecond} steps/s (goal ≥ 200)`);

  // A batch with a callback.
  log(`batch of ${batchN}`);
  const t0 = Date.now();
  const b = await client.submitBatch(
    Array.from({length: batchN}, () => ({type: 'bench_noop'})),
    {callback: {type: 'bench_noop'}},
  );
  const submitMs = Date.now() - t0;
  await waitEnded(b.callbackId, 1_800_000);
  const [last] = await sql('SELECT MAX(finished_at) AS at FROM tasks WHERE batch_id = ? AND id <> ?', [b.batchId, b.callbackId]);
  const [cb] = await sql('SELECT started_at FROM tasks WHERE id = ?', [b.callbackId]);
  const [counts] = await sql('SELECT total, succeeded, dead, cancelled FROM task_batches WHERE id = ?', [b.batchId]);
  report.batch = {
    tasks: batchN,
    submitMs,
    callbackLatencyMs: cb.started_at.getTime() - last.at.getTime(),
    counts: {total: counts.total, succeeded: counts.succeeded, dead: counts.dead, cancelled: counts.cancelled},
  };
  log(`batch: callback ${report.batch.callbackLatencyMs} ms after the last member (goal ≤ 2000)`);
} finally {
  await worker.stop({graceMs: 1000});
  await client.close().catch(() => undefined);
  await store.close?.();
  await db.pool.end();
  const root = await mysql.createConnection(`${MYSQL_ROOT}/mysql`);
  await root.query(`DROP DATABASE IF EXISTS \`${tag}\``);
  await root.end();
  const conn = await amqp.connect(AMQP_URL);
  for (const q of broker.names.allQueues()) {
    const ch = await conn.createChannel();
    ch.on('error', () => undefined);
    await ch.deleteQueue(q).catch(() => undefined);
    await ch.close().catch(() => undefined);
  }
  await conn.close();
  await broker.close?.().catch(() => undefined);
}
process.stdout.write(args.json ? `${JSON.stringify(report)}\n` : `${JSON.stringify(report, null, 2)}\n`);
process.exit(0);
