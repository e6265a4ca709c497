/**
 * The scheduler's decisions on a fake clock, with an in-memory stand-in for its store (rows with a
 * due time, a fence and a published mark; a database clock at an offset from the local one) and
 * for the broker's publish: when a held task is rung (never before the database clock has reached
 * its run_at), what the load cycle holds and drops, how a failed publish is retried, what the
 * rescue loop decides for expired leases, and what stop() lets go. The real-server behaviour (holds
 * in MySQL shared by replicas) is test/integration/scheduler.test.ts.
 */
import {describe, expect, it} from 'vitest';
import {AxError} from '../../src/core/errors.js';
import {silentLogger} from '../../src/core/log.js';
import type {Broker, TaskMessage} from '../../src/core/broker/types.js';
import {Scheduler, type SchedulerOptions, type SchedulerStore} from '../../src/core/scheduler/scheduler.js';
import type {ExpiredLease, HeldForDispatch, Outcome} from '../../src/core/store/types.js';
import {fakeClock, type FakeClock} from '../helpers/clock.js';

const T0 = Date.parse('2026-03-01T12:00:00Z');
const DAY = 86_400_000;

interface Row {
  id: string;
  runAt: number;
  fence: number;
  published: boolean;
  holder: string | null;
}

/**
 * Task rows and a database clock `offsetMs` ahead of the local one. holdsTake holds the
 * unpublished rows due within the horizon (oldest first); doorbellsMark marks rows still at the
 * fence they were rung for; `expired` is what the rescuer finds.
 */
function fakeStore(clock: FakeClock, offsetMs: number) {
  const rows = new Map<string, Row>();
  const marked: string[] = [];
  const applied: Outcome[] = [];
  const expired: ExpiredLease[] = [];
  let watermark: Date | null = null;
  const dbNow = (): number => clock.now() + offsetMs;
  const held = (r: Row): HeldForDispatch => ({
    id: r.id,
    type: 'order_notify',
    pool: 'io',
    priority: 'normal',
    runAt: new Date(r.runAt),
    scheduleName: null,
    attempt: 0,
    fence: r.fence,
    dedupKey: null,
  });
  const store: SchedulerStore = {
    clockNow: () => Promise.resolve(new Date(dbNow())),
    holdsTake: (p) => {
      const due = [...rows.values()].filter((r) => !r.published && r.runAt <= dbNow() + p.horizonMs).sort((a, b) => a.runAt - b.runAt);
      for (const r of due) r.holder = p.owner;
      return Promise.resolve(due.slice(0, p.limit).map(held));
    },
    holdsRelease: (p) => {
      const mine = [...rows.values()].filter((r) => r.holder === p.owner);
      for (const r of mine) r.holder = null;
      return Promise.resolve(mine.length);
    },
    doorbellsMark: (p) => {
      for (const {id, fence} of p.rung) {
        const r = rows.get(id);
        if (!r || r.fence !== fence) continue;
        r.published = true;
        r.holder = null;
        marked.push(id);
      }
      return Promise.resolve();
    },
    leasesFindExpired: () => Promise.resolve(expired.splice(0)),
    tasksFindUndispatched: () => Promise.resolve([]),
    outcomesApply: (p) => {
      applied.push(...p.outcomes);
      return Promise.resolve({applied: p.outcomes.map((o) => o.id), stale: []});
    },
    failureGroups: () => Promise.resolve([]),
    dlqScanGet: () => Promise.resolve(watermark),
    dlqScanAdvance: (p) => {
      watermark = p.to;
      return Promise.resolve(true);
    },
  };
  const add = (id: string, runAt: number): void => void rows.set(id, {id, runAt, fence: 0, published: false, holder: null});
  return {store, rows, add, marked, applied, expired, dbNow};
}

/** A scheduler on a fake clock whose database clock runs `offsetMs` ahead; `publish` decides each publish. */
function harness(o: {offsetMs?: number; publish?: (m: TaskMessage[]) => Promise<void>} & Partial<SchedulerOptions> = {}) {
  const clock = fakeClock(T0);
  const {offsetMs = 0, publish, ...rest} = o;
  const db = fakeStore(clock, offsetMs);
  const rung: Array<{ids: string[]; at: number}> = [];
  const broker = {
    publish: (m: TaskMessage[]) => {
      rung.push({ids: m.map((x) => x.id), at: clock.now()});
      return publish ? publish(m) : Promise.resolve();
    },
  } as unknown as Broker;
  const scheduler = new Scheduler({
    store: db.store,
    broker,
    clock,
    random: () => 0.5,
    logger: silentLogger,
    backoff: {baseMs: 1000, maxMs: 3_600_000},
    id: 'scheduler:test',
    tickMs: 100,
    horizonMs: 10_000,
    loadEveryMs: 1000,
    holdMs: 30_000,
    maxHeld: 1000,
    // The other loops wait a day: each test drives the one it is about.
    rescueEveryMs: DAY,
    reconcileEveryMs: DAY,
    dlqScanEveryMs: DAY,
    reconcile: {limit: 100, rate: 1000, republishAfterMs: 60_000},
    ...rest,
  });
  return {clock, db, scheduler, rung};
}

describe('scheduler: the due ring', () => {
  it('rings a held task when the database clock has certainly reached its run_at, never before', async () => {
    // The database clock runs 2 s ahead: the task is due at local T0 + 3 s, plus NOW(3)'s 1 ms.
    const h = harness({offsetMs: 2000});
    h.db.add('a', T0 + 5000);
    await h.scheduler.start();
    expect(h.scheduler.summary()).toMatchObject({held: 1, nextDueInMs: 3001});
    await h.clock.advanceAsync(3000);
    expect(h.rung).toEqual([]);
    await h.clock.advanceAsync(1);
    expect(h.rung).toEqual([{ids: ['a'], at: T0 + 3001}]);
    expect(h.db.marked).toEqual(['a']);
    expect(h.scheduler.summary()).toMatchObject({held: 0, nextDueInMs: null, published: 1});
    await h.scheduler.stop();
  });

  it('holds only what is due within the horizon; a later task comes in with the load that reaches it', async () => {
    const h = harness();
    h.db.add('soon', T0 + 2000);
    h.db.add('later', T0 + 15_000);
    await h.scheduler.start();
    expect(h.scheduler.summary().held).toBe(1);
    // Loads every second: at T0 + 5 s the horizon (10 s) reaches `later`.
    await h.clock.advanceAsync(4000);
    expect(h.scheduler.summary().held).toBe(0);
    await h.clock.advanceAsync(1000);
    expect(h.scheduler.summary().held).toBe(1);
    await h.clock.advanceAsync(10_001);
    expect(h.rung.map((r) => r.ids)).toEqual([['soon'], ['later']]);
    expect(h.rung.map((r) => r.at - T0)).toEqual([2001, 15_001]);
    await h.scheduler.stop();
  });

  it('drops from the wheel a task the next load no longer holds (claimed, cancelled, rung elsewhere)', async () => {
    const h = harness();
    h.db.add('a', T0 + 3000);
    h.db.add('b', T0 + 3000);
    await h.scheduler.start();
    expect(h.scheduler.summary().held).toBe(2);
    h.db.rows.get('a')!.published = true; // another scheduler rang it
    await h.clock.advanceAsync(1000);
    expect(h.scheduler.summary().held).toBe(1);
    await h.clock.advanceAsync(2001);
    expect(h.rung.map((r) => r.ids)).toEqual([['b']]);
    await h.scheduler.stop();
  });

  it('keeps a task whose publish failed and rings it again a second later', async () => {
    let fail = true;
    const h = harness({publish: () => (fail ? Promise.reject(new AxError('unavailable', 'broker down')) : Promise.resolve())});
    const failures: number[] = [];
    h.scheduler.events.on('scheduler:publish-failed', (e) => failures.push(e.count));
    h.db.add('a', T0 + 500);
    await h.scheduler.start();
    await h.clock.advanceAsync(501);
    expect(failures).toEqual([1]);
    expect(h.db.marked).toEqual([]);
    expect(h.scheduler.summary().held).toBe(1);
    fail = false;
    // Retried at the database clock's now + 1 s; the load in between does not ring it twice.
    await h.clock.advanceAsync(1001);
    expect(h.db.marked).toEqual(['a']);
    expect(h.rung.map((r) => r.ids)).toEqual([['a'], ['a']]);
    await h.clock.advanceAsync(5000);
    expect(h.rung).toHaveLength(2);
    await h.scheduler.stop();
  });

  it('rings only what beforeFire keeps (the cron overlap policy)', async () => {
    const h = harness({beforeFire: (due) => Promise.resolve(due.filter((d) => d.id !== 'skip'))});
    h.db.add('keep', T0 + 100);
    h.db.add('skip', T0 + 100);
    await h.scheduler.start();
    await h.clock.advanceAsync(101);
    expect(h.rung.map((r) => r.ids)).toEqual([['keep']]);
    await h.scheduler.stop();
  });
});

describe('scheduler: the rescue loop', () => {
  it('on its period, fails an expired lease with backoff, or dead-letters it when out of retries', async () => {
    const h = harness({rescueEveryMs: 5000});
    const events: Array<{id: string; to: string}> = [];
    h.scheduler.events.on('lease:expired', (e) => events.push({id: e.id, to: e.to}));
    await h.scheduler.start();
    h.db.expired.push(
      {id: 'retry', fence: 3, attempt: 2, maxRetries: 3, retryBase: 0, worker: 'w1'},
      {id: 'spent', fence: 4, attempt: 4, maxRetries: 3, retryBase: 0, worker: 'w1'},
    );
    await h.clock.advanceAsync(4999);
    expect(h.db.applied).toEqual([]);
    await h.clock.advanceAsync(1);
    expect(h.db.applied).toEqual([
      // Attempt 2's backoff: 1 s × 2 × (1 + 0.5 × random 0.5).
      {kind: 'rescue', id: 'retry', fence: 3, error: 'lease expired: worker w1 stopped renewing it (attempt 2)', retryDelayMs: 2500},
      {kind: 'rescueDeadLetter', id: 'spent', fence: 4, error: 'lease expired: worker w1 stopped renewing it (attempt 4)'},
    ]);
    expect(events).toEqual([
      {id: 'retry', to: 'failed'},
      {id: 'spent', to: 'dead'},
    ]);
    expect(h.scheduler.summary().rescued).toBe(2);
    await h.scheduler.stop();
  });
});

describe('scheduler: stop', () => {
  it('lets go of its holds, clears its wheel and leaves no timer behind', async () => {
    const h = harness();
    h.db.add('a', T0 + 5000);
    await h.scheduler.start();
    expect(h.db.rows.get('a')!.holder).toBe('scheduler:test');
    await h.scheduler.stop();
    expect(h.db.rows.get('a')!.holder).toBeNull();
    expect(h.scheduler.summary().held).toBe(0);
    expect(h.clock.pending()).toBe(0);
    expect(h.scheduler.ready()).toBe(false);
    await h.clock.advanceAsync(10_000);
    expect(h.rung).toEqual([]);
  });
});
