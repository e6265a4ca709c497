#!/usr/bin/env node
// The backlog query at size (issue 12, part 3), runnable alone (after npm run build):
//   node bench/backlog.js [--terminal N] [--live N] [--runs N] [--db NAME] [--keep] [--json]
// and called by bench/run.js --backlog. In its own database (ax_bench_b_<hex>, or --db to re-measure
// a database kept with --keep without filling it again):
//   fill   N terminal tasks (default 5,000,000: 97% succeeded, 2% cancelled, 1% dead, finished over
//          30 days, 20 types) with one history row each for their terminal transition, plus a live
//          backlog (default 100,000: due, delayed, failed, running) — INSERT … SELECT from seq tables;
//   plans  EXPLAIN of ax's backlog and terminal-count statements (HOT_SQL) and ANALYZE FORMAT=JSON;
//   time   store.backlog() and store.terminalCounts(1h, 24h), median [min–max] of --runs calls, and
//          the statements they send; the pre-migration-12 backlog statements for comparison;
//   writes the cost of a 7th index on tasks on the hot path: batched INSERT, claim and complete of
//          --write-n tasks on copies of the table with migration 11's indexes, with the covering
//          index added, and with it replacing idx_tasks_type_state (migration 12).
import {randomBytes} from 'node:crypto';
import {parseArgs} from 'node:util';
import mysql from 'mysql2/promise';
import {loadConfig} from '../dist/core/config/config.js';
import {createLogger} from '../dist/core/log.js';
import {HOT_SQL} from '../dist/core/store/mysql/hot-sql.js';
import {schemaMigrate} from '../dist/core/store/mysql/migrate.js';
import {createRuntime, openDatabase, openStore} from './lib/ax.js';
import {summary} from './lib/stats.js';

const MYSQL_ROOT = process.env.AX_BENCH_MYSQL_ROOT ?? 'mysql://root@127.0.0.1:3306';
const CHUNK = 250_000;

/** The backlog statements before migration 12: idx_tasks_due and a row lookup per live task for `type`. */
const OLD_BACKLOG = [
  `SELECT type, SUM(state <> 'running' AND run_at <= NOW(3)) AS due, SUM(state <> 'running' AND run_at > NOW(3)) AS \`delayed\`,
     SUM(state = 'running') AS running, MIN(IF(state <> 'running' AND run_at <= NOW(3), run_at, NULL)) AS oldest_due
   FROM tasks FORCE INDEX (idx_tasks_due) WHERE cell = ? AND state IN ('submitted', 'failed', 'running') GROUP BY type`,
  "SELECT type, COUNT(*) AS n FROM tasks FORCE INDEX (idx_tasks_due) WHERE cell = ? AND state = 'dead' GROUP BY type",
];

const idOf = (n) => `${n.toString(16).toUpperCase().padStart(8, '0')}-0000-7000-8000-000000000000`;
const PLAIN_ID = (n) => `CONCAT(LPAD(HEX(${n}), 8, '0'), '-0000-7000-8000-000000000000')`;
/** A lower-case UUIDv7 whose time is the instant `at` (an SQL expression) and whose tail is n: the archive files it under at's day. */
const TIMED_ID = (n, at) => {
  const ms = `FLOOR(UNIX_TIMESTAMP(${at}) * 1000)`;
  return `LOWER(CONCAT(LPAD(HEX(${ms} DIV 65536), 8, '0'), '-', LPAD(HEX(${ms} MOD 65536), 4, '0'), '-7000-8000-', LPAD(HEX(${n}), 12, '0')))`;
};
const COLS = 'id, cell, type, pool, state, attempt, max_retries, run_at, fence, content_hash, created_at, updated_at, finished_at, payload';

/**
 * Fills `terminal` finished tasks and `live` pending ones (see the header). Options for other
 * workloads (bench/archive.js): `ageDays` moves every finish time that many days further back (31:
 * all past the default 30-day retention), `history: 3` gives each task the history a real one has
 * (submitted, running — not for cancelled ones — and its terminal transition) instead of the terminal
 * row alone, `payloadBytes` an order-like payload of about that many bytes instead of '{}', and
 * `timedIds` ids that are UUIDv7 of the creation time (the archive files a task under its id's day;
 * the default ids are not time-ordered). Finish times count back from one instant read at the start,
 * so every statement computes the same id and times for the same n.
 */
export async function fill(sql, terminal, live, log, {ageDays = 0, history = 1, payloadBytes = 0, timedIds = false} = {}) {
  await sql('CREATE TABLE IF NOT EXISTS bench_seq (n INT UNSIGNED NOT NULL PRIMARY KEY)');
  await sql(`INSERT IGNORE INTO bench_seq SELECT seq FROM seq_1_to_${CHUNK}`);
  const [{now}] = await sql("SELECT DATE_FORMAT(NOW(3), '%Y-%m-%d %H:%i:%s.%f') AS now");
  // n → a terminal task: state by n % 100, finished within the last 30 days, one of 20 types.
  const terminalState = "IF(n % 100 = 0, 'dead', IF(n % 100 < 3, 'cancelled', 'succeeded'))";
  const finished = `(TIMESTAMP'${now}' - INTERVAL ${Number(ageDays)} DAY - INTERVAL (n * 7919 % 2592000000) * 1000 MICROSECOND)`;
  const ID = timedIds ? (n) => TIMED_ID(n, `${finished} - INTERVAL 1 SECOND`) : PLAIN_ID;
  const payload =
    payloadBytes > 0
      ? `CONCAT('{"orderId":', n, ',"customer":"c-', n % 9973, '","note":"', REPEAT('x', ${Math.max(1, payloadBytes - 50)}), '"}')`
      : "'{}'";
  for (let lo = 0; lo < terminal; lo += CHUNK) {
    const t0 = performance.now();
    const k = Math.min(CHUNK, terminal - lo);
    const src = `(SELECT n + ${lo} AS n FROM bench_seq WHERE n <= ${k}) s`;
    await sql(`INSERT INTO tasks (${COLS})
      SELECT ${ID('n')}, 'default', CONCAT('type_', LPAD(n % 20, 2, '0')), 'io', ${terminalState}, 1, 5,
             ${finished} - INTERVAL 1 SECOND, 1, 'x', ${finished} - INTERVAL 1 SECOND, ${finished}, ${finished}, ${payload} FROM ${src}`);
    if (history >= 3) {
      await sql(`INSERT INTO task_history (task_id, from_state, to_state, attempt, worker, at)
        SELECT ${ID('n')}, NULL, 'submitted', 0, 'api-1:1', ${finished} - INTERVAL 1 SECOND FROM ${src}`);
      await sql(`INSERT INTO task_history (task_id, from_state, to_state, attempt, worker, at)
        SELECT ${ID('n')}, 'submitted', 'running', 1, 'w', ${finished} - INTERVAL 500 MICROSECOND FROM ${src}
         WHERE NOT (n % 100 = 1 OR n % 100 = 2)`);
    }
    await sql(`INSERT INTO task_history (task_id, from_state, to_state, attempt, worker, at)
      SELECT ${ID('n')}, IF(n % 100 = 1 OR n % 100 = 2, 'submitted', 'running'), ${terminalState}, 1, 'w', ${finished} FROM ${src}`);
    log(`filled ${lo + k} terminal tasks (${Math.round(performance.now() - t0)} ms for this chunk)`);
  }
  // The live backlog (state by n DIV 20, type by n % 20): 55% due, 30% delayed, 5% failed and due, 5% failed backing off, 5% running.
  const base = terminal + 1;
  await sql(`INSERT INTO tasks (${COLS})
    SELECT ${PLAIN_ID(`n + ${base}`)}, 'default', CONCAT('type_', LPAD(n % 20, 2, '0')), 'io',
           CASE WHEN n DIV 20 % 20 = 0 THEN 'running' WHEN n DIV 20 % 20 IN (1, 2) THEN 'failed' ELSE 'submitted' END, 1, 5,
           IF(n DIV 20 % 20 = 2 OR n DIV 20 % 20 >= 14, NOW(3) + INTERVAL n % 7200 SECOND, NOW(3) - INTERVAL n % 3600 SECOND),
           1, 'x', NOW(3) - INTERVAL 1 HOUR, NOW(3), NULL, '{}'
      FROM bench_seq WHERE n <= ${live}`);
  await sql('ANALYZE TABLE tasks, task_history');
  log(`filled ${live} live tasks; analyzed`);
}

async function timed(fn, runs) {
  const ms = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    ms.push(performance.now() - t0);
  }
  return summary(ms);
}

/** Hot-path write cost of the index sets: `n` tasks inserted, claimed and completed in batches of 500. */
async function writeCost(sql, n) {
  const variants = {
    'migration 11 (6 indexes)': [],
    'plus (cell, state, type, run_at) (7 indexes)': ['ADD INDEX ix_new (cell, state, type, run_at)'],
    'migration 12: it replaces idx_tasks_type_state (6 indexes)': [
      'ADD INDEX ix_new (cell, state, type, run_at)',
      'DROP INDEX idx_tasks_type_state',
    ],
  };
  const ids = (lo) => Array.from({length: 500}, (_, i) => idOf(lo + i + 1));
  const out = {};
  const names = Object.keys(variants);
  for (let round = 0; round < names.length; round++) {
    // Each variant once in each position: the machine's drift does not favour one.
    for (const name of names.map((_, i) => names[(i + round) % names.length])) {
      const alters = variants[name];
      await sql('DROP TABLE IF EXISTS bench_w');
      await sql('CREATE TABLE bench_w LIKE tasks');
      // The indexes as migration 11 left them (migration 17 reshaped idx_tasks_due and idx_tasks_dispatch).
      await sql(`ALTER TABLE bench_w DROP INDEX idx_tasks_due, ADD INDEX idx_tasks_due (cell, state, run_at),
        DROP INDEX idx_tasks_dispatch, ADD INDEX idx_tasks_dispatch (cell, published_at, state, run_at),
        ADD INDEX idx_tasks_type_state (cell, type, state)`);
      if (alters.length) await sql(`ALTER TABLE bench_w ${alters.join(', ')}`);
      const t0 = performance.now();
      for (let lo = 0; lo < n; lo += 500) {
        await sql(`INSERT INTO bench_w (${COLS})
          SELECT ${PLAIN_ID(`n + ${lo}`)}, 'default', CONCAT('type_', LPAD(n % 20, 2, '0')), 'io', 'submitted', 0, 5, NOW(3), 0, 'x', NOW(3), NOW(3), NULL, '{}'
            FROM bench_seq WHERE n <= 500`);
      }
      const t1 = performance.now();
      for (let lo = 0; lo < n; lo += 500) {
        await sql(
          `UPDATE bench_w SET state = 'running', fence = fence + 1, lease_until = NOW(3) + INTERVAL 30 SECOND, updated_at = NOW(3)
          WHERE id IN (?) AND state = 'submitted'`,
          [ids(lo)],
        );
      }
      const t2 = performance.now();
      for (let lo = 0; lo < n; lo += 500) {
        await sql(
          `UPDATE bench_w SET state = 'succeeded', finished_at = NOW(3), lease_until = NULL, updated_at = NOW(3)
          WHERE id IN (?) AND state = 'running'`,
          [ids(lo)],
        );
      }
      const t3 = performance.now();
      (out[name] ??= {insert: [], claim: [], complete: []}).insert.push(t1 - t0);
      out[name].claim.push(t2 - t1);
      out[name].complete.push(t3 - t2);
    }
  }
  await sql('DROP TABLE IF EXISTS bench_w');
  return Object.fromEntries(
    Object.entries(out).map(([k, v]) => [k, {insert: summary(v.insert), claim: summary(v.claim), complete: summary(v.complete)}]),
  );
}

const planRows = (p) => p.map((r) => `${r.table}: ${r.type} ${r.key} rows=${r.rows} ${r.Extra ?? ''}`);

/** Runs the fill (unless `db` names a filled database), the plans, the timings and the write cost. */
export async function runBacklogBench({
  terminal = 5_000_000,
  live = 100_000,
  runs = 21,
  db: reuse,
  keep = false,
  writeN = 20_000,
  log = console.error,
} = {}) {
  const name = reuse ?? `ax_bench_b_${randomBytes(3).toString('hex')}`;
  const config = loadConfig({env: {AX_MYSQL_URL: `${MYSQL_ROOT}/${name}`, AX_LOG_LEVEL: 'warn'}, cwd: '/nonexistent'});
  const rt = createRuntime(config, createLogger('warn', {bench: name}));
  const adminDb = await openDatabase(rt);
  await schemaMigrate(adminDb);
  const raw = await mysql.createConnection({uri: `${MYSQL_ROOT}/${name}`, multipleStatements: false});
  const sql = async (q, p) => (await raw.query(q, p))[0];
  const store = await openStore(rt, {connectionLimit: 2});
  try {
    if (!reuse) await fill(sql, terminal, live, log);
    const [{n: total}] = await sql('SELECT COUNT(*) AS n FROM tasks');
    const explain = async (q, p) => planRows(await sql(`EXPLAIN ${q}`, p));
    const analyze = async (q, p) => JSON.parse((await sql(`ANALYZE FORMAT=JSON ${q}`, p))[0].ANALYZE);
    const since1h = new Date(Date.now() - 3_600_000);
    const plans = {
      backlog: await explain(HOT_SQL.backlog, ['default']),
      backlogAnalyze: (await analyze(HOT_SQL.backlog, ['default'])).query_block,
      terminalCounts1h: await explain(HOT_SQL.terminalCounts, [since1h, 'default']),
      oldBacklog: await explain(OLD_BACKLOG[0], ['default']),
      oldDead: await explain(OLD_BACKLOG[1], ['default']),
    };
    await store.backlog(); // warm the pages the query reads
    const [before] = await sql("SHOW GLOBAL STATUS LIKE 'Com_select'");
    const backlogMs = await timed(() => store.backlog(), runs);
    const [after] = await sql("SHOW GLOBAL STATUS LIKE 'Com_select'");
    const oldMs = reuse ? null : await timed(() => Promise.all(OLD_BACKLOG.map((q) => sql(q, ['default']))), Math.min(runs, 5));
    const terminal1h = await timed(() => store.terminalCounts({since: since1h}), Math.min(runs, 7));
    const terminal24h = await timed(() => store.terminalCounts({since: new Date(Date.now() - 86_400_000)}), 3);
    const statsAllTime = reuse ? null : await timed(() => store.tasksStats(), 1);
    const [{n: liveRows}] = await sql(
      "SELECT COUNT(*) AS n FROM tasks WHERE cell = 'default' AND state IN ('submitted', 'failed', 'running')",
    );
    const [{n: deadRows}] = await sql("SELECT COUNT(*) AS n FROM tasks WHERE cell = 'default' AND state = 'dead'");
    const [[{n: window1h}]] = [
      await sql("SELECT COUNT(*) AS n FROM task_history WHERE to_state IN ('succeeded', 'dead', 'cancelled') AND at >= ?", [since1h]),
    ];
    const report = await store.backlog();
    let writes = null;
    if (writeN > 0) {
      log('measuring the write cost of the index sets');
      writes = await writeCost(sql, writeN);
    }
    return {
      database: name,
      rows: Number(total),
      liveRows: Number(liveRows),
      deadRows: Number(deadRows),
      terminal,
      live,
      runs,
      plans,
      backlogMs,
      // Com_select is global (other sessions count too): an upper bound of the statements per call.
      backlogStatementsPerCall: (Number(after.Value) - Number(before.Value) - 1) / runs,
      oldBacklogMs: oldMs,
      terminal1h: {ms: terminal1h, transitions: Number(window1h)},
      terminal24h: {ms: terminal24h},
      statsAllTimeMs: statsAllTime,
      backlogTypes: report.rows.length,
      sample: report.rows[0],
      writes,
      writeN,
    };
  } finally {
    await store.close();
    await raw.end();
    if (!keep) await adminDb.pool.query(`DROP DATABASE IF EXISTS \`${name}\``);
    await adminDb.pool.end();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const {values: a} = parseArgs({
    options: {
      terminal: {type: 'string'},
      live: {type: 'string'},
      runs: {type: 'string'},
      'write-n': {type: 'string'},
      db: {type: 'string'},
      keep: {type: 'boolean', default: false},
    },
  });
  const num = (s, d) => (s === undefined ? d : Number(s));
  const r = await runBacklogBench({
    terminal: num(a.terminal, 5_000_000),
    live: num(a.live, 100_000),
    runs: num(a.runs, 21),
    writeN: num(a['write-n'], 20_000),
    ...(a.db ? {db: a.db} : {}),
    keep: a.keep,
  });
  console.log(JSON.stringify(r, null, 2));
}
