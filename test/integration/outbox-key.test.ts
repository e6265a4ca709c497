/**
 * The outbox's task_key column against the real servers: a row's key (written by
 * enqueueInTransaction or a plain INSERT) is the key of its task in ax; a bad key fails that row
 * alone, with the reason; a task_outbox from before the column keeps working (read as NULL) until
 * `ax migrate --outbox` adds it. Relay passes are driven by hand (`once()`); no worker runs.
 */
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest';
import {enqueueInTransaction} from '../../src/core/outbox/enqueue.js';
import type {Relay} from '../../src/core/outbox/relay.js';
import {createRelayService} from '../../src/core/outbox/service.js';
import type {MysqlOutboxStore} from '../../src/core/store/mysql/outbox.js';
import {createTestEnv, type TestEnv} from '../helpers/env.js';
import {type BusinessDb, createBusinessDb, newRun} from '../helpers/outbox.js';

describe('outbox task_key', () => {
  let env: TestEnv;
  let biz: BusinessDb;
  const relays: Relay[] = [];
  let seq = 0;

  const relayOn = async (outbox: MysqlOutboxStore): Promise<Relay> => {
    const r = createRelayService({
      ...env.rt,
      config: env.config,
      outbox,
      store: await env.store(),
      broker: await env.broker(),
      id: `relay-key-${++seq}`,
    });
    relays.push(r);
    return r;
  };
  const drain = async (r: Relay): Promise<number> => {
    let total = 0;
    for (let n = await r.once(); n > 0; n = await r.once()) total += n;
    return total;
  };
  const tasksOf = (run: string) =>
    env.sql<{k: string; task_key: string | null}>(
      "SELECT JSON_VALUE(payload, '$.k') AS k, task_key FROM tasks WHERE JSON_VALUE(payload, '$.run') = ? ORDER BY k",
      [run],
    );
  const failedOf = (run: string) =>
    biz.sql<{k: string; last_error: string}>(
      "SELECT JSON_VALUE(payload, '$.k') AS k, last_error FROM task_outbox WHERE JSON_VALUE(payload, '$.run') = ? AND failed_at IS NOT NULL ORDER BY k",
      [run],
    );

  beforeAll(async () => {
    biz = await createBusinessDb({migrate: true});
    env = await createTestEnv({outboxMysqlUrl: biz.url});
  });
  afterEach(async () => {
    for (const r of relays.splice(0)) await r.stop();
  });
  afterAll(async () => {
    await env?.dispose();
    await biz?.dispose();
  });

  it('a row with task_key becomes a task with that key; a bad key fails only its row, with the reason', async () => {
    const run = newRun('key');
    const conn = await biz.pool.getConnection();
    try {
      await conn.beginTransaction();
      await enqueueInTransaction(conn, [
        {type: 'test_noop', payload: {run, k: 0}, key: 'tenant:42'},
        {type: 'test_noop', payload: {run, k: 1}},
      ]);
      await expect(enqueueInTransaction(conn, {type: 'test_noop', payload: {run, k: 9}, key: 'tenant:42 '})).rejects.toThrow(
        /key must not begin or end with whitespace/,
      );
      await conn.commit();
    } finally {
      conn.release();
    }
    // A producer in another language: a plain INSERT, good and bad keys.
    await biz.sql('INSERT INTO task_outbox (type, payload, task_key) VALUES (?, ?, ?), (?, ?, ?), (?, ?, ?), (?, ?, ?)', [
      'test_noop',
      JSON.stringify({run, k: 2}),
      'customer:Müller',
      'test_noop',
      JSON.stringify({run, k: 3}),
      'tenant\t7',
      'test_noop',
      JSON.stringify({run, k: 4}),
      ' tenant:7',
      'test_noop',
      JSON.stringify({run, k: 5}),
      '',
    ]);
    const outbox = await biz.outbox();
    expect(await drain(await relayOn(outbox))).toBe(6);
    expect(await tasksOf(run)).toEqual([
      {k: '0', task_key: 'tenant:42'},
      {k: '1', task_key: null},
      {k: '2', task_key: 'customer:Müller'},
    ]);
    expect(await failedOf(run)).toEqual([
      {k: '3', last_error: expect.stringMatching(/task_key must not contain control characters/)},
      {k: '4', last_error: expect.stringMatching(/task_key must not begin or end with whitespace/)},
      {k: '5', last_error: expect.stringMatching(/task_key must be a string of 1 to 128 characters/)},
    ]);
    // The good rows are sent; nothing is left pending.
    const [left] = await biz.sql<{n: number}>(
      "SELECT COUNT(*) AS n FROM task_outbox WHERE JSON_VALUE(payload, '$.run') = ? AND sent_at IS NULL AND failed_at IS NULL",
      [run],
    );
    expect(Number(left!.n)).toBe(0);
  });

  it('a task_outbox from before task_key keeps working (no key) until `ax migrate --outbox` adds the column', async () => {
    const run = newRun('oldkey');
    await biz.sql('ALTER TABLE task_outbox DROP COLUMN task_key');
    const old = await biz.outbox();
    try {
      // A producer that sets no key writes no task_key column: the old table takes it.
      await enqueueInTransaction(biz.pool, {type: 'test_noop', payload: {run, k: 0}});
      expect(await drain(await relayOn(old))).toBe(1);
      expect(await tasksOf(run)).toEqual([{k: '0', task_key: null}]);
    } finally {
      await old.outboxCreateTable();
    }
    const cols = await biz.sql(
      "SELECT COLUMN_NAME AS c FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'task_outbox' AND COLUMN_NAME = 'task_key'",
    );
    expect(cols).toHaveLength(1);
    // After the migration the same store reads the column.
    await enqueueInTransaction(biz.pool, {type: 'test_noop', payload: {run, k: 1}, key: 'tenant:1'});
    expect(await drain(await relayOn(old))).toBe(1);
    expect(await tasksOf(run)).toEqual([
      {k: '0', task_key: null},
      {k: '1', task_key: 'tenant:1'},
    ]);
  });
});
