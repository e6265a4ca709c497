/**
 * The claim's fast path (claim-fast.ts, issue 22): a batch of due tasks whose types have nothing
 * to decide but pause and breaker is claimed with a plain read and one autocommit UPDATE — no
 * transaction, two statements instead of five — and keeps the full claim's answers: a pause or an
 * open breaker (even one being committed while the claim runs) defers with why, a not-yet-due row
 * has its doorbell forgotten, a stored-apart payload is read as committed.
 */
import {afterAll, beforeAll, describe, expect, it, vi} from 'vitest';
import mysql from 'mysql2/promise';
import {openStore} from '../../src/compose.js';
import type {MysqlTaskStore} from '../../src/core/store/mysql/store.js';
import type {AxStore} from '../../src/core/store/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import {createTestEnv, eventually, type TestEnv} from '../helpers/env.js';

const newId = createIdGenerator(() => Date.now());
const task = (type: string, extra: Record<string, unknown> = {}) =>
  validateTaskSpec(
    {type, payload: {n: Math.random()}, ...extra},
    {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'},
    Date.now(),
    newId,
  );

let env: TestEnv;
let store: AxStore;
beforeAll(async () => {
  env = await createTestEnv();
  store = await openStore(env.rt);
});
afterAll(async () => {
  await store.close();
  await env.dispose();
});

/** Counts the statements a call sends on the store's pool outside a transaction, and the transactions it opens. */
async function counted<T>(fn: () => Promise<T>): Promise<{out: T; statements: number; transactions: number}> {
  const pool = (store as unknown as MysqlTaskStore).db.pool;
  const q = vi.spyOn(pool, 'query');
  const g = vi.spyOn(pool, 'getConnection');
  try {
    const out = await fn();
    return {out, statements: q.mock.calls.length, transactions: g.mock.calls.length};
  } finally {
    q.mockRestore();
    g.mockRestore();
  }
}

/** Resolves once a statement of the test database matching `like` has run for 200 ms (it waits for a lock). */
const waitingStatement = (like: string, what: string) =>
  eventually(
    async () =>
      (await env.sql('SELECT 1 FROM information_schema.PROCESSLIST WHERE db = DATABASE() AND info LIKE ? AND time_ms > 200', [like]))
        .length > 0,
    10_000,
    what,
  );

const pause = (type: string, paused: boolean) =>
  store.typeSetPaused({
    type,
    paused,
    operator: 'op',
    reason: 'test',
    audit: {operator: 'op', command: 'types pause', filter: {type}, reason: 'test'},
  });

describe('the fast claim', () => {
  it('claims a due batch with a plain read and one UPDATE, no transaction, in delivery order', async () => {
    const ts = [task('fast_a'), task('fast_b'), task('fast_a')];
    await store.tasksInsert({tasks: ts, actor: 't'});
    const order = [ts[2]!.id, ts[0]!.id, ts[1]!.id];
    const {out, statements, transactions} = await counted(() => store.tasksClaim({ids: order, worker: 'w:fast', leaseMs: 30_000}));
    expect(transactions).toBe(0);
    expect(statements).toBe(2);
    expect(out.claimed.map((c) => c.id)).toEqual(order);
    expect(out.claimed.every((c) => c.attempt === 1 && c.fence === 1)).toBe(true);
    expect(out.skipped).toEqual([]);
    const rows = await env.sql<{state: string; worker: string; fence: number}>(
      `SELECT state, worker, fence FROM tasks WHERE id IN (?, ?, ?)`,
      order,
    );
    expect(rows).toEqual(Array(3).fill({state: 'running', worker: 'w:fast', fence: 1}));
    // Claimed already: the same doorbells again claim nothing, and write nothing.
    const again = await counted(() => store.tasksClaim({ids: order, worker: 'w:other', leaseMs: 30_000}));
    expect(again.out.claimed).toEqual([]);
    expect(again.statements).toBe(1);
  });

  it('an id not found goes to the full claim, whose locking read waits for a row written but not yet committed', async () => {
    // The producer rings once a row is written and locked, alongside its COMMIT (beforeCommit).
    const model = task('fast_uncommitted');
    await store.tasksInsert({tasks: [model], actor: 't'});
    const id = newId();
    const conn = await mysql.createConnection(env.config.mysqlUrl);
    try {
      await conn.query('CREATE TEMPORARY TABLE fresh AS SELECT * FROM tasks WHERE id = ?', [model.id]);
      await conn.query('UPDATE fresh SET id = ?', [id]);
      const cols = (
        await env.sql<{c: string}>(
          "SELECT COLUMN_NAME AS c FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'tasks' AND EXTRA NOT LIKE '%GENERATED%' ORDER BY ORDINAL_POSITION",
        )
      )
        .map((r) => `\`${r.c}\``)
        .join(', ');
      await conn.query('START TRANSACTION');
      await conn.query(`INSERT INTO tasks (${cols}) SELECT ${cols} FROM fresh`);
      const claim = store.tasksClaim({ids: [id, 'no-such-id'], worker: 'w:u', leaseMs: 30_000});
      await waitingStatement('SELECT id, type, pool,%FOR UPDATE', 'the full claim waiting for the uncommitted row');
      await conn.query('COMMIT');
      const out = await claim;
      expect(out.claimed.map((c) => c.id)).toEqual([id]);
      expect(out.skipped).toEqual([{id: 'no-such-id', state: null}]);
    } finally {
      await conn.end();
    }
  });

  it('a paused type in the batch: the others are claimed fast, its task is deferred with why by the full claim', async () => {
    const [run, held] = [task('fast_free'), task('fast_paused')];
    await store.tasksInsert({tasks: [run!, held!], actor: 't'});
    await pause('fast_paused', true);
    const {out, transactions} = await counted(() => store.tasksClaim({ids: [held!.id, run!.id], worker: 'w:p', leaseMs: 30_000}));
    expect(transactions).toBe(1);
    expect(out.claimed.map((c) => c.id)).toEqual([run!.id]);
    expect(out.deferred).toMatchObject([{id: held!.id, type: 'fast_paused', parked: 'paused'}]);
    expect(await env.sql(`SELECT state, parked FROM tasks WHERE id = ?`, [held!.id])).toEqual([{state: 'submitted', parked: 'paused'}]);
  });

  it('waits for a pause being committed and then claims nothing of its type (pause stays exact)', async () => {
    const t = task('fast_pausing');
    await store.tasksInsert({tasks: [t], actor: 't'});
    const conn = await mysql.createConnection(env.config.mysqlUrl);
    try {
      await pause('fast_pausing', false);
      await conn.query('START TRANSACTION');
      await conn.query("UPDATE task_types SET paused = 1 WHERE cell = 'default' AND type = 'fast_pausing'");
      const claim = store.tasksClaim({ids: [t.id], worker: 'w:race', leaseMs: 30_000});
      await waitingStatement('UPDATE tasks SET state%', "the claim's UPDATE waiting for the type's row");
      await conn.query('COMMIT');
      const out = await claim;
      expect(out.claimed).toEqual([]);
      expect(out.deferred).toMatchObject([{id: t.id, parked: 'paused'}]);
    } finally {
      await conn.end();
    }
  });

  it('an open breaker defers its type as the full claim does', async () => {
    const t = task('fast_broken');
    await store.tasksInsert({tasks: [t], actor: 't'});
    await env.sql(
      "INSERT INTO task_types (cell, type, breaker_state, breaker_until, breaker_changed_at, created_at, updated_at) VALUES ('default', 'fast_broken', 'open', NOW(3) + INTERVAL 1 HOUR, NOW(3), NOW(3), NOW(3))",
    );
    const out = await store.tasksClaim({ids: [t.id], worker: 'w:b', leaseMs: 30_000});
    expect(out.claimed).toEqual([]);
    expect(out.deferred).toMatchObject([{id: t.id, parked: 'breaker'}]);
  });

  it('a row not yet due sends the batch to the full claim, which forgets its doorbell', async () => {
    const [due, later] = [task('fast_due'), task('fast_due', {delay: '1h'})];
    await store.tasksInsert({tasks: [due!, later!], actor: 't'});
    const {out, transactions} = await counted(() => store.tasksClaim({ids: [due!.id, later!.id], worker: 'w:d', leaseMs: 30_000}));
    expect(transactions).toBe(1);
    expect(out.claimed.map((c) => c.id)).toEqual([due!.id]);
    expect(out.skipped).toEqual([{id: later!.id, state: 'submitted', notDue: true}]);
  });

  it('a batch of more than 64 ids (a backlog, not a latency) takes the full claim', async () => {
    const ts = Array.from({length: 65}, () => task('fast_big'));
    await store.tasksInsert({tasks: ts, actor: 't'});
    const {out, transactions} = await counted(() => store.tasksClaim({ids: ts.map((t) => t.id), worker: 'w:big', leaseMs: 30_000}));
    expect(transactions).toBe(1);
    expect(out.claimed).toHaveLength(65);
  });

  it('a type the caller locks (limits) skips the fast path', async () => {
    const t = task('fast_locked');
    await store.tasksInsert({tasks: [t], actor: 't'});
    const {out, transactions} = await counted(() =>
      store.tasksClaim({ids: [t.id], worker: 'w:l', leaseMs: 30_000, lockTypes: ['fast_locked']}),
    );
    expect(transactions).toBe(1);
    expect(out.claimed.map((c) => c.id)).toEqual([t.id]);
  });
});
