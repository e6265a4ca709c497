/**
 * The producer's batching and flush rules on a fake clock, with in-memory stand-ins for its two
 * seams (the store's tasksInsert/doorbellsForget and the broker's publish): when a batch is
 * written, what it marks and rings, how it rides out an unavailable MySQL, and what flush() reports.
 * The real-server behaviour (one transaction, the doorbell on RabbitMQ) is test/integration/producer.test.ts.
 */
import {describe, expect, it} from 'vitest';
import {AxError} from '../../src/core/errors.js';
import {silentLogger} from '../../src/core/log.js';
import type {Broker, TaskMessage} from '../../src/core/broker/types.js';
import {Producer, type ProducerOptions} from '../../src/core/producer/producer.js';
import type {InsertResult, TasksInsertParams} from '../../src/core/store/types.js';
import {fakeClock} from '../helpers/clock.js';

const T0 = Date.parse('2026-03-01T12:00:00Z');

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (v: T) => void;
  reject: (e: unknown) => void;
}
function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return {promise, resolve, reject};
}

/** Every row of the batch new. */
const allNew = (p: TasksInsertParams): InsertResult => ({inserted: p.tasks.map((t) => t.id), existing: [], conflicts: []});

/**
 * A producer on a fake clock. `insert` decides each tasksInsert (default: every row new);
 * `publish` each publish (default: confirmed).
 */
function harness(
  o: {
    insert?: (p: TasksInsertParams, call: number) => Promise<InsertResult>;
    publish?: (m: TaskMessage[]) => Promise<void>;
  } & Partial<ProducerOptions> = {},
) {
  const clock = fakeClock(T0);
  const inserts: Array<{ids: string[]; marked: string[]; at: number}> = [];
  const published: string[][] = [];
  const forgotten: Array<Array<{id: string; fence: number}>> = [];
  const {insert, publish, ...rest} = o;
  const store: ProducerOptions['store'] = {
    tasksInsert: (p) => {
      inserts.push({ids: p.tasks.map((t) => t.id), marked: [...(p.markPublished ?? [])], at: clock.now()});
      return insert ? insert(p, inserts.length) : Promise.resolve(allNew(p));
    },
    doorbellsForget: (p) => {
      forgotten.push(p.rung);
      return Promise.resolve();
    },
  };
  const broker = {
    publish: (m: TaskMessage[]) => {
      published.push(m.map((x) => x.id));
      return publish ? publish(m) : Promise.resolve();
    },
  } as unknown as Broker;
  const producer = new Producer({
    store,
    broker,
    clock,
    random: () => 0.5,
    logger: silentLogger,
    defaults: {maxRetries: 3, payloadLimitBytes: 65_536, cell: 'default'},
    batchSize: 4,
    flushMs: 1000,
    bufferLimit: 10,
    actor: 'test:1',
    ...rest,
  });
  return {clock, producer, inserts, published, forgotten};
}

/** Lets pending promise callbacks run (the fake clock moves no time). */
const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

/** A tasksInsert that waits for the test: `gates[i]` settles the i-th call. */
function gatedInsert(): {gates: Array<Deferred<InsertResult>>; insert: (p: TasksInsertParams) => Promise<InsertResult>} {
  const gates: Array<Deferred<InsertResult>> = [];
  return {
    gates,
    insert: () => {
      const d = deferred<InsertResult>();
      gates.push(d);
      return d.promise;
    },
  };
}

describe('producer group commit', () => {
  it('writes a task at once (at the end of the turn) when no insert is in flight, not after flushMs', async () => {
    const h = harness();
    const a = await h.producer.submit({type: 'order_notify'});
    await settle();
    expect(h.inserts).toEqual([{ids: [a], marked: [a], at: T0}]);
    expect(h.published).toEqual([[a]]);
    expect(h.producer.pending).toBe(0);
    // Nothing is left armed: the ceiling timer went with the buffer.
    expect(h.clock.pending()).toBe(0);
  });

  it('tasks submitted in the same turn share one batch', async () => {
    const h = harness();
    const ids = await Promise.all([1, 2, 3].map(() => h.producer.submit({type: 'order_notify'})));
    await settle();
    expect(h.inserts.map((i) => i.ids)).toEqual([ids]);
  });

  it('tasks submitted while an insert is in flight form the next batch, written as soon as it commits (not after its publish)', async () => {
    const g = gatedInsert();
    const publishGate = deferred<void>();
    const h = harness({bufferLimit: 100, insert: g.insert, publish: () => publishGate.promise});
    const a = await h.producer.submit({type: 'order_notify'});
    await settle();
    const bc = [await h.producer.submit({type: 'order_notify'}), await h.producer.submit({type: 'order_notify'})];
    await settle();
    expect(h.inserts.map((i) => i.ids)).toEqual([[a]]);
    await h.clock.advanceAsync(500);
    expect(h.inserts).toHaveLength(1);
    g.gates[0]!.resolve(allNew({tasks: [{id: a}]} as TasksInsertParams));
    await settle();
    // a is publishing (its confirm is held), and b, c are being inserted.
    expect(h.inserts.map((i) => i.ids)).toEqual([[a], bc]);
    expect(h.published).toEqual([[a]]);
    // Above batchSize (4), what waited goes as full batches.
    const more = [];
    for (let i = 0; i < 6; i++) more.push(await h.producer.submit({type: 'order_notify'}));
    await settle();
    expect(h.inserts.map((i) => i.ids)).toEqual([[a], bc, more.slice(0, 4)]);
    publishGate.resolve();
    g.gates[1]!.resolve(allNew({tasks: bc.map((id) => ({id}))} as TasksInsertParams));
    g.gates[2]!.resolve(allNew({tasks: more.slice(0, 4).map((id) => ({id}))} as TasksInsertParams));
    await settle();
    expect(h.inserts.map((i) => i.ids)).toEqual([[a], bc, more.slice(0, 4), more.slice(4)]);
  });

  it('flushMs is the ceiling: a task waits no longer than that behind a stuck insert', async () => {
    const g = gatedInsert();
    const h = harness({insert: g.insert});
    await h.producer.submit({type: 'order_notify'});
    await settle();
    const b = await h.producer.submit({type: 'order_notify'});
    await h.clock.advanceAsync(999);
    expect(h.inserts).toHaveLength(1);
    await h.clock.advanceAsync(1);
    expect(h.inserts.map((i) => i.ids)).toEqual([expect.any(Array), [b]]);
    expect(h.inserts[1]!.at).toBe(T0 + 1000);
  });

  it('with lingerMs, a partial batch waits that long for company before it is written', async () => {
    const h = harness({lingerMs: 50});
    const a = await h.producer.submit({type: 'order_notify'});
    await h.clock.advanceAsync(30);
    const b = await h.producer.submit({type: 'order_notify'});
    await h.clock.advanceAsync(19);
    expect(h.inserts).toEqual([]);
    await h.clock.advanceAsync(1);
    expect(h.inserts).toEqual([{ids: [a, b], marked: [a, b], at: T0 + 50}]);
    // The next task waits its own linger.
    const c = await h.producer.submit({type: 'order_notify'});
    await h.clock.advanceAsync(49);
    expect(h.inserts).toHaveLength(1);
    await h.clock.advanceAsync(1);
    expect(h.inserts[1]).toEqual({ids: [c], marked: [c], at: T0 + 100});
    expect(h.clock.pending()).toBe(0);
  });

  it('writes a full batch at once even within its linger', async () => {
    const h = harness({lingerMs: 50});
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await h.producer.submit({type: 'order_notify'}));
    await settle();
    expect(h.inserts.map((i) => i.ids)).toEqual([ids.slice(0, 4)]);
    await h.clock.advanceAsync(50);
    expect(h.inserts.map((i) => i.ids)).toEqual([ids.slice(0, 4), ids.slice(4)]);
  });

  it('flush() writes what was submitted before it at once and reports it; a second flush reports nothing new', async () => {
    const h = harness();
    const [a, b] = await Promise.all([h.producer.submit({type: 'order_notify'}), h.producer.submit({type: 'order_notify', delay: '5m'})]);
    expect(await h.producer.flush()).toEqual({inserted: 2, existing: 0, unpublished: 0, conflicts: []});
    expect(h.inserts).toEqual([{ids: [a, b], marked: [a], at: T0}]);
    // Only the task due now is rung; the delayed one is the scheduler's.
    expect(h.published).toEqual([[a]]);
    expect(await h.producer.flush()).toEqual({inserted: 0, existing: 0, unpublished: 0, conflicts: []});
  });

  it('keeps at most maxConcurrentBatches writes in flight; the rest wait in the buffer', async () => {
    const gates: Array<Deferred<InsertResult>> = [];
    const h = harness({
      batchSize: 2,
      bufferLimit: 100,
      maxConcurrentBatches: 2,
      insert: () => {
        const d = deferred<InsertResult>();
        gates.push(d);
        return d.promise;
      },
    });
    await Promise.all(Array.from({length: 8}, () => h.producer.submit({type: 'order_notify'})));
    await settle();
    expect(h.inserts).toHaveLength(2);
    expect(h.producer.pending).toBe(8);
    const flushed = h.producer.flush();
    gates[0]!.resolve({inserted: h.inserts[0]!.ids, existing: [], conflicts: []});
    await settle();
    expect(h.inserts).toHaveLength(3);
    for (let i = 1; i < 4; i++) {
      gates[i]!.resolve({inserted: h.inserts[i]!.ids, existing: [], conflicts: []});
      await settle();
    }
    expect(await flushed).toMatchObject({inserted: 8});
    expect(h.inserts).toHaveLength(4);
  });

  it('makes submit() wait while bufferLimit tasks are buffered, and lets it in once a batch leaves the buffer', async () => {
    const gate = deferred<InsertResult>();
    const h = harness({batchSize: 3, bufferLimit: 3, maxConcurrentBatches: 1, insert: () => gate.promise});
    await Promise.all([1, 2, 3].map(() => h.producer.submit({type: 'order_notify'})));
    await settle(); // the first batch leaves the buffer for the store
    for (let i = 0; i < 3; i++) await h.producer.submit({type: 'order_notify'});
    let admitted = false;
    const seventh = h.producer.submit({type: 'order_notify'}).then(() => (admitted = true));
    await settle();
    expect(admitted).toBe(false);
    gate.resolve({inserted: h.inserts[0]!.ids, existing: [], conflicts: []});
    await seventh;
    expect(admitted).toBe(true);
  });
});

describe('producer failures', () => {
  it('keeps a batch buffered while MySQL is unavailable, retrying with backoff on the clock, and rings it once written', async () => {
    const h = harness({
      insert: (p, call) => (call <= 2 ? Promise.reject(new AxError('unavailable', 'ECONNREFUSED')) : Promise.resolve(allNew(p))),
    });
    const a = await h.producer.submit({type: 'order_notify'});
    const flushed = h.producer.flush();
    await settle();
    expect(h.inserts).toHaveLength(1);
    // Backoff: min(10 s, 100 ms × 2^attempt) × (0.5 + random) with random 0.5: 200 ms, then 400 ms.
    await h.clock.advanceAsync(199);
    expect(h.inserts).toHaveLength(1);
    expect(h.producer.pending).toBe(1);
    await h.clock.advanceAsync(1);
    expect(h.inserts).toHaveLength(2);
    await h.clock.advanceAsync(399);
    expect(h.inserts).toHaveLength(2);
    await h.clock.advanceAsync(1);
    expect(await flushed).toMatchObject({inserted: 1, unpublished: 0});
    // Decided again before each attempt: still due, so marked and rung.
    expect(h.inserts[2]).toEqual({ids: [a], marked: [a], at: T0 + 600});
    expect(h.published).toEqual([[a]]);
  });

  it('after a long outage it tries again within 6 s of the last try, whatever the jitter (it notices the recovery soon)', async () => {
    let down = true;
    const h = harness({
      random: () => 0.999,
      insert: (p) => (down ? Promise.reject(new AxError('unavailable', 'ECONNREFUSED')) : Promise.resolve(allNew(p))),
    });
    await h.producer.submit({type: 'order_notify'});
    const flushed = h.producer.flush();
    await settle();
    // Two minutes of outage: the backoff is at its cap long before.
    await h.clock.advanceAsync(120_000);
    const tries = h.inserts.map((i) => i.at);
    const gaps = tries.slice(1).map((t, i) => t - tries[i]!);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(6000);
    expect(gaps.at(-1)).toBeGreaterThan(5000); // at the cap: ~4 s × 1.5
    down = false;
    const recoveredAt = h.clock.now();
    await h.clock.advanceAsync(6000);
    expect(await flushed).toMatchObject({inserted: 1});
    expect(h.inserts.at(-1)!.at - recoveredAt).toBeLessThanOrEqual(6000);
  });

  it('while a batch retries an outage, later submits wait in the buffer and go as the next batch once it commits', async () => {
    const h = harness({
      bufferLimit: 100,
      insert: (p, call) => (call <= 2 ? Promise.reject(new AxError('unavailable', 'ECONNREFUSED')) : Promise.resolve(allNew(p))),
    });
    const a = await h.producer.submit({type: 'order_notify'});
    await settle();
    const later = await Promise.all([1, 2].map(() => h.producer.submit({type: 'order_notify'})));
    // Before the ceiling (1 s) nothing else is sent while the first batch retries.
    await h.clock.advanceAsync(599);
    expect(h.inserts.map((i) => i.ids)).toEqual([[a], [a]]);
    // The third attempt commits, and what waited goes right behind it.
    await h.clock.advanceAsync(1);
    expect(h.inserts.map((i) => i.ids)).toEqual([[a], [a], [a], later]);
    expect(await h.producer.flush()).toMatchObject({inserted: 3, unpublished: 0});
  });

  it('after a failed attempt, rings its own rows found existing and unclaimed (that attempt may have committed)', async () => {
    const h = harness({
      insert: (p, call) =>
        call === 1
          ? Promise.reject(new AxError('unavailable', 'connection lost around COMMIT'))
          : Promise.resolve({
              inserted: [],
              existing: p.tasks.map((t, i) => ({id: t.id, existingId: t.id, state: 'submitted' as const, fence: i === 0 ? 0 : 1})),
              conflicts: [],
            }),
    });
    // The second one is claimed meanwhile (fence 1): not rung again.
    const [a] = await Promise.all([h.producer.submit({type: 'order_notify'}), h.producer.submit({type: 'order_notify'})]);
    const flushed = h.producer.flush();
    await h.clock.advanceAsync(200);
    expect(await flushed).toMatchObject({inserted: 0, existing: 2});
    expect(h.published).toEqual([[a]]);
  });

  it('gives up after giveUpAfterMs: flush() rejects unavailable naming the tasks', async () => {
    const h = harness({giveUpAfterMs: 1000, insert: () => Promise.reject(new AxError('unavailable', 'ECONNREFUSED'))});
    const a = await h.producer.submit({type: 'order_notify'});
    const flushed = h.producer.flush();
    const failure = flushed.catch((e: unknown) => e);
    for (let i = 0; i < 10; i++) await h.clock.advanceAsync(500);
    const e = await failure;
    expect(e).toBeInstanceOf(AxError);
    expect(e).toMatchObject({code: 'unavailable', message: '1 task(s) could not be written: ECONNREFUSED'});
    expect((e as AxError).details).toMatchObject({failures: [{ids: [a], code: 'unavailable'}]});
  });

  it('does not retry an error other than unavailable/timeout: flush() rejects internal, and the other batches are written', async () => {
    const h = harness({
      batchSize: 1,
      insert: (p, call) => (call === 1 ? Promise.reject(new Error('Data too long')) : Promise.resolve(allNew(p))),
    });
    await h.producer.submit({type: 'order_notify'});
    const b = await h.producer.submit({type: 'order_notify'});
    await expect(h.producer.flush()).rejects.toMatchObject({code: 'internal'});
    expect(h.inserts).toHaveLength(2);
    expect(h.published).toEqual([[b]]);
  });

  it('rejects flush() with conflict for tasks whose id exists with other content', async () => {
    const h = harness({
      insert: (p) =>
        Promise.resolve({
          inserted: [],
          existing: [],
          conflicts: [{id: p.tasks[0]!.id, existingId: p.tasks[0]!.id, reason: 'other payload'}],
        }),
    });
    await h.producer.submit({type: 'order_notify', id: '01900000-0000-7000-8000-000000000001'});
    await expect(h.producer.flush()).rejects.toMatchObject({code: 'conflict', message: '1 task(s) refused: other payload'});
    expect(h.published).toEqual([]);
  });

  it('undoes the mark (fence 0) of tasks whose publish failed, and counts them unpublished', async () => {
    const h = harness({publish: () => Promise.reject(new AxError('timeout', 'no confirm'))});
    const a = await h.producer.submit({type: 'order_notify'});
    expect(await h.producer.flush()).toMatchObject({inserted: 1, unpublished: 1});
    expect(h.forgotten).toEqual([[{id: a, fence: 0}]]);
  });
});

describe('producer close', () => {
  it('flushes, cancels its timers and refuses later submits', async () => {
    const h = harness({lingerMs: 50});
    await h.producer.submit({type: 'order_notify'});
    expect(h.clock.pending()).toBe(2); // the linger and the ceiling
    expect(await h.producer.close()).toMatchObject({inserted: 1});
    expect(h.clock.pending()).toBe(0);
    await expect(h.producer.submit({type: 'order_notify'})).rejects.toMatchObject({code: 'closed'});
  });

  it('refuses an invalid task at once, buffering nothing', async () => {
    const h = harness();
    await expect(h.producer.submit({type: 'order_notify', dealy: 5} as never)).rejects.toMatchObject({code: 'invalid_input'});
    expect(h.producer.pending).toBe(0);
    expect(h.clock.pending()).toBe(0);
  });
});
