/**
 * The hot statements use the indexes they were designed for, on a table big enough for the
 * optimizer to care (20k rows in mixed states). docs/queries.md shows the same plans.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {DOCTOR_SQL} from '../../src/core/store/mysql/doctor.js';
import {failureGroupsSql} from '../../src/core/store/mysql/failures.js';
import {runningCountSql} from '../../src/core/store/mysql/admit-claim.js';
import {HOT_SQL} from '../../src/core/store/mysql/hot-sql.js';
import {tasksListQuery} from '../../src/core/store/mysql/inspect.js';
import {searchSliceQueries, searchSlices} from '../../src/core/store/mysql/tasks-search.js';
import {outcomeUpdateSql} from '../../src/core/store/mysql/outcomes.js';
import {claimSelectSql, claimUpdateSql} from '../../src/core/store/mysql/tasks-claim.js';
import {claimFastUpdateSql, claimReadSql} from '../../src/core/store/mysql/claim-sql.js';
import {doorbellsForgetSql, doorbellsMarkSql} from '../../src/core/store/mysql/doorbells.js';
import {holdsTakeSql} from '../../src/core/store/mysql/holds.js';
import {keysCountSql, keysTopSql} from '../../src/core/store/mysql/keys.js';
import {createTestEnv, mysql, type TestEnv} from '../helpers/env.js';

interface Plan {
  key: string | null;
  type: string;
  Extra: string | null;
}

/** A window of the history (`h`) as a range of idx_history_failures, each task (`t`) by primary key. */
function expectFailuresJoin(plan: Array<Plan & {table: string}>): void {
  const h = plan.find((p) => p.table === 'h')!;
  const t = plan.find((p) => p.table === 't')!;
  expect(h.key).toBe('idx_history_failures');
  expect(h.type).toBe('range');
  expect(t.key).toBe('PRIMARY');
  expect(t.type).toBe('eq_ref');
}

describe('query plans of the hot statements', () => {
  let env: TestEnv;
  const explain = async (sql: string, params: unknown[]): Promise<Plan> => (await env.sql<Plan>(`EXPLAIN ${sql}`, params))[0]!;

  beforeAll(async () => {
    env = await createTestEnv();
    // 20k rows: most finished, some due, some running — roughly what a busy day leaves behind.
    await env.sql(`INSERT INTO tasks (id, cell, type, pool, state, attempt, max_retries, run_at, lease_until, fence, content_hash, created_at, updated_at, payload, published_at)
      SELECT CONCAT(LPAD(HEX(seq), 8, '0'), '-0000-7000-8000-000000000000'), 'default', ELT(1 + seq % 4, 'order_notify', 'user_register_credit', 'report_build', 'payment_capture'), 'io',
             ELT(1 + seq % 20, 'submitted', 'running', 'failed', 'succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded', 'dead', 'succeeded', 'cancelled'),
             1, 5, NOW(3) - INTERVAL seq SECOND, IF(seq % 20 = 1, NOW(3) + INTERVAL 30 SECOND, NULL), 1, 'x', NOW(3) - INTERVAL seq SECOND, NOW(3), '{}',
             -- Every row that left the waiting states was rung (or marked when it left them unrung).
             IF(1 + seq % 20 IN (1, 3), NULL, NOW(3) - INTERVAL seq SECOND)
        FROM seq_1_to_20000`);
    await env.sql('ANALYZE TABLE tasks');
    // History spread over the last ~6 hours: every task submitted, claimed and finished; one in
    // five failed first. The window of one hour holds a sixth of it.
    await env.sql(`INSERT INTO task_history (task_id, from_state, to_state, attempt, worker, at, error)
      SELECT id, NULL, 'submitted', 0, 'p', created_at, NULL FROM tasks
      UNION ALL SELECT id, 'submitted', 'running', 1, 'w', created_at, NULL FROM tasks
      UNION ALL SELECT id, 'running', IF(state = 'dead', 'dead', 'failed'), 1, 'w', created_at, CONCAT('order ', RIGHT(id, 3), ' not found')
        FROM tasks WHERE state IN ('failed', 'dead', 'succeeded') AND CONV(LEFT(id, 8), 16, 10) % 5 = 0
      UNION ALL SELECT id, 'running', 'succeeded', 1, 'w', created_at, NULL FROM tasks WHERE state = 'succeeded'`);
    await env.sql('ANALYZE TABLE task_history');
  });
  afterAll(async () => env?.dispose());

  it('claim: primary-key lookups only', async () => {
    const ids = ['00000001-0000-7000-8000-000000000000', '00000002-0000-7000-8000-000000000000'];
    const p = await explain(claimSelectSql(2), [...ids, 'default']);
    expect(p.key).toBe('PRIMARY');
    expect(p.type).toBe('range');
    // The stored-apart payloads come with it: one primary-key lookup in task_payloads per row.
    const rows = await env.sql<Plan & {table: string; select_type: string}>(`EXPLAIN ${claimSelectSql(2)}`, [...ids, 'default']);
    expect(rows.find((r) => r.table === 'p')).toMatchObject({select_type: 'DEPENDENT SUBQUERY', type: 'eq_ref', key: 'PRIMARY'});
  });

  it("the fast claim: a plain read by primary key; its UPDATE by primary key, each row's type by the registry's primary key", async () => {
    const ids = ['00000001-0000-7000-8000-000000000000', '00000002-0000-7000-8000-000000000000'];
    const read = await env.sql<Plan & {table: string}>(`EXPLAIN ${claimReadSql(2)}`, [...ids, 'default']);
    expect(read).toMatchObject([{table: 'tasks', key: 'PRIMARY', type: 'range'}]);
    const q = claimFastUpdateSql(
      ids.map((id) => ({id, fence: 1})),
      'w1',
      30_000,
      'default',
    );
    const plan = await env.sql<Plan & {table: string; select_type: string}>(`EXPLAIN ${q.sql}`, q.params);
    expect(plan.find((r) => r.table === 'tasks')).toMatchObject({key: 'PRIMARY', type: 'range'});
    expect(plan.find((r) => r.table === 'y')).toMatchObject({select_type: 'DEPENDENT SUBQUERY', key: 'PRIMARY'});
  });

  it('claim UPDATE and not-due reset with their guards (fence read, due): primary-key lookups', async () => {
    const id = (n: number) => `0000000${n}-0000-7000-8000-000000000000`;
    const rows = [
      {id: id(1), fence: 1},
      {id: id(2), fence: 0},
    ];
    for (const q of [claimUpdateSql(rows, 'w1', 30_000), doorbellsForgetSql(rows)]) {
      const p = await explain(q.sql, q.params);
      expect(p.key).toBe('PRIMARY');
      expect(p.type).toBe('range');
    }
  });

  it('doorbell mark: primary-key lookups, with one fence or several', async () => {
    const id = (n: number) => `0000000${n}-0000-7000-8000-000000000000`;
    for (const rung of [
      [
        {id: id(1), fence: 0},
        {id: id(2), fence: 0},
      ],
      [
        {id: id(1), fence: 1},
        {id: id(2), fence: 0},
        {id: id(3), fence: 1},
      ],
    ]) {
      const q = doorbellsMarkSql(rung);
      const p = await explain(q.sql, q.params);
      expect(p.key).toBe('PRIMARY');
      expect(p.type).toBe('range');
    }
  });

  it('outcome UPDATEs with their guards: primary-key lookups, one fence or several', async () => {
    const id = (n: number) => `0000000${n}-0000-7000-8000-000000000000`;
    const q1 = outcomeUpdateSql('complete', [
      {kind: 'complete', id: id(1), fence: 1},
      {kind: 'complete', id: id(2), fence: 1},
    ]);
    const q2 = outcomeUpdateSql('rescue', [
      {kind: 'rescue', id: id(1), fence: 1, error: 'e', retryDelayMs: 0},
      {kind: 'rescue', id: id(3), fence: 2, error: 'e', retryDelayMs: 0},
    ]);
    for (const q of [q1, q2]) {
      const p = await explain(q.sql, q.params);
      expect(p.key).toBe('PRIMARY');
      expect(p.type).toBe('range');
    }
  });

  it('rescuer: expired leases through idx_tasks_due (only the running rows)', async () => {
    const p = await explain(HOT_SQL.expiredLeases, ['default', 1000]);
    expect(p.key).toBe('idx_tasks_due');
    expect(Number((p as unknown as {rows: number}).rows)).toBeLessThan(2000);
  });

  it('scheduler: its hold of due-soon unrung rows is a range of idx_tasks_dispatch (the unrung rows only)', async () => {
    const q = holdsTakeSql('default', {owner: 's1', horizonMs: 60_000, holdMs: 30_000, limit: 1000});
    const p = (await env.sql<Plan & {rows: number}>(`EXPLAIN ${q.sql}`, q.params))[0]!;
    expect(p.key).toBe('idx_tasks_dispatch');
    expect(p.type).toBe('range');
    // The unrung rows only: the 2,000 waiting ones of 20,000 (sorted by run_at: MariaDB's UPDATE …
    // ORDER BY … LIMIT sorts the range it read, as it did with `state` in the index).
    expect(Number(p.rows)).toBeLessThan(4000);
  });

  it('reconciler: due undispatched tasks through idx_tasks_due', async () => {
    expect((await explain(HOT_SQL.undispatched, ['default', 300_000_000, 1000])).key).toBe('idx_tasks_due');
  });

  it('stats: a covering scan of idx_tasks_due', async () => {
    const p = await explain(HOT_SQL.stats, ['default']);
    expect(p.key).toBe('idx_tasks_due');
    expect(p.Extra).toContain('Using index');
  });

  it('running rows of capped types (the claim of a type with --max-running): an index-only range of idx_tasks_due', async () => {
    const p = (await env.sql<Plan & {rows: number}>(`EXPLAIN ${runningCountSql(2)}`, ['default', 'order_notify', 'report_build']))[0]!;
    expect(p.key).toBe('idx_tasks_due');
    expect(['ref', 'range']).toContain(p.type);
    expect(p.Extra).toContain('Using index');
    // Only the running entries (the type checked in the index): ~1,000 of 20,000.
    expect(Number(p.rows)).toBeLessThan(2000);
  });

  it('backlog: an index-only range of idx_tasks_due over the live and dead states, grouped without a sort', async () => {
    const p = (await env.sql<Plan & {rows: number}>(`EXPLAIN ${HOT_SQL.backlog}`, ['default']))[0]!;
    expect(p.key).toBe('idx_tasks_due');
    expect(p.type).toBe('range');
    expect(p.Extra).toContain('Using index');
    expect(p.Extra).not.toMatch(/filesort/);
    // 4 of the 20 states' buckets are live or dead (submitted, running, failed, dead): ~4,000 of 20,000.
    expect(Number(p.rows)).toBeLessThan(8000);
  });

  it('terminal counts of a window: idx_history_failures, each task by primary key', async () => {
    const now = (await env.sql<{now: Date}>('SELECT NOW(3) AS now'))[0]!.now;
    const plan = await env.sql<Plan & {table: string}>(`EXPLAIN ${HOT_SQL.terminalCounts}`, [
      new Date(now.getTime() - 3_600_000),
      'default',
    ]);
    expectFailuresJoin(plan);
  });

  it('ax top submit rate: a covering range of idx_tasks_created', async () => {
    const now = Date.now();
    const p = await explain(HOT_SQL.createdCount, ['default', new Date(now - 2000), new Date(now - 1000)]);
    expect(p.key).toBe('idx_tasks_created');
    expect(p.Extra).toContain('Using index');
  });

  it('task search pages: a backward range of idx_tasks_created from the cursor or until, down to since; a deep page reads a page', async () => {
    const now = (await env.sql<{now: Date}>('SELECT NOW(3) AS now'))[0]!.now.getTime();
    // 15,000 of the 20,000 rows are newer than the cursor: an OFFSET (or a read from the newest) would pass them all.
    const after = {createdAt: new Date(now - 15_000_000), id: '00003A98-0000-7000-8000-000000000000'};
    const since = new Date(now - 18_000_000);
    const until = new Date(now - 15_000_000);
    const c = await mysql.createConnection({uri: env.config.mysqlUrl, timezone: 'Z'});
    try {
      await c.query("SET time_zone = '+00:00'");
      for (const f of [
        {after, limit: 50},
        {after, type: 'order_notify', limit: 50},
        {after, state: 'succeeded' as const, limit: 50},
        {until, limit: 50},
        // A match too rare to fill the page: the window is read, not the older rows.
        {since, until, type: 'never_seen', limit: 50},
      ]) {
        const q = tasksListQuery('default', f, 'id');
        const [plan] = (await c.query(`EXPLAIN ${q.sql}`, q.params)) as unknown as [Plan[]];
        expect(plan[0]).toMatchObject({key: 'idx_tasks_created', type: 'range'});
        expect(plan[0]!.Extra ?? '').not.toMatch(/filesort/);
        await c.query('FLUSH STATUS');
        await c.query(q.sql, q.params);
        const [status] = (await c.query("SHOW SESSION STATUS LIKE 'Handler_read_prev'")) as unknown as [Array<{Value: string}>];
        // A page of 50 (a fifth of the rows of a type, a few more of a state), or the 3,000 rows of the window.
        expect(Number(status[0]!.Value)).toBeLessThan(f.type === 'never_seen' ? 3100 : 300);
      }
      // A dedup key is one row of uq_tasks_dedup, cursor or not (row 16,000: older than the cursor).
      await c.query("UPDATE tasks SET dedup_key = 'explain-k' WHERE id = '00003E80-0000-7000-8000-000000000000'");
      const q = tasksListQuery('default', {after, dedupKey: 'explain-k', limit: 50}, 'id');
      const [plan] = (await c.query(`EXPLAIN ${q.sql}`, q.params)) as unknown as [Plan[]];
      expect(plan[0]!.key).toBe('uq_tasks_dedup');
    } finally {
      await c.end();
    }
  });

  it('payload search over a window: each slice a primary-key range, and the ids outside it index-only from idx_tasks_created, then by primary key', async () => {
    const now = (await env.sql<{now: Date}>('SELECT NOW(3) AS now'))[0]!.now.getTime();
    const c = await mysql.createConnection({uri: env.config.mysqlUrl, timezone: 'Z'});
    try {
      await c.query("SET time_zone = '+00:00'");
      for (const f of [
        {since: new Date(now - 3_600_000), payload: {path: '$.orderId', value: '7'}, limit: 50},
        {since: new Date(now - 7_200_000), until: new Date(now - 3_600_000), errorContains: 'boom', state: 'succeeded' as const, limit: 50},
      ]) {
        const slices = searchSlices(f, now);
        expect(slices.length).toBeGreaterThan(1);
        for (const s of [slices[0]!, slices.at(-1)!]) {
          const q = searchSliceQueries('default', f, 'id', s, now, 50, 3);
          expect(q.inRange).toHaveLength(3);
          for (const r of q.inRange) {
            const [inRange] = (await c.query(`EXPLAIN ${r.sql}`, r.params)) as unknown as [Plan[]];
            expect(inRange[0]).toMatchObject({key: 'PRIMARY', type: 'range'});
          }
          const [outside] = (await c.query(`EXPLAIN ${q.outside.sql}`, q.outside.params)) as unknown as [Plan[]];
          expect(outside[0]).toMatchObject({key: 'idx_tasks_created', type: 'range'});
          expect(outside[0]!.Extra).toContain('Using index');
          expect(outside[1]).toMatchObject({key: 'PRIMARY', type: 'eq_ref'});
        }
      }
    } finally {
      await c.end();
    }
  });

  it('overview: created per bucket, a covering range of idx_tasks_created; transitions per bucket, idx_history_failures, each task by primary key', async () => {
    const now = (await env.sql<{now: Date}>('SELECT NOW(3) AS now'))[0]!.now.getTime();
    const [since, until] = [new Date(now - 3_600_000), new Date(now)];
    const created = (
      await env.sql<Plan & {rows: number}>(`EXPLAIN ${HOT_SQL.createdBuckets}`, [since, 5_000_000, 'default', since, until])
    )[0]!;
    expect(created).toMatchObject({key: 'idx_tasks_created', type: 'range'});
    expect(created.Extra).toContain('Using index');
    expect(created.Extra).not.toMatch(/filesort/);
    // The hour's 3,600 of the 20,000 rows.
    expect(Number(created.rows)).toBeLessThan(8000);
    const plan = await env.sql<Plan & {table: string}>(`EXPLAIN ${HOT_SQL.transitionBuckets}`, [since, 5_000_000, since, until, 'default']);
    expectFailuresJoin(plan);
    expect(plan.find((p) => p.table === 'h')!.Extra).not.toMatch(/filesort/);
  });

  it('history: idx_history_task', async () => {
    expect((await explain(HOT_SQL.history, ['00000001-0000-7000-8000-000000000000'])).key).toBe('idx_history_task');
  });

  it('ax errors: the failures of the window through idx_history_failures, each task by primary key', async () => {
    const now = (await env.sql<{now: Date}>('SELECT NOW(3) AS now'))[0]!.now;
    const q = failureGroupsSql('default', {since: new Date(now.getTime() - 3_600_000)});
    const plan = await env.sql<Plan & {table: string; rows: number}>(`EXPLAIN ${q.sql}`, q.params);
    expectFailuresJoin(plan);
  });

  it('ax doctor: due per pool through idx_tasks_due; samples of the window’s successes and attempt ends from idx_history_failures alone', async () => {
    expect((await explain(DOCTOR_SQL.duePerPool, ['default'])).key).toBe('idx_tasks_due');
    // The history written by the previous test.
    const since = new Date((await env.sql<{now: Date}>('SELECT NOW(3) AS now'))[0]!.now.getTime() - 3_600_000);
    for (const [sql, params] of [
      [DOCTOR_SQL.successRepeats, [since, 20_000, 'default', 50]],
      [DOCTOR_SQL.attemptTimes, [since, 5000, 'default']],
    ] as const) {
      const plan = await env.sql<Plan & {table: string}>(`EXPLAIN ${sql}`, [...params]);
      // The sample's row ids from the index alone (covering), then each row and its task by primary key.
      expect(plan.find((p) => p.table === 'task_history')).toMatchObject({key: 'idx_history_failures', type: 'range'});
      expect(plan.find((p) => p.table === 'task_history')?.Extra).toContain('Using index');
      expect(plan.find((p) => p.table === 'h')).toMatchObject({key: 'PRIMARY', type: 'eq_ref'});
      expect(plan.find((p) => p.table === 't')).toMatchObject({key: 'PRIMARY', type: 'eq_ref'});
      if (sql === DOCTOR_SQL.attemptTimes) expect(plan.find((p) => p.table === 'r')?.key).toBe('idx_history_task');
    }
  });

  it('a type’s keys (ax types show, top, doctor): index-only ranges of idx_tasks_key, grouped in index order', async () => {
    // Half of report_build's rows get one of 50 keys (the rest keep none: no entry in the key phases).
    await env.sql(`UPDATE tasks SET task_key = CONCAT('tenant:', CONV(LEFT(id, 8), 16, 10) % 50)
      WHERE cell = 'default' AND type = 'report_build' AND CONV(LEFT(id, 8), 16, 10) % 8 < 4`);
    await env.sql('ANALYZE TABLE tasks');
    const plan = await env.sql<Plan & {table: string; select_type: string; rows: number}>(`EXPLAIN ${keysTopSql}`, [
      'default',
      'report_build',
      1,
      10,
    ]);
    // The groups of the claimable range, counted from the index alone; only the groups are sorted.
    const scan = plan.find((p) => p.table === 'tasks')!;
    expect(scan).toMatchObject({select_type: 'DERIVED', key: 'idx_tasks_key'});
    expect(['ref', 'range']).toContain(scan.type);
    expect(scan.Extra).toContain('Using index');
    expect(scan.Extra).not.toMatch(/temporary|filesort/);
    // Claimable keyed rows of one type: ~500 of 20,000.
    expect(Number(scan.rows)).toBeLessThan(2000);
    const some = (
      await env.sql<Plan & {rows: number}>(`EXPLAIN ${keysCountSql(2)}`, ['default', 'report_build', 2, 'tenant:1', 'tenant:2'])
    )[0]!;
    expect(some).toMatchObject({key: 'idx_tasks_key', type: 'range'});
    expect(some.Extra).toContain('Using index');
  });
});
