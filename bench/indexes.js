#!/usr/bin/env node
// What each secondary index of `tasks` costs MariaDB per task (issue 9, part 3: measure first).
//   node bench/indexes.js [--n 50000] [--rounds 3] [--json]      (after npm run build)
// In a database of its own (dropped at the end), for each index set below, alternating in every
// round: N rows inserted in 500-row INSERTs (the producer's statement shape, raw.js), then claimed
// with ax's claim UPDATE (claimUpdateSql) and completed with ax's outcome UPDATE (outcomeUpdateSql),
// 500 ids per statement, autocommit, one connection. Reported: mariadbd CPU (all its threads, so
// the purge of the old index entries is counted; each phase waits until mariadbd is idle again) in
// µs per row, median of the rounds. The machine must be quiet: other load in mariadbd counts too.
import {parseArgs} from 'node:util';
import mysql from 'mysql2/promise';
import {schemaMigrate} from '../dist/core/store/mysql/migrate.js';
import {outcomeUpdateSql} from '../dist/core/store/mysql/outcomes.js';
import {claimUpdateSql} from '../dist/core/store/mysql/tasks-claim.js';
import {CLK_TCK, findServerPids, procTicks} from './lib/cpu.js';
import {insertSql, newId, rowParams} from './lib/raw.js';
import {createRuntime, openDatabase} from './lib/ax.js';
import {median} from './lib/stats.js';
import {loadConfig} from '../dist/core/config/config.js';

const MYSQL_ROOT = process.env.AX_BENCH_MYSQL_ROOT ?? 'mysql://root@127.0.0.1:3306';
const BATCH = 500;

/** Index sets, as ALTERs of a copy of the migrated table (whatever this tree's migrations make). */
const VARIANTS = {
  'this tree': [],
  'migration 16 (three indexes hold state)': [
    'DROP INDEX idx_tasks_due, ADD INDEX idx_tasks_due (cell, state, run_at)',
    'DROP INDEX idx_tasks_dispatch, ADD INDEX idx_tasks_dispatch (cell, published_at, state, run_at)',
    'ADD INDEX idx_tasks_state_type (cell, state, type, run_at)',
  ],
  'floor: no index holds state': ['DROP INDEX idx_tasks_due'],
};

const {values: args} = parseArgs({
  options: {n: {type: 'string', default: '50000'}, rounds: {type: 'string', default: '3'}, json: {type: 'boolean', default: false}},
});
const N = Number(args.n);
const ROUNDS = Number(args.rounds);
if (!Number.isInteger(N) || N < BATCH || !Number.isInteger(ROUNDS) || ROUNDS < 1) {
  console.error('usage: node bench/indexes.js [--n N >= 500] [--rounds R >= 1] [--json]');
  process.exit(2);
}

const mariadbd = findServerPids().mariadbd?.[0];
if (!mariadbd) {
  console.error('mariadbd not found in /proc: start it (bash scripts/services.sh)');
  process.exit(1);
}
const cpuMs = () => (procTicks(mariadbd) * 1000) / CLK_TCK;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** Waits until mariadbd used at most 1 tick in 200 ms (purge and flushing caught up), up to 10 s. */
async function idle() {
  for (let i = 0; i < 50; i++) {
    const a = procTicks(mariadbd);
    await sleep(200);
    if (procTicks(mariadbd) - a <= 1) return;
  }
}

const dbName = `ax_bench_idx_${Math.random().toString(16).slice(2, 8)}`;
const admin = await mysql.createConnection({uri: MYSQL_ROOT});
await admin.query(`CREATE DATABASE ${dbName}`);
const cleanup = async () => {
  await admin.query(`DROP DATABASE IF EXISTS ${dbName}`).catch(() => undefined);
  await admin.end().catch(() => undefined);
};
process.on('SIGINT', () => void cleanup().then(() => process.exit(130)));
try {
  const rt = createRuntime(loadConfig({env: {AX_MYSQL_URL: `${MYSQL_ROOT}/${dbName}`}}));
  const db = await openDatabase(rt);
  await schemaMigrate(db);
  await db.pool.end();
  const conn = await mysql.createConnection({uri: `${MYSQL_ROOT}/${dbName}`, timezone: 'Z'});
  const results = {};
  const names = Object.keys(VARIANTS);
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of names.map((_, i) => names[(i + round) % names.length])) {
      await conn.query('DROP TABLE IF EXISTS idx_w');
      await conn.query('CREATE TABLE idx_w LIKE tasks');
      for (const a of VARIANTS[name]) await conn.query(`ALTER TABLE idx_w ${a}`);
      const batches = [];
      for (let lo = 0; lo < N; lo += BATCH) {
        const params = [];
        const ids = [];
        for (let i = lo; i < Math.min(N, lo + BATCH); i++) {
          const id = newId();
          ids.push(id);
          rowParams(params, id, i);
        }
        batches.push({ids, params});
      }
      const onTable = (q) => q.sql.replace(/\bUPDATE tasks\b/, 'UPDATE idx_w');
      const phase = async (fn) => {
        await idle();
        const c0 = cpuMs();
        for (const b of batches) await fn(b);
        await idle();
        return ((cpuMs() - c0) * 1000) / N;
      };
      const r = {};
      r.insert = await phase((b) => conn.query(insertSql('idx_w', b.ids.length), b.params));
      r.claim = await phase((b) => {
        const q = claimUpdateSql(
          b.ids.map((id) => ({id, fence: 0})),
          'bench-worker',
          30_000,
        );
        return conn.query(onTable(q), q.params);
      });
      r.complete = await phase((b) => {
        const q = outcomeUpdateSql(
          'complete',
          b.ids.map((id) => ({kind: 'complete', id, fence: 1})),
        );
        return conn.query(onTable(q), q.params);
      });
      const [[{n}]] = await conn.query("SELECT COUNT(*) AS n FROM idx_w WHERE state = 'succeeded'");
      if (Number(n) !== N) throw new Error(`${name}: ${n} of ${N} rows succeeded: a statement matched fewer rows than it should`);
      for (const [k, v] of Object.entries(r)) ((results[name] ??= {})[k] ??= []).push(v);
      if (!args.json)
        console.error(
          `[indexes] round ${round + 1} ${name}: ${Object.entries(r)
            .map(([k, v]) => `${k} ${v.toFixed(1)}`)
            .join(', ')} µs/row`,
        );
    }
  }
  await conn.end();
  const out = Object.fromEntries(
    Object.entries(results).map(([name, v]) => {
      const m = Object.fromEntries(Object.entries(v).map(([k, xs]) => [k, median(xs)]));
      return [name, {...m, total: m.insert + m.claim + m.complete}];
    }),
  );
  if (args.json) console.log(JSON.stringify({n: N, rounds: ROUNDS, usPerRow: out}, null, 2));
  else {
    console.log(`\nmariadbd CPU per task row, µs (median of ${ROUNDS} rounds of ${N.toLocaleString('en')} rows; purge included)\n`);
    console.log('| index set | insert | claim | complete | total |');
    console.log('| --- | ---: | ---: | ---: | ---: |');
    for (const [name, m] of Object.entries(out))
      console.log(`| ${name} | ${m.insert.toFixed(1)} | ${m.claim.toFixed(1)} | ${m.complete.toFixed(1)} | ${m.total.toFixed(1)} |`);
  }
} finally {
  await cleanup();
}
