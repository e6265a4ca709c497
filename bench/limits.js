#!/usr/bin/env node
// What a claim of a limited task type costs (issue 11: "the cost of a rate-limited claim, statements
// and ms per claim, with 3 workers"), runnable alone:
//   node bench/limits.js [--quick] [--n N] [--batch B] [--json]      (after npm run build)
// and called by bench/run.js --limits (or --only limits). In its own ax database, with no broker:
// three claimers — three store handles, each with its own connection pool, as three workers have —
// claim the same type's tasks concurrently through TaskStore.tasksClaim in batches of B ids (as a
// worker's claim batch), one workload after the other:
//   L0  no limit (the claim path the worker takes when its snapshot has no limit for the type);
//   L1  --rate far above the demand (the bucket step's own cost: every task gets a token);
//   L2  --rate 500/s, binding (most of each batch deferred to its reserved slot in the same transaction);
//   L3  --max-running 100, binding (the count of running rows reads at most 100 index entries; the
//       rest of each batch deferred capped);
//   L4–L6 (issue 25) tasks keyed over 1,000 keys: --max-running-per-key 5 (binding), --rate-per-key
//       not binding (the key buckets' own cost), --fair (each batch's doorbells as permits, the tasks
//       taken round-robin across keys); L7 --fair with one key holding 90 % (the claims lend doorbells);
// and reports statements per claim (every query the stores send, counted at their pools) and ms per
// claim (median, p95), against L0.
import {randomBytes} from 'node:crypto';
import {parseArgs} from 'node:util';
import {loadConfig} from '../dist/core/config/config.js';
import {createLogger} from '../dist/core/log.js';
import {schemaMigrate} from '../dist/core/store/mysql/migrate.js';
import {keysIndexCreate} from '../dist/core/store/mysql/keys-index.js';
import {createIdGenerator} from '../dist/core/task/id.js';
import {validateTaskSpec} from '../dist/core/task/validate.js';
import {createRuntime, openDatabase, openStore} from './lib/ax.js';

const MYSQL_ROOT = process.env.AX_BENCH_MYSQL_ROOT ?? 'mysql://root@127.0.0.1:3306';
const WORKERS = 3;
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.max(0, Math.ceil((p / 100) * xs.length) - 1))];

/** Counts every statement a store sends: pool.query and the queries of the connections it hands out. */
function countStatements(store) {
  const counter = {n: 0};
  const pool = store.db.pool;
  const query = pool.query.bind(pool);
  pool.query = (...a) => (counter.n++, query(...a));
  const get = pool.getConnection.bind(pool);
  pool.getConnection = async () => {
    const c = await get();
    if (!c.__axCounted) {
      const q = c.query.bind(c);
      c.query = (...a) => (counter.n++, q(...a));
      c.__axCounted = true;
    }
    return c;
  };
  return counter;
}

const WORKLOADS = [
  {key: 'L0', label: 'no limit', settings: {}, limited: false},
  {key: 'L1', label: '--rate 1000000/s (not binding)', settings: {rate: 1_000_000}, limited: true},
  {key: 'L2', label: '--rate 500/s (binding)', settings: {rate: 500}, limited: true},
  {key: 'L3', label: '--max-running 100 (binding)', settings: {maxRunning: 100}, limited: true},
  // Issue 25: tasks keyed over 1,000 keys (round robin).
  {key: 'L4', label: '--max-running-per-key 5, 1,000 keys (binding)', settings: {maxRunningPerKey: 5}, limited: true, keys: 1000},
  {key: 'L5', label: '--rate-per-key 1000000/s, 1,000 keys (not binding)', settings: {ratePerKey: 1_000_000}, limited: true, keys: 1000},
  {key: 'L6', label: '--fair, 1,000 keys', settings: {fair: true}, limited: true, keys: 1000, fair: true},
  // One key floods (9 tasks in 10), 100 others share the rest: the claims lend doorbells.
  {
    key: 'L7',
    label: '--fair, one key with 90 % (lending)',
    settings: {fair: true},
    limited: true,
    fair: true,
    keyOf: (i) => (i % 10 === 0 ? `tenant:${i % 1000}` : 'tenant:flood'),
  },
];

/** L0–L3 (see the header); returns the figures and a Markdown section. */
export async function runLimitsBench({quick = false, n, batch = 50} = {}) {
  n ??= quick ? 6000 : 30_000;
  const tag = `ax_bench_l_${randomBytes(3).toString('hex')}`;
  const config = loadConfig({env: {AX_MYSQL_URL: `${MYSQL_ROOT}/${tag}`, AX_LOG_LEVEL: 'warn'}, cwd: '/nonexistent'});
  const rt = createRuntime(config, createLogger('warn', {bench: tag}));
  const db = await openDatabase(rt);
  const stores = [];
  try {
    await schemaMigrate(db);
    await keysIndexCreate(db); // L4–L6 read the keys through it (ax migrate --task-keys)
    for (let w = 0; w < WORKERS; w++) stores.push(await openStore(rt));
    const counters = stores.map(countStatements);
    const newId = createIdGenerator(Date.now);
    const defaults = {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'};
    const results = [];
    for (const wl of WORKLOADS) {
      const type = `bench_${wl.key.toLowerCase()}`;
      const ids = [];
      for (let done = 0; done < n; done += 2000) {
        const k = Math.min(2000, n - done);
        const tasks = Array.from({length: k}, (_, i) =>
          validateTaskSpec(
            {
              type,
              payload: {n: done + i},
              ...(wl.keyOf ? {key: wl.keyOf(done + i)} : wl.keys ? {key: `tenant:${(done + i) % wl.keys}`} : {}),
            },
            defaults,
            Date.now(),
            newId,
          ),
        );
        await stores[0].tasksInsert({tasks, actor: 'bench'});
        ids.push(...tasks.map((t) => t.id));
      }
      const audit = {operator: 'bench', command: 'types set', filter: {type}, reason: null};
      await stores[0].typeSetSettings({type, settings: wl.settings, operator: 'bench', resetBucket: true, audit});
      const batches = [];
      for (let i = 0; i < ids.length; i += batch) batches.push(ids.slice(i, i + batch));
      const ms = [];
      let statements = 0;
      let claimed = 0;
      let deferred = 0;
      const t0 = performance.now();
      await Promise.all(
        stores.map(async (s, w) => {
          for (let b = w; b < batches.length; b += WORKERS) {
            const before = counters[w].n;
            const t = performance.now();
            const r = await s.tasksClaim({
              ids: batches[b],
              worker: `bench:${w}`,
              leaseMs: 600_000,
              ...(wl.limited ? {lockTypes: [type]} : {}),
              ...(wl.fair ? {fairTypes: [type]} : {}),
            });
            ms.push(performance.now() - t);
            statements += counters[w].n - before;
            claimed += r.claimed.length;
            deferred += r.deferred?.length ?? 0;
          }
        }),
      );
      const wallMs = performance.now() - t0;
      results.push({
        ...wl,
        claims: batches.length,
        claimed,
        deferred,
        statementsPerClaim: statements / batches.length,
        msMedian: pct(ms, 50),
        msP95: pct(ms, 95),
        idsPerSecond: (ids.length * 1000) / wallMs,
      });
    }
    const base = results[0];
    const f = (x, d = 1) => x.toLocaleString('en-US', {maximumFractionDigits: d, minimumFractionDigits: d});
    const md = [
      `### Claims of a limited type (${WORKERS} claimers, batches of ${batch} ids, ${n.toLocaleString('en-US')} tasks per workload)`,
      '',
      '| workload | claims | claimed / deferred | statements per claim | ms per claim: median | p95 | ids/s (all claimers) |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...results.map(
        (r) =>
          `| ${r.key}: ${r.label} | ${r.claims} | ${r.claimed} / ${r.deferred} | ${f(r.statementsPerClaim, 2)}${r === base ? '' : ` (+${f(r.statementsPerClaim - base.statementsPerClaim, 2)})`} | ${f(r.msMedian, 2)}${r === base ? '' : ` (${f(r.msMedian / base.msMedian, 2)}×)`} | ${f(r.msP95, 2)} | ${f(r.idsPerSecond, 0)} |`,
      ),
      '',
      'Statements include START TRANSACTION and COMMIT. A limited type serializes its claims on its registry row: the ms per claim of L1–L3 include the wait for the other claimers.',
    ].join('\n');
    return {n, batch, workers: WORKERS, results, markdown: md};
  } finally {
    for (const s of stores) await s.close().catch(() => undefined);
    await db.pool.query(`DROP DATABASE IF EXISTS \`${tag}\``).catch(() => undefined);
    await db.pool.end();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const {values} = parseArgs({
    options: {
      quick: {type: 'boolean', default: false},
      n: {type: 'string'},
      batch: {type: 'string'},
      json: {type: 'boolean', default: false},
    },
  });
  const r = await runLimitsBench({
    quick: values.quick,
    ...(values.n === undefined ? {} : {n: Number.parseInt(values.n, 10)}),
    ...(values.batch === undefined ? {} : {batch: Number.parseInt(values.batch, 10)}),
  });
  console.log(values.json ? JSON.stringify(r, null, 2) : r.markdown);
  process.exit(0);
}
