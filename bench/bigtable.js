// P1 on a big table (issue 9, part 4): `node bench/run.js --big-table N` runs P1 twice per round,
// on the empty table and with N finished tasks (and their history) already in `tasks`, and reports
// ratio.p1big.<qt>/p1.<qt> (the goal: ≥ 0.85) with the tables' data and index sizes.
//
// How: the N rows are filled once (bench/backlog.js's fill: INSERT … SELECT from a sequence, 97%
// succeeded, 2% cancelled, 1% dead, finished over 30 days) into a database of their own,
// ax_bench_big_<N>, kept between invocations (a refill takes minutes) and migrated to this tree's
// schema before each use. For each big-table run its `tasks` and `task_history` are swapped into the
// bench database with one atomic RENAME TABLE (the empty ones swapped out), P1 runs against them
// unchanged, P1's own rows are deleted afterwards, and the tables are swapped back. Producer and
// worker keep their connections: their statements name the tables, which MariaDB re-resolves.
import mysql from 'mysql2/promise';
import {fill} from './backlog.js';

/**
 * Makes sure the big database exists and is filled, and returns the swap for bench database `tag`.
 * `rootUrl` is the server's root URL; `migrateDb(url)` brings a database to this tree's schema (a
 * kept database of an older schema is migrated, not refilled).
 */
export async function prepareBigTable({rootUrl, tag, n, migrateDb, log}) {
  const big = `ax_bench_big_${n}`;
  // On the bench database (a multi-table DELETE resolves its aliases in the default database).
  const conn = await mysql.createConnection({uri: `${rootUrl}/${tag}`});
  const q = async (s, p = []) => (await conn.query(s, p))[0];
  const filled = await q('SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = ? AND table_name = ?', [
    big,
    'bench_big_done',
  ]);
  if (Number(filled[0].n) === 0) {
    log(`big table: filling ${big} with ${n} finished tasks (once; kept for the next runs)`);
    await q(`DROP DATABASE IF EXISTS \`${big}\``);
    await q(`CREATE DATABASE \`${big}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
    await migrateDb(`${rootUrl}/${big}`);
    const bigConn = await mysql.createConnection({uri: `${rootUrl}/${big}`});
    try {
      await fill(async (s, p) => (await bigConn.query(s, p))[0], n, 0, log);
      await bigConn.query('CREATE TABLE bench_big_done (n BIGINT NOT NULL)');
      await bigConn.query('INSERT INTO bench_big_done VALUES (?)', [n]);
    } finally {
      await bigConn.end();
    }
  } else {
    log(`big table: reusing ${big} (migrating it to this schema)`);
    await migrateDb(`${rootUrl}/${big}`);
  }
  let swappedIn = false;
  const swap = async (into) => {
    // Atomic: the empty tables park in the big database while the big ones are in the bench's.
    if (into)
      await q(`RENAME TABLE \`${tag}\`.tasks TO \`${big}\`.tasks_empty, \`${tag}\`.task_history TO \`${big}\`.task_history_empty,
               \`${big}\`.tasks TO \`${tag}\`.tasks, \`${big}\`.task_history TO \`${tag}\`.task_history`);
    else
      await q(`RENAME TABLE \`${tag}\`.tasks TO \`${big}\`.tasks, \`${tag}\`.task_history TO \`${big}\`.task_history,
               \`${big}\`.tasks_empty TO \`${tag}\`.tasks, \`${big}\`.task_history_empty TO \`${tag}\`.task_history`);
    swappedIn = into;
  };
  return {
    name: big,
    /** Runs `fn` with the big tables in the bench database, then deletes P1's rows (type `type`) and swaps back. */
    async with(type, fn) {
      await swap(true);
      try {
        return await fn();
      } finally {
        const t0 = performance.now();
        // By id, in chunks: the type alone has no index here (P1's tasks are the only rows of theirs).
        const ids = (
          await q(
            "SELECT id FROM tasks WHERE cell = 'default' AND state IN ('succeeded', 'dead', 'cancelled', 'submitted', 'failed', 'running') AND type = ?",
            [type],
          )
        ).map((r) => r.id);
        for (let i = 0; i < ids.length; i += 5000) {
          const chunk = ids.slice(i, i + 5000);
          await q('DELETE FROM task_history WHERE task_id IN (?)', [chunk]);
          await q('DELETE FROM tasks WHERE id IN (?)', [chunk]);
        }
        log(`big table: P1's rows deleted in ${Math.round(performance.now() - t0)} ms`);
        await swap(false);
      }
    },
    /** Data and index bytes of the big tables (information_schema, InnoDB's estimates). */
    async sizes() {
      const rows = await q(
        `SELECT table_name AS t, table_rows AS rows_, data_length AS data, index_length AS idx FROM information_schema.tables
          WHERE table_schema = ? AND table_name IN ('tasks', 'task_history')`,
        [swappedIn ? tag : big],
      );
      return Object.fromEntries(rows.map((r) => [r.t, {rows: Number(r.rows_), dataBytes: Number(r.data), indexBytes: Number(r.idx)}]));
    },
    async close() {
      if (swappedIn) await swap(false).catch((e) => log(`big table: swap back failed: ${e.message}`));
      await conn.end();
    },
  };
}
