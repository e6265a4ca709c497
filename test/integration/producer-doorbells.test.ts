/**
 * The producer's "published" mark, written by its INSERT for the tasks it rings (no UPDATE of its
 * own), and the two ways a doorbell can fail to follow it, on the real MariaDB and RabbitMQ:
 * - the publish fails: the mark is undone (one guarded doorbellsForget) and the scheduler rings
 *   the rows at its next load;
 * - the producer dies between its commit and its publish: the rows stay marked, nobody rings them
 *   until the mark is older than republishAfter, then the scheduler's reconciler does.
 */
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest';
import {type Producer, type ProducerOptions} from '../../src/core/producer/producer.js';
import {AxError} from '../../src/core/errors.js';
import {createSchedulerService} from '../../src/core/scheduler/service.js';
import type {Scheduler} from '../../src/core/scheduler/scheduler.js';
import type {Broker} from '../../src/core/broker/types.js';
import type {DoorbellsMarkParams, TaskStore} from '../../src/core/store/types.js';
import type {AxConfig} from '../../src/core/config/config.js';
import {createTestEnv, takeRung, type TestEnv} from '../helpers/env.js';
import {testProducer} from '../helpers/producer.js';

/** `p`, or a failure naming `what` after `ms` (a bound, not a synchronisation). */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)));
  try {
    return await Promise.race([p, bound]);
  } finally {
    clearTimeout(timer);
  }
}

describe('producer doorbells', () => {
  let env: TestEnv;
  let store: TaskStore;
  let broker: Broker;
  const schedulers: Scheduler[] = [];
  /** Store calls of the doorbell methods, by method. */
  const calls: Record<string, DoorbellsMarkParams[]> = {};
  let counting: TaskStore;

  const producer = (o: Partial<ProducerOptions> = {}): Producer => testProducer(env, counting, broker, o);
  /** A scheduler whose own loops stay quiet during a test (long periods): the test drives it. */
  const scheduler = async (id: string, config: Partial<AxConfig> = {}): Promise<Scheduler> => {
    const s = createSchedulerService({
      ...env.rt,
      config: {...env.config, schedulerLoadEveryMs: 600_000, reconcileEveryMs: 600_000, ...config},
      store,
      broker,
      id,
    });
    schedulers.push(s);
    return s;
  };
  const rows = (ids: string[]) =>
    env.sql<{id: string; published_at: Date | null; fence: number; state: string}>(
      'SELECT id, published_at, fence, state FROM tasks WHERE id IN (?)',
      [ids],
    );
  const submitCpu = (p: Producer, n: number, tag: string) =>
    Promise.all(Array.from({length: n}, (_, i) => p.submit({type: 'report_build', payload: {tag, i}, pool: 'cpu'})));

  beforeAll(async () => {
    env = await createTestEnv();
    store = await env.store();
    broker = await env.broker();
    const wrap = (m: 'doorbellsMark' | 'doorbellsForget') => ({
      value: (p: DoorbellsMarkParams) => ((calls[m] ??= []).push(p), store[m](p)),
    });
    counting = Object.create(store, {doorbellsMark: wrap('doorbellsMark'), doorbellsForget: wrap('doorbellsForget')});
  });
  afterEach(async () => {
    for (const s of schedulers.splice(0)) await s.stop();
    for (const k of Object.keys(calls)) delete calls[k];
    await takeRung(env, 'cpu');
    await takeRung(env, 'io');
  });
  afterAll(async () => env?.dispose());

  it('the INSERT marks the due rows it rings; delayed rows stay unmarked; no mark statement follows', async () => {
    const p = producer();
    const due = await submitCpu(p, 30, 'due');
    const later = await p.submit({type: 'report_build', payload: {tag: 'later'}, pool: 'cpu', delay: 60_000});
    expect(await p.flush()).toMatchObject({inserted: 31, unpublished: 0});
    const r = await rows([...due, later]);
    expect(
      r
        .filter((x) => x.published_at !== null)
        .map((x) => x.id)
        .sort(),
    ).toEqual([...due].sort());
    expect(r.find((x) => x.id === later)?.published_at).toBeNull();
    expect(calls).toEqual({});
    expect((await takeRung(env, 'cpu')).ids.sort()).toEqual([...due].sort());
  });

  it('a failed publish: the marks are undone in one statement and the scheduler rings the rows at its next load', async () => {
    const down: Broker = Object.create(broker, {
      publish: {value: () => Promise.reject(new AxError('unavailable', 'RabbitMQ down (test)'))},
    });
    const p = producer({broker: down});
    const ids = await submitCpu(p, 40, 'failed-publish');
    expect((await p.flush()).unpublished).toBe(40);
    expect(calls.doorbellsForget?.map((c) => c.rung.length)).toEqual([40]);
    expect(calls.doorbellsMark).toBeUndefined();
    // Unmarked, fence moved on: a late confirm of the failed publish could not mark them again.
    for (const r of await rows(ids)) expect(r).toMatchObject({published_at: null, fence: 1, state: 'submitted'});

    // Brand-new immediate rows, yet not left to the 2 s producer grace: the first load takes them.
    const s = await scheduler('sched-forgotten');
    const rung = new Set<string>();
    const all = new Promise<void>((resolve) =>
      s.events.on('doorbell:published', (e) => {
        if (e.by === 'scheduler') for (const id of e.ids) rung.add(id);
        if (ids.every((id) => rung.has(id))) resolve();
      }),
    );
    await s.start();
    await within(all, 10_000, 'the scheduler to ring the forgotten rows');
    expect((await takeRung(env, 'cpu')).ids.sort()).toEqual([...ids].sort());
    for (const r of await rows(ids)) expect(r.published_at).toBeInstanceOf(Date);
  });

  it('a producer that dies between its commit and its publish: the rows stay marked, and the reconciler rings them after republishAfter', async () => {
    let reached!: () => void;
    const atPublish = new Promise<void>((r) => (reached = r));
    // The process "dies" here: the rows are committed, marked, and the publish never happens.
    const dying: Broker = Object.create(broker, {
      publish: {value: () => (reached(), new Promise<void>(() => undefined))},
    });
    const p = producer({broker: dying});
    const ids = await submitCpu(p, 25, 'crash');
    void p.flush();
    await atPublish;
    for (const r of await rows(ids)) expect(r).toMatchObject({fence: 0, state: 'submitted'});
    expect((await rows(ids)).every((r) => r.published_at instanceof Date)).toBe(true);

    const s = await scheduler('sched-crash');
    const byWho = new Map<string, Set<string>>();
    s.events.on('doorbell:published', (e) => {
      const set = byWho.get(e.by) ?? new Set<string>();
      for (const id of e.ids) set.add(id);
      byWho.set(e.by, set);
    });
    await s.start();
    // A whole pass (load, fire, rescue, reconcile): the marked rows are nobody's to ring yet.
    await s.runOnce();
    expect(ids.filter((id) => [...byWho.values()].some((set) => set.has(id)))).toEqual([]);
    expect((await takeRung(env, 'cpu')).ids.filter((id) => ids.includes(id))).toEqual([]);

    // AX_REPUBLISH_AFTER passes on the database clock (what the reconciler compares with).
    await env.sql('UPDATE tasks SET published_at = published_at - INTERVAL ? MICROSECOND WHERE id IN (?)', [
      (env.config.republishAfterMs + 1000) * 1000,
      ids,
    ]);
    await s.runOnce();
    expect([...(byWho.get('reconciler') ?? [])].filter((id) => ids.includes(id)).sort()).toEqual([...ids].sort());
    expect([...(byWho.get('scheduler') ?? [])].filter((id) => ids.includes(id))).toEqual([]);
    expect((await takeRung(env, 'cpu')).ids.sort()).toEqual([...ids].sort());
  });
});
