#!/usr/bin/env node
// The console's reads with a big table (P11 in issue 23), runnable alone after `npm run build`:
//   node bench/console.js [--rows 5000000] [--hour 1000000] [--searches 7] [--index] [--keep] [--json]
// In its own database (ax_bench_console, kept between runs with --keep: filling 5M rows takes
// minutes), with `rows` finished tasks (succeeded, one attempt row each in task_history), `hour` of
// them created within the last hour with a payload {orderId, customer: {id}}, it starts the console
// in this process (the HTTP server over the admin service, no cache: every request reads) and measures:
//   - GET /api/v1/overview and GET /api/v1/types: 30 requests each, median and p95 (goal ≤ 100 ms);
//   - GET /api/v1/tasks?since=<the hour's start>&payload=orderId=<n>: search by payload over the hour's
//     tasks (one match: every task of the hour is read), `searches` requests (goal ≤ 1 s), alternating
//     with the statement of the plan before (idx_tasks_created, a row lookup per entry) sent directly;
//   - with --index: `ax payload-index add orderId` on the full table (its build time), then the same
//     search by the index, alternating with the search without it (tasksSearch, the id-range reading,
//     called directly) — and the index dropped again;
//   - what five browsers cost: five clients polling the overview every 2 s for 20 s against the
//     console's shared reading (one database read per 1.5 s whatever the number of browsers), as the
//     database time per second they cause.
import {randomBytes} from 'node:crypto';
import {parseArgs} from 'node:util';
import mysql from 'mysql2/promise';
import {createRuntime, openAdmin} from '../dist/compose.js';
import {loadConfig} from '../dist/core/config/config.js';
import {schemaMigrate} from '../dist/core/store/mysql/migrate.js';
import {openDb, select} from '../dist/core/store/mysql/db.js';
import {TASK_COLUMNS} from '../dist/core/store/mysql/rows.js';
import {PAYLOAD_TEXT_SQL} from '../dist/core/store/mysql/payloads.js';
import {tasksSearch} from '../dist/core/store/mysql/tasks-search.js';
import {createLogger} from '../dist/core/log.js';
import {consoleOptions} from '../dist/web/console.js';
import {createOverviewProvider} from '../dist/web/overview.js';
import {startWebServer} from '../dist/web/server.js';
import {percentiles} from './lib/stats.js';

const {values: argv} = parseArgs({
  options: {
    rows: {type: 'string', default: '5000000'},
    hour: {type: 'string', default: '1000000'},
    keep: {type: 'boolean'},
    json: {type: 'boolean'},
    searches: {type: 'string', default: '7'},
    index: {type: 'boolean', default: false},
  },
});
const ROWS = Number(argv.rows);
const HOUR = Number(argv.hour);
const SEARCHES = Number(argv.searches);
const MYSQL_ROOT = process.env.AX_BENCH_MYSQL_ROOT ?? 'mysql://root@127.0.0.1:3306';
const DB = 'ax_bench_console';
const log = (m) => process.stderr.write(`[console ${String(Math.round(performance.now() / 1000)).padStart(4)} s] ${m}\n`);
const CHUNK = 250_000;

const root = await mysql.createConnection({uri: `${MYSQL_ROOT}/mysql`, multipleStatements: true, timezone: 'Z'});
await root.query(`CREATE DATABASE IF NOT EXISTS \`${DB}\``);
const env = {AX_MYSQL_URL: `${MYSQL_ROOT}/${DB}`, AX_LOG_LEVEL: 'warn', AX_AMQP_PREFIX: `axb_${randomBytes(3).toString('hex')}`};
const config = loadConfig({env, cwd: '/nonexistent'});
const rt = createRuntime(config, createLogger('warn', {bench: 'console'}));
const db = await openDb({url: config.mysqlUrl, createDatabase: true, queryTimeoutMs: 600_000, connectionLimit: 2});
await schemaMigrate(db);

/**
 * A task id as SQL, from `seq` and its creation time `c`: as ax's producers make them, a UUIDv7 of
 * the creation millisecond (the counter and random bits here hold `seq`, unique), except every
 * 50th task, which gets a version-8 id like a dedup key's (idFromDedupKey: a hash, no time in it).
 */
const idSql = (seq, c) => {
  const h8 = `MD5(CONCAT('k', ${seq}))`;
  const h7 = `LPAD(HEX(CAST(UNIX_TIMESTAMP(${c}) * 1000 AS UNSIGNED)), 12, '0')`;
  return `IF(${seq} MOD 50 = 0,
    LOWER(CONCAT(LEFT(${h8}, 8), '-', SUBSTR(${h8}, 9, 4), '-8', SUBSTR(${h8}, 14, 3), '-8', SUBSTR(${h8}, 18, 3), '-', SUBSTR(${h8}, 21, 12))),
    LOWER(CONCAT(LEFT(${h7}, 8), '-', RIGHT(${h7}, 4), '-7000-8000-', LPAD(HEX(${seq}), 12, '0'))))`;
};

await root.query("SET time_zone = '+00:00'");
const [[{n: have}]] = await root.query(`SELECT COUNT(*) AS n FROM \`${DB}\`.tasks`);
// A table kept from before its ids were v7s of their creation time is filled again (checked on the
// newest rows with a v7 id: every 50th has a v8 one; an id's millisecond is its row's time before
// DATETIME(3) rounds it, so 1 ms apart at most).
const [newest] = await root.query(`SELECT id, created_at FROM \`${DB}\`.tasks WHERE cell = 'default' ORDER BY created_at DESC LIMIT 10`);
const v7 = newest.filter((r) => r.id[14] === '7');
const idTimeOk = v7.length > 0 && v7.every((r) => Math.abs(parseInt(r.id.replace('-', '').slice(0, 12), 16) - r.created_at.getTime()) <= 1);
if (Number(have) !== ROWS || !idTimeOk) {
  log(
    `filling ${ROWS} finished tasks (${HOUR} in the last hour); had ${have}${Number(have) > 0 && !idTimeOk ? ' (ids not of their creation time)' : ''}`,
  );
  await root.query(`TRUNCATE \`${DB}\`.tasks; TRUNCATE \`${DB}\`.task_history; SET @t0 = NOW(3)`);
  for (let from = 1; from <= ROWS; from += CHUNK) {
    const to = Math.min(ROWS, from + CHUNK - 1);
    // The last HOUR rows are created within the last hour; the rest spread over the 30 days before.
    const created = `IF(seq > ${ROWS - HOUR}, @t0 - INTERVAL ((${ROWS} - seq) * 3500 / ${Math.max(HOUR, 1)}) SECOND, @t0 - INTERVAL 1 HOUR - INTERVAL (seq MOD 2592000) SECOND)`;
    const rows = `(SELECT seq, c, ${idSql('seq', 'c')} AS id FROM (SELECT seq, ${created} AS c FROM seq_${from}_to_${to}) s0) s`;
    await root.query(
      `INSERT INTO \`${DB}\`.tasks (id, cell, type, state, attempt, max_retries, run_at, content_hash, created_at, updated_at, finished_at, started_at, worker, payload)
       SELECT id, 'default', ELT(1 + seq MOD 4, 'order_notify', 'order_capture', 'report_build', 'user_welcome'), 'succeeded', 1, 5,
              c, MD5(seq), c, c + INTERVAL 20000 MICROSECOND, c + INTERVAL 20000 MICROSECOND, c + INTERVAL 5000 MICROSECOND, 'bench:1',
              CONCAT('{"orderId":', seq, ',"customer":{"id":', seq MOD 1000, '}}')
       FROM ${rows}`,
    );
    await root.query(
      `INSERT INTO \`${DB}\`.task_history (task_id, from_state, to_state, attempt, worker, at, started_at)
       SELECT id, 'running', 'succeeded', 1, 'bench:1', c + INTERVAL 20000 MICROSECOND, c + INTERVAL 5000 MICROSECOND FROM ${rows}`,
    );
    log(`${to} rows`);
  }
  await root.query(`ANALYZE TABLE \`${DB}\`.tasks, \`${DB}\`.task_history`);
}

log('starting the console');
const admin = openAdmin(rt, {}, {longLived: true});
/** The console over `admin`, its overview shared for `maxAgeMs` (0: every request reads). */
const consoleServer = (maxAgeMs) =>
  startWebServer({
    ...consoleOptions(rt, admin, {host: '127.0.0.1', port: 0, assetsDir: null, version: 'bench'}),
    tokens: [],
    overview: createOverviewProvider({clock: rt.clock, ...(maxAgeMs === undefined ? {} : {maxAgeMs})}),
  });
const server = await consoleServer(0);

async function timed(path, n) {
  log(`${path} ×${n}`);
  const ms = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const res = await fetch(server.url + path);
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
    ms.push(performance.now() - t0);
  }
  const {p50, p95} = percentiles(Float64Array.from(ms), [50, 95]);
  return {path, n, p50, p95, first: ms[0]};
}

const results = {rows: ROWS, hour: HOUR, reads: []};
log(`measuring at ${server.url}`);
for (const path of ['/api/v1/overview', '/api/v1/types']) {
  await timed(path, 3); // warm the buffer pool and the connections
  results.reads.push(await timed(path, 30));
}
// The hour of HOUR tasks starts at the first of them (filled earlier, it may no longer be the last hour).
const [[{created_at: hourStart}]] = await root.query(
  `SELECT created_at FROM \`${DB}\`.tasks WHERE cell = 'default' ORDER BY created_at DESC LIMIT 1 OFFSET ${HOUR - 1}`,
);
const since = encodeURIComponent(new Date(hourStart).toISOString());
const target = ROWS - Math.floor(HOUR / 2);
const searchPath = `/api/v1/tasks?since=${since}&payload=orderId%3D${target}&limit=50`;
// The search through the console, alternating with the statement of the plan before the id-range
// search (idx_tasks_created forced, a row lookup per entry of the window), sent directly: both must
// find the one task.
const previousSql = `SELECT ${TASK_COLUMNS} FROM tasks FORCE INDEX (idx_tasks_created)
  WHERE cell = ? AND created_at >= ? AND JSON_VALUE(${PAYLOAD_TEXT_SQL}, ?) = ? ORDER BY created_at DESC, id DESC LIMIT ?`;
const searchMs = [];
const previousMs = [];
log(`${searchPath} and the previous plan's statement, alternating ×${SEARCHES}`);
for (let i = 0; i < SEARCHES; i++) {
  let t = performance.now();
  const res = await fetch(server.url + searchPath);
  const body = await res.json();
  if (res.status !== 200 || body.tasks?.length !== 1 || body.tasks[0].payload.orderId !== target)
    throw new Error(`search: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  searchMs.push(performance.now() - t);
  t = performance.now();
  const rows = await select(db, db.pool, previousSql, ['default', hourStart, '$.orderId', String(target), 50]);
  if (rows.length !== 1 || rows[0].id !== body.tasks[0].id) throw new Error(`previous plan: ${rows.length} rows`);
  previousMs.push(performance.now() - t);
}
for (const [path, ms] of [
  [searchPath, searchMs],
  ['(previous plan, SQL) FORCE INDEX (idx_tasks_created), same filter', previousMs],
]) {
  const {p50, p95} = percentiles(Float64Array.from(ms), [50, 95]);
  results.reads.push({path, n: ms.length, p50, p95, first: ms[0]});
}

if (argv.index) {
  log('ax payload-index add orderId');
  const t = performance.now();
  const added = await admin.payloadIndexes.add('orderId');
  results.indexBuildMs = performance.now() - t;
  log(`built in ${Math.round(results.indexBuildMs)} ms (created ${added.created})`);
  const indexedMs = [];
  const scanMs = [];
  // A pool as large as the console's (10): tasksSearch reads a slice as six statements at once.
  const scanDb = await openDb({url: config.mysqlUrl, queryTimeoutMs: 600_000, connectionLimit: 10});
  const filter = {since: new Date(hourStart), payload: {path: '$.orderId', value: String(target)}, limit: 50};
  for (let i = 0; i < SEARCHES; i++) {
    let t1 = performance.now();
    const res = await fetch(server.url + searchPath);
    const body = await res.json();
    if (res.status !== 200 || body.tasks?.length !== 1 || body.tasks[0].payload.orderId !== target)
      throw new Error(`indexed search: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
    indexedMs.push(performance.now() - t1);
    t1 = performance.now();
    const rows = await tasksSearch(scanDb, 'default', filter, TASK_COLUMNS, Date.now());
    if (rows.length !== 1 || rows[0].id !== body.tasks[0].id) throw new Error(`search without the index: ${rows.length} rows`);
    scanMs.push(performance.now() - t1);
  }
  for (const [path, ms] of [
    [`${searchPath} (orderId indexed)`, indexedMs],
    ['(without the index, tasksSearch) same filter', scanMs],
  ]) {
    const {p50, p95} = percentiles(Float64Array.from(ms), [50, 95]);
    results.reads.push({path, n: ms.length, p50, p95, first: ms[0]});
  }
  await admin.payloadIndexes.remove('orderId');
  await scanDb.pool.end();
}

// Five browsers on the overview, through the shared reading (the console's default 1.5 s).
const shared = await consoleServer();
const [[before]] = await root.query("SHOW GLOBAL STATUS LIKE 'Questions'");
const t0 = performance.now();
let requests = 0;
await Promise.all(
  Array.from({length: 5}, async (_, i) => {
    await new Promise((r) => setTimeout(r, i * 400));
    while (performance.now() - t0 < 20_000) {
      const res = await fetch(shared.url + '/api/v1/overview');
      await res.arrayBuffer();
      requests++;
      await new Promise((r) => setTimeout(r, 2000));
    }
  }),
);
const [[after]] = await root.query("SHOW GLOBAL STATUS LIKE 'Questions'");
results.fiveBrowsers = {
  requests,
  seconds: (performance.now() - t0) / 1000,
  statementsPerS: (Number(after.Value) - Number(before.Value)) / ((performance.now() - t0) / 1000),
};

await shared.close();
await server.close();
await admin.close();
await db.pool.end();
if (!argv.keep) await root.query(`DROP DATABASE \`${DB}\``);
await root.end();

if (argv.json) console.log(JSON.stringify(results, null, 2));
else {
  console.log(`console reads with ${ROWS.toLocaleString('en')} finished tasks (${HOUR.toLocaleString('en')} in the last hour)`);
  for (const r of results.reads)
    console.log(
      `  ${r.path.padEnd(70)} p50 ${r.p50.toFixed(1)} ms  p95 ${r.p95.toFixed(1)} ms  (first ${r.first.toFixed(0)} ms, n=${r.n})`,
    );
  if (results.indexBuildMs !== undefined)
    console.log(`  ax payload-index add orderId over the table: ${(results.indexBuildMs / 1000).toFixed(1)} s`);
  const f = results.fiveBrowsers;
  console.log(
    `  five browsers polling the overview every 2 s: ${f.requests} requests in ${f.seconds.toFixed(0)} s, ${f.statementsPerS.toFixed(1)} statements/s on MariaDB`,
  );
}
