#!/usr/bin/env node
// Where AX_PAYLOAD_INLINE's default comes from (issue 13, big payloads stored apart), runnable alone:
//   node bench/payloads.js [--n N] [--sizes 256,1024,…] [--rounds R] [--json]      (after npm run build)
// In its own database, no broker: for each payload size, N tasks go through the store's hot path
// as a worker sees it — tasksInsert in batches of 500 (the producer's flush), tasksClaim in batches
// of 50 (a doorbell's worth), outcomesApply(complete) in batches of 50 — once with every payload
// inline (AX_PAYLOAD_INLINE above the size) and once with every payload stored apart (0), in
// alternating order, R rounds. Prints µs per task of each step (median of the rounds), the total,
// apart/inline, and the bytes of `tasks` + `task_payloads` per task (InnoDB data_length after
// ANALYZE). Also zlib's cost per payload at levels 1 and 6. The payloads are order-like JSON
// (bench/lib/payload.js), about 3× compressible. Sizes stop at 16 KiB: 500 inline payloads of 64 KiB
// are one INSERT over MariaDB's default max_allowed_packet (16 MiB), as they are for the producer.
import {randomBytes} from 'node:crypto';
import {parseArgs} from 'node:util';
import {deflateSync} from 'node:zlib';
import {loadConfig} from '../dist/core/config/config.js';
import {createLogger} from '../dist/core/log.js';
import {schemaMigrate} from '../dist/core/store/mysql/migrate.js';
import {createIdGenerator} from '../dist/core/task/id.js';
import {validateTaskSpec} from '../dist/core/task/validate.js';
import {createRuntime, openDatabase, openStore} from './lib/ax.js';
import {makePayload} from './lib/payload.js';

const MYSQL_ROOT = process.env.AX_BENCH_MYSQL_ROOT ?? 'mysql://root@127.0.0.1:3306';
const {values: argv} = parseArgs({
  options: {
    n: {type: 'string', default: '2000'},
    sizes: {type: 'string', default: '256,1024,2048,3072,4096,6144,8192,16384'},
    rounds: {type: 'string', default: '3'},
    json: {type: 'boolean', default: false},
  },
});
const N = Number(argv.n);
const ROUNDS = Number(argv.rounds);
const SIZES = argv.sizes.split(',').map(Number);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const tag = `ax_bench_pl_${randomBytes(3).toString('hex')}`;
const env = {AX_MYSQL_URL: `${MYSQL_ROOT}/${tag}`, AX_AMQP_URL: 'amqp://unused', AX_LOG_LEVEL: 'warn'};
const config = loadConfig({env, cwd: '/nonexistent', overrides: {payloadLimitBytes: 1 << 20}});
const rt = createRuntime(config, createLogger('warn', {bench: tag}));
const db = await openDatabase(rt);
await schemaMigrate(db);
const sql = async (q, p = []) => (await db.pool.query(q, p))[0];
const stores = {
  inline: await openStore({...rt, config: {...config, payloadInlineBytes: 1 << 30}}),
  apart: await openStore({...rt, config: {...config, payloadInlineBytes: 0}}),
};
const newId = createIdGenerator(Date.now);
const defaults = {maxRetries: 5, payloadLimitBytes: 1 << 20, cell: 'default'};

/** One pass of N tasks of `size` through `store`: µs per task of each step, and bytes per task. */
async function pass(store, size) {
  await sql('TRUNCATE tasks');
  await sql('TRUNCATE task_history');
  await sql('TRUNCATE task_payloads');
  const tasks = Array.from({length: N}, (_, i) =>
    validateTaskSpec({type: 'bench_payload', payload: makePayload(size, i)}, defaults, Date.now(), newId),
  );
  const us = {insert: 0, claim: 0, complete: 0};
  let t0 = performance.now();
  for (let i = 0; i < N; i += 500) await store.tasksInsert({tasks: tasks.slice(i, i + 500), actor: 'bench:1'});
  us.insert = ((performance.now() - t0) * 1000) / N;
  const claimed = [];
  t0 = performance.now();
  for (let i = 0; i < N; i += 50) {
    const r = await store.tasksClaim({ids: tasks.slice(i, i + 50).map((t) => t.id), worker: 'bench:1', leaseMs: 60_000});
    claimed.push(...r.claimed);
  }
  us.claim = ((performance.now() - t0) * 1000) / N;
  const sent = new Map(tasks.map((t) => [t.id, t.payload]));
  if (claimed.length !== N || claimed.some((c) => c.payload !== sent.get(c.id)))
    throw new Error(`claim returned ${claimed.length} of ${N} tasks, or a payload that differs`);
  t0 = performance.now();
  for (let i = 0; i < N; i += 50) {
    await store.outcomesApply({
      outcomes: claimed.slice(i, i + 50).map((c) => ({kind: 'complete', id: c.id, fence: c.fence})),
      actor: 'bench:1',
    });
  }
  us.complete = ((performance.now() - t0) * 1000) / N;
  await sql('ANALYZE TABLE tasks, task_payloads');
  const [row] = await sql(
    `SELECT SUM(data_length + index_length) AS b FROM information_schema.TABLES WHERE table_schema = DATABASE() AND table_name IN ('tasks', 'task_payloads')`,
  );
  return {...us, total: us.insert + us.claim + us.complete, bytesPerTask: Number(row.b) / N};
}

function zlibCost(size) {
  const texts = Array.from({length: 200}, (_, i) => JSON.stringify(makePayload(size, i)));
  const out = {};
  for (const level of [1, 6]) {
    const t0 = performance.now();
    let bytes = 0;
    for (const t of texts) bytes += deflateSync(t, {level}).length;
    out[`level${level}`] = {us: ((performance.now() - t0) * 1000) / texts.length, ratio: (size * texts.length) / bytes};
  }
  return out;
}

const results = [];
try {
  // A warm-up pass of each side, not counted.
  for (const s of Object.values(stores)) await pass(s, 1024);
  for (const size of SIZES) {
    const runs = {inline: [], apart: []};
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? ['inline', 'apart'] : ['apart', 'inline'];
      for (const k of order) runs[k].push(await pass(stores[k], size));
    }
    const med = (k) =>
      Object.fromEntries(['insert', 'claim', 'complete', 'total', 'bytesPerTask'].map((f) => [f, median(runs[k].map((x) => x[f]))]));
    const res = {size, inline: med('inline'), apart: med('apart'), zlib: zlibCost(size)};
    res.ratio = res.apart.total / res.inline.total;
    results.push(res);
    process.stderr.write(`[payloads] ${size} B: ${JSON.stringify(res)}\n`);
  }
} finally {
  for (const s of Object.values(stores)) await s.close();
  await db.pool.query(`DROP DATABASE IF EXISTS \`${tag}\``);
  await db.pool.end();
}

if (argv.json) console.log(JSON.stringify({n: N, rounds: ROUNDS, results}, null, 2));
else {
  const f = (x) => x.toFixed(0);
  console.log(`N = ${N} tasks per pass, median of ${ROUNDS} rounds; µs per task (insert + claim + complete); bytes per task on disk`);
  console.log(
    '| payload B | inline ins/claim/done | apart ins/claim/done | inline total | apart total | apart/inline | bytes inline | bytes apart | zlib-1 µs, ratio | zlib-6 µs, ratio |',
  );
  console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of results) {
    const i = r.inline;
    const a = r.apart;
    console.log(
      `| ${r.size} | ${f(i.insert)} / ${f(i.claim)} / ${f(i.complete)} | ${f(a.insert)} / ${f(a.claim)} / ${f(a.complete)} | ${f(i.total)} | ${f(a.total)} | ${r.ratio.toFixed(3)} | ${f(i.bytesPerTask)} | ${f(a.bytesPerTask)} | ${r.zlib.level1.us.toFixed(1)}, ${r.zlib.level1.ratio.toFixed(2)}× | ${r.zlib.level6.us.toFixed(1)}, ${r.zlib.level6.ratio.toFixed(2)}× |`,
    );
  }
}
