#!/usr/bin/env node
// What one `ax top` refresh costs on MariaDB: statements and milliseconds per refresh, with a
// realistic table behind it. In its own database (dropped at the end):
//   - `--terminal` finished rows (succeeded, default 1,000,000; --quick 200,000) over the last day,
//   - a live backlog: 20,000 due, 10,000 delayed, 500 running, 1,000 dead, over 10 types,
//   - 6,000 tasks created in the last minute (the submit window reads them),
//   - 2,000 failed attempts of the selected type in the last 15 minutes (its errors pane),
//   - 8 workers with per-type counters in their heartbeats.
// Then `--refreshes` refreshes (default 30) of core/inspect/top.js's refreshTop, one after the other,
// counting the statements sent to MySQL and timing each refresh. Prints a Markdown table.
//
//   npx tsc -p tsconfig.build.json && node bench/top.js [--quick] [--terminal N] [--refreshes N]
import {randomBytes} from 'node:crypto';
import {parseArgs} from 'node:util';
import {loadConfig} from '../dist/core/config/config.js';
import {createLogger} from '../dist/core/log.js';
import {schemaMigrate} from '../dist/core/store/mysql/migrate.js';
import {MysqlTaskStore} from '../dist/core/store/mysql/store.js';
import {initialTopState, refreshTop} from '../dist/core/inspect/top.js';
import {createRuntime, openDatabase} from './lib/ax.js';

const {values: args} = parseArgs({
  options: {quick: {type: 'boolean'}, terminal: {type: 'string'}, refreshes: {type: 'string'}},
});
const TERMINAL = Number(args.terminal ?? (args.quick ? 200_000 : 1_000_000));
const REFRESHES = Number(args.refreshes ?? 30);
const MYSQL_ROOT = process.env.AX_BENCH_MYSQL_ROOT ?? 'mysql://root@127.0.0.1:3306';
const tag = `axb_top_${randomBytes(3).toString('hex')}`;
const config = loadConfig({env: {AX_MYSQL_URL: `${MYSQL_ROOT}/${tag}`, AX_LOG_LEVEL: 'warn'}, cwd: '/nonexistent'});
const rt = createRuntime(config, createLogger('warn', {bench: 'top'}));
const db = await openDatabase(rt);
const sql = (q, p = []) => db.pool.query(q, p).then(([r]) => r);
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)];

/** Rows straight in SQL: `n` tasks of state `state`, ids from `from`. */
async function fill(from, n, state, runAt, createdAt, extra = '') {
  for (let done = 0; done < n; done += 100_000) {
    const k = Math.min(100_000, n - done);
    await sql(
      `INSERT INTO tasks (id, cell, type, pool, state, attempt, max_retries, run_at, fence, content_hash, created_at, updated_at, finished_at, payload${extra ? ', lease_until' : ''})
       SELECT CONCAT(LPAD(HEX(${from + done} + seq), 8, '0'), '-0000-7000-8000-', LPAD(HEX(seq), 12, '0')), 'default',
              CONCAT('bench_type', seq % 10), 'io', '${state}', 1, 5, ${runAt}, 1, 'x', ${createdAt}, NOW(3),
              ${state === 'succeeded' || state === 'dead' ? 'NOW(3)' : 'NULL'}, '{}'${extra ? `, ${extra}` : ''}
         FROM seq_1_to_${k}`,
    );
  }
}

try {
  await schemaMigrate(db);
  const t0 = performance.now();
  await fill(0x1000_0000, TERMINAL, 'succeeded', 'NOW(3) - INTERVAL 1 DAY', 'NOW(3) - INTERVAL (seq % 86400) SECOND');
  await fill(0x2000_0000, 20_000, 'submitted', 'NOW(3) - INTERVAL (seq % 600) SECOND', 'NOW(3) - INTERVAL 1 HOUR');
  await fill(0x3000_0000, 10_000, 'failed', 'NOW(3) + INTERVAL (seq % 600) SECOND', 'NOW(3) - INTERVAL 1 HOUR');
  await fill(0x4000_0000, 500, 'running', 'NOW(3) - INTERVAL 1 MINUTE', 'NOW(3) - INTERVAL 1 HOUR', 'NOW(3) + INTERVAL 1 HOUR');
  await fill(0x5000_0000, 1000, 'dead', 'NOW(3) - INTERVAL 1 HOUR', 'NOW(3) - INTERVAL 1 HOUR');
  await fill(0x6000_0000, 6000, 'succeeded', 'NOW(3) - INTERVAL 1 MINUTE', 'NOW(3) - INTERVAL (seq % 60000) * 1000 MICROSECOND');
  await sql(
    `INSERT INTO task_history (task_id, from_state, to_state, attempt, worker, at, error)
     SELECT CONCAT(LPAD(HEX(${0x2000_0000} + seq * 10), 8, '0'), '-0000-7000-8000-', LPAD(HEX(seq * 10), 12, '0')), 'running', 'failed', 1, 'w',
            NOW(3) - INTERVAL (seq % 900) SECOND, CONCAT('smtp timeout after ', seq % 7, ' s')
       FROM seq_1_to_2000`,
  );
  await sql('ANALYZE TABLE tasks, task_history');
  const fillS = (performance.now() - t0) / 1000;

  const store = await MysqlTaskStore.open({
    url: config.mysqlUrl,
    createDatabase: false,
    queryTimeoutMs: 30_000,
    cell: 'default',
    now: () => Date.now(),
  });
  const stats = (n) => ({
    heartbeatMs: 5000,
    types: Object.fromEntries(
      Array.from({length: 10}, (_, i) => [
        `bench_type${i}`,
        {succeeded: n, failed: n / 10, dead: 0, released: 0, hist: [n, n, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]},
      ]),
    ),
  });
  for (let w = 0; w < 8; w++) {
    const info = {id: `bench:${w}`, host: 'bench', pid: w, pools: {io: 64}};
    await store.workersUpsert({info, inFlight: 60, stats: stats(1000)});
    await store.workersUpsert({info, inFlight: 60, stats: stats(6000)});
  }
  // Count the statements each refresh sends (every read goes through the pool's query()).
  let statements = 0;
  const query = store.db.pool.query.bind(store.db.pool);
  store.db.pool.query = (...a) => (statements++, query(...a));

  let state = initialTopState();
  const ms = [];
  const counts = [];
  for (let i = 0; i < REFRESHES + 3; i++) {
    const before = statements;
    const t = performance.now();
    const r = await refreshTop(store, state, {cell: 'default', errorsType: 'bench_type0'});
    const dt = performance.now() - t;
    if (r.snapshot.failures.length > 0) throw new Error(r.snapshot.failures.join('; '));
    state = r.state;
    // The first few warm the pool and the caches.
    if (i >= 3) {
      ms.push(dt);
      counts.push(statements - before);
    }
    await new Promise((res) => setTimeout(res, 100));
  }
  const median = pct(ms, 50);
  console.log(`\n## ax top refresh cost (${new Date().toISOString().slice(0, 16)} UTC)\n`);
  console.log(
    `tasks: ${TERMINAL.toLocaleString('en')} finished + 31,500 live + 6,000 in the last minute; 2,000 failures in 15 min; 8 workers (filled in ${fillS.toFixed(0)} s)\n`,
  );
  console.log('| refreshes | statements per refresh | ms per refresh: median | p95 | max |');
  console.log('| ---: | ---: | ---: | ---: | ---: |');
  console.log(
    `| ${ms.length} | ${Math.min(...counts)}–${Math.max(...counts)} | ${median.toFixed(1)} | ${pct(ms, 95).toFixed(1)} | ${Math.max(...ms).toFixed(1)} |`,
  );
  // Where the time goes: each read alone, medians of 10.
  const parts = {
    'backlog()': () => store.backlog(),
    'workersList()': () => store.workersList({seenWithinMs: 3_600_000}),
    'tasksCreatedCount() (1 s window)': async () => {
      const now = await store.clockNow();
      return store.tasksCreatedCount({since: new Date(now.getTime() - 2000), until: new Date(now.getTime() - 1000)});
    },
    'failureGroups() (15 min, one type)': async () => {
      const now = await store.clockNow();
      return store.failureGroups({since: new Date(now.getTime() - 900_000), type: 'bench_type0'});
    },
  };
  console.log('\n| read | statements | ms: median of 10 |');
  console.log('| --- | ---: | ---: |');
  for (const [name, f] of Object.entries(parts)) {
    const t = [];
    const before = statements;
    for (let i = 0; i < 10; i++) {
      const s0 = performance.now();
      await f();
      t.push(performance.now() - s0);
    }
    console.log(`| ${name} | ${(statements - before) / 10} | ${pct(t, 50).toFixed(1)} |`);
  }
  await store.close();
} finally {
  await sql(`DROP DATABASE IF EXISTS \`${tag}\``).catch(() => undefined);
  await db.pool.end();
}
