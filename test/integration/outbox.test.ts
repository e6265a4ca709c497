/**
 * The transactional outbox against the real servers: a task written with the business change in one
 * local transaction is dispatched if and only if that transaction commits. The outbox lives in its
 * own business database (`axt_biz_<random>`); an in-process worker and scheduler run what the relay
 * hands to ax.
 */
import mysql, {type ResultSetHeader, type RowDataPacket} from 'mysql2/promise';
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest';
import {enqueueInTransaction} from '../../src/core/outbox/enqueue.js';
import type {Relay} from '../../src/core/outbox/relay.js';
import {createRelayService} from '../../src/core/outbox/service.js';
import type {AxConfig} from '../../src/core/config/config.js';
import {createSchedulerService} from '../../src/core/scheduler/service.js';
import type {Scheduler} from '../../src/core/scheduler/scheduler.js';
import type {MysqlOutboxStore} from '../../src/core/store/mysql/outbox.js';
import type {TaskSpec} from '../../src/core/task/model.js';
import type {TaskStore, TasksInsertParams} from '../../src/core/store/types.js';
import {idFromDedupKey} from '../../src/core/task/id.js';
import {type Clock, systemClock} from '../../src/core/time.js';
import {AxError} from '../../src/core/errors.js';
import type {Broker} from '../../src/core/broker/types.js';
import type {Worker} from '../../src/core/worker/worker.js';
import {startRelay, type RunningRelay} from '../../src/relay.js';
import {createTestEnv, eventually, type TestEnv, createTestWorker} from '../helpers/env.js';
import {
  type BusinessDb,
  checkInvariants,
  createBusinessDb,
  insertLedger,
  newRun,
  outboxCounts,
  waitForQuiescence,
} from '../helpers/outbox.js';
import {ATTEMPT_STARTS} from '../helpers/history.js';

const SCHED = {schedulerHorizonMs: 2000, schedulerLoadEveryMs: 200, schedulerHoldMs: 1000, rescueEveryMs: 500, retryBaseMs: 200};

interface TaskRow {
  id: string;
  k: string;
  state: string;
  pool: string;
  max_retries: number;
  timeout_ms: number | null;
  dedup_key: string | null;
  run_at: Date;
  published_at: Date | null;
}

describe('transactional outbox', () => {
  let env: TestEnv;
  let biz: BusinessDb;
  let outbox: MysqlOutboxStore;
  let worker: Worker;
  let scheduler: Scheduler;
  const started: RunningRelay[] = [];
  const manual: Relay[] = [];
  let relaySeq = 0;

  /** A relay driven by hand with `once()` (never started), on its own store and broker connections. */
  const manualRelay = async (
    over: Partial<AxConfig> = {},
    clock = systemClock,
    extra: {store?: TaskStore; purgeBatch?: number} = {},
  ): Promise<Relay> => {
    const r = createRelayService({
      ...env.rt,
      clock,
      config: {...env.config, ...over},
      outbox,
      ...(extra.purgeBatch === undefined ? {} : {purgeBatch: extra.purgeBatch}),
      store: extra.store ?? (await env.store()),
      broker: await env.broker(),
      id: `relay-test-${++relaySeq}`,
    });
    manual.push(r);
    return r;
  };
  /** Relay passes until one claims nothing; returns how many rows were claimed in all. */
  const drain = async (r: Relay): Promise<number> => {
    let total = 0;
    for (let n = await r.once(); n > 0; n = await r.once()) total += n;
    return total;
  };
  const tasksOf = (run: string) =>
    env.sql<TaskRow>(
      `SELECT id, JSON_VALUE(payload, '$.k') AS k, state, pool, max_retries, timeout_ms, dedup_key, run_at, published_at
         FROM tasks WHERE JSON_VALUE(payload, '$.run') = ? ORDER BY k`,
      [run],
    );
  const byKey = async (run: string) => new Map((await tasksOf(run)).map((t) => [Number(t.k), t]));
  const outboxRows = async () => Number((await biz.sql<{n: number}>('SELECT COUNT(*) AS n FROM task_outbox'))[0]!.n);

  beforeAll(async () => {
    biz = await createBusinessDb({migrate: true});
    await biz.sql('CREATE TABLE orders (id INT AUTO_INCREMENT PRIMARY KEY, item VARCHAR(64) NOT NULL)');
    env = await createTestEnv({...SCHED, outboxMysqlUrl: biz.url, relayIntervalMs: 50});
    outbox = await biz.outbox();
    // migrate() is idempotent (CREATE TABLE IF NOT EXISTS).
    await outbox.outboxCreateTable();
    worker = await createTestWorker(env);
    await worker.start();
    scheduler = createSchedulerService({
      ...env.rt,
      config: env.config,
      store: await env.store(),
      broker: await env.broker({reconnect: true}),
      id: 'outbox-sched',
    });
    await scheduler.start();
  });

  afterEach(async () => {
    for (const r of started.splice(0)) await r.stop();
    for (const r of manual.splice(0)) await r.stop();
  });

  afterAll(async () => {
    for (const r of started.splice(0)) await r.stop();
    await scheduler?.stop();
    await worker?.stop({graceMs: 1000});
    await env?.dispose();
    await biz?.dispose();
  });

  it('committed: the task runs; rolled back: it is never relayed nor run', async () => {
    const run = newRun('tx');
    const relay = await startRelay({...env.config, relayIntervalMs: 50}, env.rt.logger);
    started.push(relay);
    const probe = await manualRelay();
    const conn = await biz.pool.getConnection();
    let orderId: number;
    try {
      await conn.beginTransaction();
      const [res] = await conn.query<ResultSetHeader>('INSERT INTO orders (item) VALUES (?)', ['book']);
      orderId = res.insertId;
      await enqueueInTransaction(conn, {type: 'test_noop', payload: {run, k: 0, order: orderId}});
      // Uncommitted, the row is invisible to relays (SKIP LOCKED passes over it).
      expect(await probe.once()).toBe(0);
      await conn.commit();

      await conn.beginTransaction();
      await conn.query('INSERT INTO orders (item) VALUES (?)', ['lamp']);
      await enqueueInTransaction(conn, {type: 'test_noop', payload: {run, k: 1, rolledBack: true}});
      await conn.rollback();
    } finally {
      conn.release();
    }
    const rolledBackAt = Date.now();

    const t = await eventually(
      async () => {
        const x = (await byKey(run)).get(0);
        return x?.state === 'succeeded' ? x : undefined;
      },
      20_000,
      'the task to run',
    );
    const hist = await env.sql<{to_state: string}>('SELECT to_state FROM task_history WHERE task_id = ? ORDER BY seq', [t.id]);
    expect(hist.map((h) => h.to_state)).toEqual(['succeeded']);
    const [row] = await biz.sql<{payload: string; sent_at: Date | null; claimed_by: string | null}>(
      "SELECT payload, sent_at, claimed_by FROM task_outbox WHERE JSON_VALUE(payload, '$.run') = ?",
      [run],
    );
    expect(JSON.parse(row!.payload)).toEqual({run, k: 0, order: orderId});
    expect(row!.sent_at).toBeInstanceOf(Date);
    expect(row!.claimed_by).toBeNull();

    // The rolled-back one: let the running relay make several more passes, and make three by hand.
    await eventually(async () => (relay.relay.stats.lastSuccessAt ?? 0) > rolledBackAt + 300, 10_000, 'more relay passes');
    for (let i = 0; i < 3; i++) expect(await probe.once()).toBe(0);
    expect(await outboxCounts(biz, run)).toMatchObject({rows: 1, sent: 1, unsent: 0, failed: 0});
    expect((await tasksOf(run)).map((x) => Number(x.k))).toEqual([0]);
    expect((await biz.sql<{item: string}>('SELECT item FROM orders')).map((o) => o.item)).toEqual(['book']);
  });

  it('many tasks in one transaction all run; invalid input throws invalid_input and writes nothing', async () => {
    const run = newRun('many');
    const probe = await manualRelay();
    const conn = await biz.pool.getConnection();
    try {
      await conn.beginTransaction();
      await conn.query('INSERT INTO orders (item) VALUES (?)', ['crate']);
      await enqueueInTransaction(
        conn,
        Array.from({length: 50}, (_, k) => ({type: 'test_noop', payload: {run, k}})),
      );
      await conn.commit();
    } finally {
      conn.release();
    }
    expect(await drain(probe)).toBe(50);
    const report = await waitForQuiescence(env, biz, run, 50, 30_000);
    expect(report).toMatchObject({tasks: 50, lost: 0, doubledTasks: 0, unexpected: 0, notSucceeded: 0, duplicated: 0});

    const bad: Array<{what: string; tasks: unknown; opts?: Parameters<typeof enqueueInTransaction>[2]; err: RegExp; conn?: unknown}> = [
      {
        what: 'bad type in a list',
        tasks: [
          {type: 'test_noop', payload: {}},
          {type: 'NotAType', payload: {}},
        ],
        err: /task 1: .*domain_action/,
      },
      {what: 'payload not an object', tasks: {type: 'test_noop', payload: [1, 2]}, err: /payload must be a JSON object/},
      {what: 'delay and runAt', tasks: {type: 'test_noop', delay: 100, runAt: new Date(Date.now() + 60_000)}, err: /either delay or runAt/},
      {what: 'unknown field', tasks: {type: 'test_noop', dealy: 100}, err: /unknown task field "dealy"/},
      {what: 'bad pool', tasks: {type: 'test_noop', pool: 'gpu'}, err: /pool must be one of/},
      {what: 'bad id', tasks: {type: 'test_noop', id: 'NOT-A-UUID'}, err: /not a lower-case UUID/},
      {what: 'runAt in the past', tasks: {type: 'test_noop', runAt: new Date(Date.now() - 60_000)}, err: /in the past/},
      {what: 'payload over the limit', tasks: {type: 'test_noop', payload: {s: 'x'.repeat(70_000)}}, err: /over the limit/},
      {what: 'too many', tasks: Array.from({length: 10_001}, () => ({type: 'test_noop'})), err: /at most 10,000/},
      {what: 'table name', tasks: {type: 'test_noop'}, opts: {table: 'task_outbox; DROP TABLE orders'}, err: /not a plain table name/},
      {what: 'no connection', tasks: {type: 'test_noop'}, conn: {}, err: /needs a mysql2 promise connection/},
    ];
    const before = await outboxRows();
    const c2 = await biz.pool.getConnection();
    try {
      for (const b of bad) {
        await c2.beginTransaction();
        await c2.query('INSERT INTO orders (item) VALUES (?)', [b.what]);
        const attempt = enqueueInTransaction((b.conn ?? c2) as typeof c2, b.tasks as TaskSpec[], b.opts);
        await expect(attempt, b.what).rejects.toMatchObject({
          name: 'AxError',
          code: 'invalid_input',
          message: expect.stringMatching(b.err),
        });
        // Nothing was written, even inside the still-open transaction; the caller may still commit its change.
        const [inTx] = await c2.query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM task_outbox');
        expect(Number(inTx[0]!.n), b.what).toBe(before);
        await c2.commit();
      }
    } finally {
      c2.release();
    }
    expect(await outboxRows()).toBe(before);
    const orders = await biz.sql<{n: number}>('SELECT COUNT(*) AS n FROM orders WHERE item IN (?)', [bad.map((b) => b.what)]);
    expect(Number(orders[0]!.n)).toBe(bad.length);
    expect(await drain(probe)).toBe(0);
  });

  it('enqueueInTransaction is right whatever time zone the caller’s connection uses', async () => {
    const run = newRun('tz');
    const probe = await manualRelay();
    // A business service in Shanghai: the driver writes Dates in +08:00 and the session runs in +08:00.
    const conn = await mysql.createConnection({uri: biz.url, timezone: '+08:00'});
    const runAt = Date.now() + 1500;
    let before: number;
    try {
      await conn.query("SET time_zone = '+08:00'");
      await conn.beginTransaction();
      before = Date.now();
      await enqueueInTransaction(conn, [
        {type: 'test_noop', payload: {run, k: 0}, runAt: new Date(runAt)},
        {type: 'test_noop', payload: {run, k: 1}, delay: 1000},
      ]);
      await conn.commit();
    } finally {
      await conn.end();
    }
    expect(await drain(probe)).toBe(2);
    const t = await byKey(run);
    expect(t.get(0)!.run_at.getTime()).toBe(runAt);
    expect(t.get(1)!.run_at.getTime()).toBeGreaterThanOrEqual(before + 1000 - 50);
    expect(t.get(1)!.run_at.getTime()).toBeLessThan(Date.now() + 1000 + 50);
    await waitForQuiescence(env, biz, run, 2, 20_000);
  });

  it('the plain-SQL contract: INSERT (type, payload) and the optional columns give exactly those tasks', async () => {
    const run = newRun('sql');
    const probe = await manualRelay();
    const taskId = '0190aaaa-bbbb-7ccc-8ddd-eeeeffff0001';
    const dedupKey = `order-42-${run}`;
    const p = (k: number): string => JSON.stringify({run, k});
    // Exactly as a producer in another language would write them: no ax code, the server's defaults.
    await biz.sql('INSERT INTO task_outbox (type, payload) VALUES (?, ?)', ['test_noop', p(0)]);
    await biz.sql('INSERT INTO task_outbox (task_id, type, payload, pool, max_retries, timeout_ms) VALUES (?, ?, ?, ?, ?, ?)', [
      taskId,
      'test_noop',
      p(1),
      'cpu',
      2,
      1234,
    ]);
    await biz.sql('INSERT INTO task_outbox (type, payload, dedup_key, max_retries, timeout_ms) VALUES (?, ?, ?, 0, 5000)', [
      'test_noop',
      p(2),
      dedupKey,
    ]);
    await biz.sql('INSERT INTO task_outbox (type, payload, run_at) VALUES (?, ?, UTC_TIMESTAMP(3) + INTERVAL 4500000 MICROSECOND)', [
      'test_noop',
      p(3),
    ]);
    await biz.sql('INSERT INTO task_outbox (type, payload, delay_ms) VALUES (?, ?, 4000)', ['test_noop', p(4)]);
    const rows = await biz.sql<{k: string; created_at: Date; run_at: Date | null; delay_ms: number | null}>(
      "SELECT JSON_VALUE(payload, '$.k') AS k, created_at, run_at, delay_ms FROM task_outbox WHERE JSON_VALUE(payload, '$.run') = ? ORDER BY id",
      [run],
    );
    const due3 = rows[3]!.run_at!.getTime();
    const due4 = rows[4]!.created_at.getTime() + 4000;

    expect(await drain(probe)).toBe(5);
    const relayedAt = Date.now();
    const t = await byKey(run);
    expect(t.size).toBe(5);
    expect(t.get(0)).toMatchObject({pool: 'io', max_retries: env.config.maxRetries, timeout_ms: null, dedup_key: null});
    expect(t.get(0)!.run_at.getTime()).toBeLessThanOrEqual(relayedAt);
    expect(t.get(1)).toMatchObject({id: taskId, pool: 'cpu', max_retries: 2, timeout_ms: 1234, dedup_key: null});
    // No cpu worker here: the cpu task was rung (published) and waits in its queue.
    expect(t.get(1)!.published_at).toBeInstanceOf(Date);
    expect(t.get(2)).toMatchObject({id: idFromDedupKey(env.config.cell, dedupKey), dedup_key: dedupKey, max_retries: 0, timeout_ms: 5000});
    // Delayed ones: written with their due time, not rung, still submitted.
    expect(t.get(3)!.run_at.getTime()).toBe(due3);
    expect(t.get(4)!.run_at.getTime()).toBe(due4);
    // (4 s of margin: checked before they are due even on a loaded machine.)
    expect(Date.now()).toBeLessThan(Math.min(due3, due4));
    for (const k of [3, 4]) expect(t.get(k), `k=${k}`).toMatchObject({state: 'submitted', published_at: null});

    const ids = [0, 2, 3, 4].map((k) => t.get(k)!.id);
    await eventually(
      async () =>
        (await env.sql<{n: number}>("SELECT COUNT(*) AS n FROM tasks WHERE id IN (?) AND state = 'succeeded'", [ids]))[0]!.n === 4,
      20_000,
      'the io tasks to run',
    );
    const startsAt = await env.sql<{id: string; at: Date; run_at: Date}>(
      `SELECT t.id, s.at, t.run_at FROM tasks t JOIN ${ATTEMPT_STARTS} s ON s.task_id = t.id WHERE t.id IN (?)`,
      [[t.get(3)!.id, t.get(4)!.id]],
    );
    expect(startsAt).toHaveLength(2);
    for (const s of startsAt) expect(s.at.getTime(), `${s.id} started before its run_at`).toBeGreaterThanOrEqual(s.run_at.getTime());
    expect((await byKey(run)).get(1)!.state).toBe('submitted');
  });

  it('rows naming the same task (same dedup key, same content) make one task, rung by its real id', async () => {
    const run = newRun('same');
    const probe = await manualRelay();
    const key = `same-${run}`;
    const payload = JSON.stringify({run, k: 0});
    const otherId = '0190aaaa-bbbb-7ccc-8ddd-eeeeffff0002';
    const poisonedBefore = worker.stats.poisoned;
    await biz.sql('INSERT INTO task_outbox (type, payload, dedup_key) VALUES (?, ?, ?), (?, ?, ?)', [
      'test_noop',
      payload,
      key,
      'test_noop',
      payload,
      key,
    ]);
    // The same key and content with an explicit id of its own: an idempotent repeat of the task above.
    await biz.sql('INSERT INTO task_outbox (task_id, type, payload, dedup_key) VALUES (?, ?, ?, ?)', [otherId, 'test_noop', payload, key]);
    // In the same batch, a row with that key but other content: only that row is a conflict.
    const conflicting = JSON.stringify({run, k: 0, other: true});
    await biz.sql('INSERT INTO task_outbox (type, payload, dedup_key) VALUES (?, ?, ?)', ['test_noop', conflicting, key]);
    expect(await drain(probe)).toBe(4);
    // A sentinel rung after them: once it has run, the worker has taken every message before it.
    await biz.sql('INSERT INTO task_outbox (type, payload) VALUES (?, ?)', ['test_noop', JSON.stringify({run, k: 1})]);
    expect(await drain(probe)).toBe(1);
    const r = await waitForQuiescence(env, biz, run, 2, 20_000, 4);
    expect(r).toMatchObject({tasks: 2, lost: 0, doubledTasks: 0, duplicated: 0, notSucceeded: 0, outbox: {rows: 5, sent: 4, failed: 1}});
    expect((await byKey(run)).get(0)!.id).toBe(idFromDedupKey(env.config.cell, key));
    expect(await env.sql('SELECT id FROM tasks WHERE id = ?', [otherId])).toHaveLength(0);
    const [bad] = await biz.sql<{payload: string; last_error: string}>(
      'SELECT payload, last_error FROM task_outbox WHERE failed_at IS NOT NULL AND dedup_key = ?',
      [key],
    );
    expect(bad).toMatchObject({payload: conflicting, last_error: expect.stringMatching(/conflict: dedup key/)});
    // Nothing was rung for an id that does not exist (the worker poisons such messages).
    expect(worker.stats.poisoned).toBe(poisonedBefore);
  });

  it('malformed rows are marked failed with the reason, never block later rows, and relay once fixed', async () => {
    const run = newRun('bad');
    const relay = await manualRelay({relayBatchSize: 2});
    const key = `dup-${run}`;
    const insert = async (cols: string, values: unknown[]): Promise<number> => {
      const [res] = await biz.pool.query<ResultSetHeader>(
        `INSERT INTO task_outbox (${cols}) VALUES (${values.map(() => '?').join(', ')})`,
        values,
      );
      return res.insertId;
    };
    const p = (k: number, extra: object = {}): string => JSON.stringify({run, k, ...extra});
    const ids = {
      good0: await insert('type, payload', ['test_noop', p(0)]),
      badJson: await insert('type, payload', ['test_noop', `{"run": "${run}", "k": 1,`]),
      badType: await insert('type, payload', ['Not-A-Type', p(2)]),
      notObject: await insert('type, payload', ['test_noop', '[1, 2, 3]']),
      both: await insert('type, payload, run_at, delay_ms', ['test_noop', p(4), new Date(Date.now() + 60_000), 1000]),
      dedupFirst: await insert('type, payload, dedup_key', ['test_noop', p(5, {v: 1}), key]),
      dedupConflict: await insert('type, payload, dedup_key', ['test_noop', p(6, {v: 2}), key]),
      badId: await insert('task_id, type, payload', ['not-a-uuid', 'test_noop', p(7)]),
      badPool: await insert('type, payload, pool', ['test_noop', p(8), 'gpu']),
      // MariaDB's default mode accepts a zero date; it reads back as an invalid Date.
      zeroDate: await insert('type, payload, run_at', ['test_noop', p(10), '0000-00-00 00:00:00']),
      // The database compares keys ignoring trailing spaces: the same key to it, another to ax.
      trailingSpace: await insert('type, payload, dedup_key', ['test_noop', p(11), `${key} `]),
      farFuture: await insert('type, payload, run_at', ['test_noop', p(12), new Date(Date.now() + 400 * 86_400_000)]),
      good9: await insert('type, payload', ['test_noop', p(9)]),
    };
    const reasons: Record<string, RegExp> = {
      badJson: /payload is not valid JSON/,
      badType: /domain_action/,
      notObject: /payload must be a JSON object/,
      both: /either run_at or delay_ms, not both/,
      dedupConflict: /conflict: dedup key .* already exists with different content/,
      badId: /not a lower-case UUID/,
      badPool: /pool must be one of/,
      zeroDate: /run_at is not a valid time/,
      trailingSpace: /dedupKey must not end with whitespace/,
      farFuture: /more than 366 days after the row was written/,
    };
    // Two rows per pass: every pass holds a bad row, yet all the good ones go through.
    expect(await drain(relay)).toBe(13);
    expect(relay.stats.failedRows).toBe(10);
    const all = await biz.sql<{
      id: number;
      sent_at: Date | null;
      failed_at: Date | null;
      last_error: string | null;
      claimed_by: string | null;
    }>('SELECT id, sent_at, failed_at, last_error, claimed_by FROM task_outbox WHERE id IN (?)', [Object.values(ids)]);
    const row = new Map(all.map((r) => [Number(r.id), r]));
    for (const name of ['good0', 'dedupFirst', 'good9'] as const) {
      expect(row.get(ids[name])!.sent_at, name).toBeInstanceOf(Date);
      expect(row.get(ids[name])!.failed_at, name).toBeNull();
    }
    for (const [name, re] of Object.entries(reasons)) {
      const r = row.get(ids[name as keyof typeof ids])!;
      expect(r.sent_at, name).toBeNull();
      expect(r.failed_at, name).toBeInstanceOf(Date);
      expect(r.claimed_by, name).toBeNull();
      expect(r.last_error ?? '', name).toMatch(re);
    }
    const failedIds = Object.keys(reasons).map((n) => ids[n as keyof typeof ids]);
    const listed = (await outbox.outboxListFailed({limit: 1000})).filter((f) => failedIds.includes(f.id));
    expect(listed.map((f) => f.id)).toEqual([...failedIds].sort((a, b) => a - b));
    for (const f of listed) expect(f.failedAt).toBeInstanceOf(Date);
    expect(listed.find((f) => f.id === ids.badJson)!.lastError).toMatch(reasons.badJson!);
    expect((await outbox.outboxLag()).failed).toBeGreaterThanOrEqual(7);
    // Failed rows are never claimed again.
    expect(await drain(relay)).toBe(0);

    // Fix two rows by SQL, retry just those: relayed.
    await biz.sql('UPDATE task_outbox SET payload = ? WHERE id = ?', [p(1), ids.badJson]);
    await biz.sql("UPDATE task_outbox SET type = 'test_noop' WHERE id = ?", [ids.badType]);
    expect(await outbox.outboxRetryFailed({ids: [ids.badJson, ids.badType]})).toBe(2);
    expect(await outbox.outboxRetryFailed({ids: [ids.badJson]})).toBe(0);
    expect(await drain(relay)).toBe(2);
    let t = new Map<number, TaskRow>();
    await eventually(
      async () => {
        t = await byKey(run);
        return [0, 1, 2, 5, 9].every((k) => t.get(k)?.state === 'succeeded');
      },
      20_000,
      'the good and fixed rows to run',
    );
    // The dedup conflict did not touch the first task with that key.
    expect(t.get(5)).toMatchObject({id: idFromDedupKey(env.config.cell, key), dedup_key: key});
    expect([...t.keys()].sort((a, b) => a - b)).toEqual([0, 1, 2, 5, 9]);

    // Retrying the unfixed ones fails them again with the same reasons (attempts counted).
    const stillBad = failedIds.filter((id) => id !== ids.badJson && id !== ids.badType);
    expect(await outbox.outboxRetryFailed({ids: stillBad})).toBe(stillBad.length);
    expect(await drain(relay)).toBe(stillBad.length);
    const again = await biz.sql<{attempts: number; failed_at: Date | null}>('SELECT attempts, failed_at FROM task_outbox WHERE id IN (?)', [
      stillBad,
    ]);
    for (const r of again) expect(r).toMatchObject({attempts: 2, failed_at: expect.any(Date)});
  });

  it('a full batch loops at once: 1200 rows with batch 500 and a 5 s interval go through in one interval', async () => {
    const run = newRun('loop');
    await insertLedger(biz, run, 1200);
    const t0 = performance.now();
    const relay = await startRelay({...env.config, relayIntervalMs: 5000, relayBatchSize: 500}, env.rt.logger);
    started.push(relay);
    await eventually(async () => (await outboxCounts(biz, run)).sent === 1200, 20_000, 'all 1200 rows to be sent');
    const elapsed = performance.now() - t0;
    await relay.stop();
    // The relay's loops run concurrently; its counters must still add up.
    expect(relay.relay.stats).toMatchObject({relayed: 1200, published: 1200, failedRows: 0});
    console.log(`outbox: 1200 rows relayed in ${Math.round(elapsed)} ms (interval 5000 ms, batch 500)`);
    // Without the loop it would take 500 + 500 + 200 rows over three passes, i.e. at least 2 intervals (10 s).
    expect(elapsed).toBeLessThan(5000);
    const report = await waitForQuiescence(env, biz, run, 1200, 40_000);
    expect(report).toMatchObject({tasks: 1200, lost: 0, doubledTasks: 0, unexpected: 0, notSucceeded: 0, duplicated: 0});
  });

  it('sent rows are purged after the retention (purgeSent, and the relay itself), unsent and failed ones never', async () => {
    const run = newRun('purge');
    const probe = await manualRelay();
    await insertLedger(biz, run, 3);
    expect(await drain(probe)).toBe(3);
    // One row that can never be relayed (failed), one that stays unsent for now.
    await biz.sql('INSERT INTO task_outbox (type, payload) VALUES (?, ?)', ['Bad Type', JSON.stringify({run, k: 99})]);
    expect(await drain(probe)).toBe(1);
    await insertLedger(biz, run, 1, {from: 3});
    const failedBefore = (await outbox.outboxLag()).failed;
    expect(failedBefore).toBeGreaterThan(0);
    const sentTotal = async () =>
      Number((await biz.sql<{n: number}>('SELECT COUNT(*) AS n FROM task_outbox WHERE sent_at IS NOT NULL'))[0]!.n);
    const sentBefore = await sentTotal();

    // Three rows sent "two hours ago"; a one-hour retention purges exactly those, at most `limit` per call.
    await biz.sql(
      "UPDATE task_outbox SET sent_at = sent_at - INTERVAL 2 HOUR WHERE JSON_VALUE(payload, '$.run') = ? AND sent_at IS NOT NULL",
      [run],
    );
    expect(await outbox.outboxPurgeSent({olderThanMs: 3_600_000, limit: 2})).toBe(2);
    expect(await outbox.outboxPurgeSent({olderThanMs: 3_600_000, limit: 100})).toBe(1);
    expect(await outbox.outboxPurgeSent({olderThanMs: 3_600_000, limit: 100})).toBe(0);
    expect(await sentTotal()).toBe(sentBefore - 3);
    expect(await outboxCounts(biz, run)).toMatchObject({rows: 2, unsent: 1, failed: 1});

    // The relay purges by itself: a clock whose long timers (the 10 s lag and 60 s purge periods) run
    // 1000× faster makes the purge period pass at once; with a 1 ms retention every sent row goes,
    // unsent and failed rows stay.
    const fast: Clock = {...systemClock, setTimeout: (fn, ms) => systemClock.setTimeout(fn, ms >= 10_000 ? ms / 1000 : ms)};
    const r = await manualRelay({outboxRetentionMs: 1, relayIntervalMs: 20}, fast);
    r.start();
    await eventually(async () => r.stats.purged > 0 && (await sentTotal()) === 0, 10_000, 'the relay to purge the sent rows');
    await r.stop();
    expect(r.stats.lag).not.toBeNull();
    expect((await outbox.outboxLag()).failed).toBe(failedBefore);
    // The unsent row was relayed by that relay, then purged in a later pass.
    await eventually(async () => (await byKey(run)).get(3)?.state === 'succeeded', 20_000, 'the last row to run');
  });

  it('a row that ax’s database refuses is found by halving the batch and marked failed; the rest go through', async () => {
    const run = newRun('refused');
    const real = await env.store();
    // Stands for data the row checks miss and the database refuses (a column limit, a collation
    // quirk): the real store, except that any batch holding the task with k = 3 fails as MySQL would.
    const refusing: TaskStore = Object.create(real, {
      tasksInsert: {
        value: (p: TasksInsertParams) =>
          p.tasks.some((t) => (JSON.parse(t.payload) as {k?: number}).k === 3)
            ? Promise.reject(
                new AxError('invalid_input', "ax's database refused a task of the batch: Data too long", {
                  cause: Object.assign(new Error("Data too long for column 'dedup_key' at row 4"), {
                    code: 'ER_DATA_TOO_LONG',
                    sqlState: '22001',
                  }),
                }),
              )
            : real.tasksInsert(p),
      },
    });
    const relay = await manualRelay({}, systemClock, {store: refusing});
    await insertLedger(biz, run, 8);
    expect(await drain(relay)).toBe(8);
    expect(relay.stats).toMatchObject({failedRows: 1, relayed: 7});
    expect(await outboxCounts(biz, run)).toMatchObject({rows: 8, sent: 7, failed: 1, unsent: 0});
    const [bad] = await biz.sql<{last_error: string}>(
      "SELECT last_error FROM task_outbox WHERE JSON_VALUE(payload, '$.run') = ? AND failed_at IS NOT NULL",
      [run],
    );
    expect(bad!.last_error).toMatch(/ax's database refused the task: Data too long/);
    await eventually(
      async () => [...(await byKey(run)).values()].filter((t) => t.state === 'succeeded').length === 7,
      20_000,
      'the 7 to run',
    );

    // An error about the server, not the data (read-only, deadlock…), blames no row: the batch is
    // handed back whole, and relayed once the server is itself again.
    const run2 = newRun('refused-all');
    const refuseAll: TaskStore = Object.create(real, {
      tasksInsert: {
        value: () =>
          Promise.reject(Object.assign(new Error('Deadlock found when trying to get lock'), {code: 'ER_LOCK_DEADLOCK', sqlState: '40001'})),
      },
    });
    const stuck = await manualRelay({}, systemClock, {store: refuseAll});
    await insertLedger(biz, run2, 3);
    await expect(stuck.once()).rejects.toThrow(/Deadlock found/);
    expect(await outboxCounts(biz, run2)).toMatchObject({rows: 3, sent: 0, failed: 0, unsent: 3, claimedUnsent: 0});
    expect(await drain(relay)).toBe(3);
  });

  it('is not ready while its publishes fail, even when a pass finds nothing to do or a batch nothing to ring', async () => {
    const run = newRun('ready');
    const realBroker = await env.broker();
    let down = true;
    const flaky: Broker = Object.create(realBroker, {
      publish: {
        value: (m: Parameters<Broker['publish']>[0]) =>
          down ? Promise.reject(new AxError('unavailable', 'RabbitMQ down (test)')) : realBroker.publish(m),
      },
    });
    const r = createRelayService({
      ...env.rt,
      config: {...env.config, relayIntervalMs: 20},
      outbox,
      store: await env.store(),
      broker: flaky,
      id: `relay-test-${++relaySeq}`,
    });
    manual.push(r);
    let failedAt: number | null = null;
    let okAfterFailure = false;
    r.events.on('relay:pass', (e) => {
      if (e.error !== null) failedAt ??= e.at;
      else if (failedAt !== null) okAfterFailure = true;
    });
    await insertLedger(biz, run, 1);
    await r.start();
    // A loop fails to publish the row; a pass after that (another loop's, or one after the backoff)
    // succeeds, finding nothing or the row again.
    await eventually(async () => okAfterFailure, 10_000, 'a failed publish, then a pass that went through');
    expect(r.ready()).toBe(false);
    // The failed publish undid the task's mark: the scheduler rings it, a worker runs it, and a pass
    // sends the row with nothing left to ring. The relay has still published nothing: not ready.
    await eventually(async () => (await outboxCounts(biz, run)).sent === 1, 20_000, 'the row to be sent by a batch with nothing to ring');
    expect((await tasksOf(run))[0]).toMatchObject({state: 'succeeded'});
    expect(r.stats.published).toBe(0);
    expect(r.ready()).toBe(false);
    // RabbitMQ takes publishes again: with nothing of its own to ring, the relay learns it by ringing
    // the failed doorbell again (a stale one for the worker) within an interval.
    down = false;
    await eventually(async () => r.ready(), 5_000, 'ready once RabbitMQ takes publishes again');
    await r.stop();
  });

  it('the relay purges while a purge comes back full, so the purge keeps up with any rate', async () => {
    const run = newRun('purge-loop');
    await insertLedger(biz, run, 7);
    const probe = await manualRelay();
    expect(await drain(probe)).toBe(7);
    await biz.sql("UPDATE task_outbox SET sent_at = sent_at - INTERVAL 2 HOUR WHERE JSON_VALUE(payload, '$.run') = ?", [run]);
    // One purge pass (runOnce), with statements of 2 rows: it goes on while they come back full.
    const r = await manualRelay({outboxRetentionMs: 3_600_000, relayIntervalMs: 20}, systemClock, {purgeBatch: 2});
    await r.runOnce();
    expect((await outboxCounts(biz, run)).rows).toBe(0);
    await r.stop();
    expect(r.stats.purged).toBeGreaterThanOrEqual(7);
  });

  it('lag reports the unsent rows and the age of the oldest', async () => {
    const run = newRun('lag');
    const probe = await manualRelay();
    await drain(probe);
    const base = await outbox.outboxLag();
    expect(base).toMatchObject({unsent: 0, oldestAgeMs: null});
    const ins = (k: number, ageSec: number) =>
      biz.sql('INSERT INTO task_outbox (type, payload, created_at) VALUES (?, ?, UTC_TIMESTAMP(3) - INTERVAL ? SECOND)', [
        'test_noop',
        JSON.stringify({run, k}),
        ageSec,
      ]);
    await ins(0, 90);
    await ins(1, 30);
    await ins(2, 0);
    const lag = await outbox.outboxLag();
    expect(lag.unsent).toBe(3);
    expect(lag.failed).toBe(base.failed);
    expect(lag.oldestAgeMs).toBeGreaterThanOrEqual(90_000);
    expect(lag.oldestAgeMs).toBeLessThan(100_000);
    // A claimed row is still unsent.
    const claimed = await outbox.outboxClaim({owner: 'lag-probe', limit: 1, leaseMs: 60_000});
    expect(claimed).toHaveLength(1);
    expect((await outbox.outboxLag()).unsent).toBe(3);
    await outbox.outboxRelease({ids: claimed.map((c) => c.id), owner: 'lag-probe', error: 'test'});
    expect(await drain(probe)).toBe(3);
    expect(await outbox.outboxLag()).toMatchObject({unsent: 0, oldestAgeMs: null, failed: base.failed});
    const report = await waitForQuiescence(env, biz, run, 3, 20_000);
    expect(report).toMatchObject({lost: 0, duplicated: 0, notSucceeded: 0});
    expect(await checkInvariants(env, biz, run, 3)).toMatchObject({doubledTasks: 0, unexpected: 0});
  });

  it('carries the priority: enqueueInTransaction and plain SQL rows become tasks at their level; an unknown level writes nothing or fails the row', async () => {
    const run = newRun('prio');
    const conn = await biz.pool.getConnection();
    try {
      await conn.beginTransaction();
      await enqueueInTransaction(conn, [
        {type: 'test_noop', payload: {run, k: 0}, priority: 'high'},
        {type: 'test_noop', payload: {run, k: 1}},
      ]);
      await expect(enqueueInTransaction(conn, {type: 'test_noop', payload: {run, k: 9}, priority: 'urgent' as never})).rejects.toThrow(
        /priority "urgent" is not a level: use one of high, normal, low/,
      );
      await conn.commit();
    } finally {
      conn.release();
    }
    await biz.sql('INSERT INTO task_outbox (type, payload, priority) VALUES (?, ?, ?), (?, ?, ?)', [
      'test_noop',
      JSON.stringify({run, k: 2}),
      'low',
      'test_noop',
      JSON.stringify({run, k: 3}),
      'urgent',
    ]);
    expect(await drain(await manualRelay())).toBe(4);
    const failed = await biz.sql<{last_error: string}>(
      "SELECT last_error FROM task_outbox WHERE JSON_VALUE(payload, '$.run') = ? AND failed_at IS NOT NULL",
      [run],
    );
    expect(failed.map((f) => f.last_error)).toEqual([expect.stringMatching(/priority "urgent" is not a level/)]);
    const rows = await env.sql<{k: string; priority: string; state: string}>(
      "SELECT JSON_VALUE(payload, '$.k') AS k, priority, state FROM tasks WHERE JSON_VALUE(payload, '$.run') = ? ORDER BY k",
      [run],
    );
    expect(rows.map((r) => [r.k, r.priority])).toEqual([
      ['0', 'high'],
      ['1', 'normal'],
      ['2', 'low'],
    ]);
    // Rung at their levels: the worker (consuming every level) runs all three.
    const report = await waitForQuiescence(env, biz, run, 3, 20_000);
    expect(report).toMatchObject({lost: 0, duplicated: 0, notSucceeded: 0});
  });

  it('a task_outbox from before priorities keeps working until `ax migrate --outbox` adds the column', async () => {
    const run = newRun('old');
    await biz.sql('ALTER TABLE task_outbox DROP COLUMN priority');
    const old = await biz.outbox();
    try {
      await enqueueInTransaction(biz.pool, {type: 'test_noop', payload: {run, k: 0}});
      const relay = createRelayService({
        ...env.rt,
        config: env.config,
        outbox: old,
        store: await env.store(),
        broker: await env.broker(),
        id: 'relay-old',
      });
      manual.push(relay);
      expect(await drain(relay)).toBe(1);
      expect(await env.sql("SELECT priority FROM tasks WHERE JSON_VALUE(payload, '$.run') = ?", [run])).toEqual([{priority: 'normal'}]);
    } finally {
      await old.outboxCreateTable();
      await old.close();
    }
    const cols = await biz.sql(
      "SELECT COLUMN_NAME AS c FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'task_outbox' AND COLUMN_NAME = 'priority'",
    );
    expect(cols).toHaveLength(1);
  });
});
