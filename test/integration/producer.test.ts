/**
 * The buffered producer on the real MySQL store and RabbitMQ. Some tests wrap the real store or
 * broker to count or hold calls (the data still goes to the real servers).
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {type Producer, type ProducerOptions} from '../../src/core/producer/producer.js';
import {AxError, isAxError} from '../../src/core/errors.js';
import {reconcile} from '../../src/core/reconcile/reconcile.js';
import type {Broker} from '../../src/core/broker/types.js';
import type {TaskStore, TasksInsertParams} from '../../src/core/store/types.js';
import {createTestEnv, takeRung, type TestEnv} from '../helpers/env.js';
import {testProducer} from '../helpers/producer.js';

describe('producer', () => {
  let env: TestEnv;
  let store: TaskStore;
  let broker: Broker;

  const producer = (o: Partial<ProducerOptions> = {}): Producer => testProducer(env, store, broker, o);

  const count = async (where = '1=1', params: unknown[] = []) =>
    Number((await env.sql<{n: number}>(`SELECT COUNT(*) AS n FROM tasks WHERE ${where}`, params))[0]!.n);

  beforeAll(async () => {
    env = await createTestEnv();
    store = await env.store();
    broker = await env.broker();
  });
  afterAll(async () => env?.dispose());

  it('writes 500-task batches, publishes the due ones and marks them published', async () => {
    const sizes: number[] = [];
    const counting: TaskStore = Object.create(store, {
      tasksInsert: {value: (p: TasksInsertParams) => (sizes.push(p.tasks.length), store.tasksInsert(p))},
    });
    const p = producer({store: counting});
    const ids = await Promise.all(Array.from({length: 1200}, (_, i) => p.submit({type: 'order_notify', payload: {i}})));
    const report = await p.flush();
    expect(report).toMatchObject({inserted: 1200, existing: 0, unpublished: 0, conflicts: []});
    expect(sizes).toEqual([500, 500, 200]);
    expect(await count('id IN (?) AND published_at IS NOT NULL', [ids])).toBe(1200);
    // Every task rung once, 50 to a message (AX_DOORBELL_BATCH's default) within each batch of 500.
    const rung = await takeRung(env, 'io');
    expect(rung.ids.sort()).toEqual([...ids].sort());
    expect(rung.messages).toBe(10 + 10 + 4);
  });

  it('writes a lone task at once (group commit), without flush() and long before the ceiling', async () => {
    let written!: () => void;
    const done = new Promise<void>((r) => (written = r));
    const watching: TaskStore = Object.create(store, {
      tasksInsert: {
        value: async (p: TasksInsertParams) => {
          const r = await store.tasksInsert(p);
          written();
          return r;
        },
      },
    });
    const p = producer({store: watching, flushMs: 3_600_000});
    const id = await p.submit({type: 'order_notify', payload: {lone: true}});
    await done;
    expect(await count('id = ?', [id])).toBe(1);
    await p.close();
  });

  it('applies backpressure when the buffer is full instead of dropping, then writes everything', async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const held: TaskStore = Object.create(store, {
      tasksInsert: {value: async (p: TasksInsertParams) => (await gate, store.tasksInsert(p))},
    });
    const p = producer({store: held, batchSize: 5, bufferLimit: 10, maxConcurrentBatches: 2});
    let resolved = 0;
    const subs = Array.from({length: 40}, (_, i) => p.submit({type: 'order_notify', payload: {bp: i}}).then((id) => (resolved++, id)));
    await new Promise((r) => setImmediate(r));
    // 2 batches of 5 are being written (held), 10 wait in the buffer: the other 20 submits wait.
    expect(resolved).toBe(20);
    expect(p.pending).toBe(20);
    open();
    const ids = await Promise.all(subs);
    await p.flush();
    expect(await count('id IN (?)', [ids])).toBe(40);
  });

  it('retries a batch while MySQL is unavailable and loses nothing', async () => {
    let failures = 2;
    const flaky: TaskStore = Object.create(store, {
      tasksInsert: {
        value: (p: TasksInsertParams) =>
          failures-- > 0 ? Promise.reject(new AxError('unavailable', 'MySQL down (test)')) : store.tasksInsert(p),
      },
    });
    const p = producer({store: flaky});
    const ids = await Promise.all(Array.from({length: 20}, (_, i) => p.submit({type: 'order_notify', payload: {flaky: i}})));
    expect((await p.flush()).inserted).toBe(20);
    expect(failures).toBe(-1);
    expect(await count('id IN (?)', [ids])).toBe(20);
  });

  it('returns the existing task for the same content and reports a conflict for other content', async () => {
    const p = producer();
    const id = await p.submit({type: 'order_notify', payload: {v: 1}, dedupKey: 'order-42'});
    await p.flush();
    expect(await p.submit({type: 'order_notify', payload: {v: 1}, dedupKey: 'order-42'})).toBe(id);
    expect(await p.flush()).toMatchObject({inserted: 0, existing: 1});
    await p.submit({type: 'order_notify', payload: {v: 2}, dedupKey: 'order-42'});
    const ok = await p.submit({type: 'order_notify', payload: {v: 3}});
    const err = await p.flush().catch((e: unknown) => e);
    expect(isAxError(err, 'conflict')).toBe(true);
    expect((err as AxError).message).toMatch(/dedup key "order-42" already exists with different content/);
    expect((await store.tasksGet({id}))?.payload).toEqual({v: 1});
    expect(await count('id = ?', [ok])).toBe(1);
  });

  it('emits task:submitted per type for new tasks only, and doorbell:published for what it rang', async () => {
    const p = producer();
    const submitted: Array<{type: string; count: number}> = [];
    const rung: string[] = [];
    p.events.on('task:submitted', (e) => submitted.push(e));
    p.events.on('doorbell:published', (e) => e.by === 'producer' && rung.push(...e.ids));
    const dup = await p.submit({type: 'order_notify', payload: {ev: 0}, dedupKey: 'events-0'});
    await p.flush();
    // Submitted in one turn: one batch (group commit writes a lone submit at once).
    const ids = await Promise.all([
      p.submit({type: 'order_notify', payload: {ev: 1}}),
      p.submit({type: 'order_notify', payload: {ev: 2}}),
      p.submit({type: 'report_build', payload: {ev: 3}, pool: 'cpu'}),
      p.submit({type: 'user_register_credit', payload: {ev: 4}, delay: 60_000}),
    ]);
    expect(await p.submit({type: 'order_notify', payload: {ev: 0}, dedupKey: 'events-0'})).toBe(dup); // exists: not counted
    await p.flush();
    expect(submitted).toEqual([
      {type: 'order_notify', count: 1},
      {type: 'order_notify', count: 2},
      {type: 'report_build', count: 1},
      {type: 'user_register_credit', count: 1},
    ]);
    // The delayed one is the scheduler's to ring.
    expect(rung.sort()).toEqual([dup, ...ids.slice(0, 3)].sort());
    // Leave the queues as the other tests expect them.
    await takeRung(env, 'io');
    await takeRung(env, 'cpu');
  });

  it('publishes the due doorbells once the rows are written, before the COMMIT, and rings each task once', async () => {
    let inHook = false;
    const publishedInHook: boolean[] = [];
    const hooked: TaskStore = Object.create(store, {
      tasksInsert: {
        value: (p: TasksInsertParams) =>
          store.tasksInsert({
            ...p,
            ...(p.beforeCommit
              ? {
                  beforeCommit: (r: Parameters<NonNullable<TasksInsertParams['beforeCommit']>>[0]) => {
                    inHook = true;
                    try {
                      p.beforeCommit!(r);
                    } finally {
                      inHook = false;
                    }
                  },
                }
              : {}),
          }),
      },
    });
    const spy: Broker = Object.create(broker, {
      publish: {value: (m: Parameters<Broker['publish']>[0]) => (publishedInHook.push(inHook), broker.publish(m))},
    });
    const p = producer({store: hooked, broker: spy});
    const ids = await Promise.all(Array.from({length: 30}, (_, i) => p.submit({type: 'order_notify', payload: {early: i}})));
    const later = await p.submit({type: 'order_notify', payload: {early: 'later'}, delay: 60_000});
    expect(await p.flush()).toMatchObject({inserted: 31, unpublished: 0});
    expect(publishedInHook.length).toBeGreaterThan(0);
    expect(publishedInHook.every(Boolean)).toBe(true);
    const rung = await takeRung(env, 'io');
    expect(rung.ids.sort()).toEqual([...ids].sort());
    expect(await count('id = ? AND published_at IS NULL', [later])).toBe(1);
  });

  it('keeps tasks whose doorbell failed; the reconciler rings for them', async () => {
    const down: Broker = Object.create(broker, {
      publish: {value: () => Promise.reject(new AxError('unavailable', 'RabbitMQ down (test)'))},
    });
    const p = producer({broker: down});
    const ids = await Promise.all(Array.from({length: 7}, (_, i) => p.submit({type: 'report_build', payload: {i}, pool: 'cpu'})));
    expect((await p.flush()).unpublished).toBe(7);
    expect(await count('id IN (?) AND published_at IS NULL', [ids])).toBe(7);
    const opts = {
      ...env.rt,
      store,
      broker,
      backoff: {baseMs: 1000, maxMs: 60_000},
      limit: 100,
      rate: 1000,
      republishAfterMs: 60_000,
      actor: 'test',
    };
    const dry = await reconcile({...opts, dryRun: true});
    expect(dry.undispatched.ids).toEqual(expect.arrayContaining(ids));
    expect(await count('id IN (?) AND published_at IS NULL', [ids])).toBe(7);
    const real = await reconcile({...opts, dryRun: false});
    expect(real.undispatched.republished).toBeGreaterThanOrEqual(7);
    expect(await count('id IN (?) AND published_at IS NOT NULL', [ids])).toBe(7);
    expect((await takeRung(env, 'cpu')).ids.sort()).toEqual([...ids].sort());
  });

  it('refuses bad input at once and buffers nothing; refuses submits after close', async () => {
    const p = producer();
    await expect(p.submit({type: 'Bad-Type'})).rejects.toMatchObject({code: 'invalid_input'});
    await expect(p.submit({type: 'order_notify', payload: [] as never})).rejects.toMatchObject({code: 'invalid_input'});
    await expect(p.submit({type: 'order_notify', delay: -5})).rejects.toMatchObject({code: 'invalid_input'});
    expect(p.pending).toBe(0);
    await p.close();
    await expect(p.submit({type: 'order_notify'})).rejects.toMatchObject({code: 'closed'});
  });
});
