/**
 * The circuit breaker through many episodes on the real MySQL store, decided by three workers'
 * gates at once (issue 20, defects 1 and 2): it opens, half-opens and closes, then opens again —
 * five times, closed by probes and by an operator's reset — and every time it closes, the tasks it
 * parked are due and rung at once instead of waiting for their old probe time.
 *
 * Time: the gates decide on the database clock (FlowGate.dbNow), so the store's sessions are
 * pinned to a fake clock that starts at the database's and only moves forward
 * (test/helpers/pinned-db-clock.ts); the outcome windows (type_outcomes) are written for its
 * seconds and the tests' own SQL compares with it, not with the server's NOW(). The gates' own
 * loops never fire (refresh every 10⁹ ms): each step calls refresh() on all three concurrently, as
 * three workers whose refreshes coincide.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {FlowGate} from '../../src/core/flow/gate.js';
import {createLogger} from '../../src/core/log.js';
import {AxEvents} from '../../src/core/events.js';
import {createTypesAdmin} from '../../src/core/types/admin.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import type {AxStore} from '../../src/core/store/types.js';
import type {AmqpBroker} from '../../src/core/broker/amqp/broker.js';
import {createTestEnv, takeRung, type TestEnv} from '../helpers/env.js';
import type {Clock} from '../../src/core/time.js';
import {fakeClock, type FakeClock} from '../helpers/clock.js';
import {pinDbClock, type PinnedClock} from '../helpers/pinned-db-clock.js';

const TYPE = 'order_notify';
const newId = createIdGenerator(() => Date.now());

describe('breaker episodes on MySQL (three gates)', () => {
  let env: TestEnv;
  let store: AxStore;
  let broker: AmqpBroker;
  let clock: FakeClock;
  let gates: FlowGate[];
  let pinned: PinnedClock;
  const events = new AxEvents();
  const moves: string[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    store = await env.store();
    broker = await env.broker();
    clock = fakeClock((await store.clockNow()).getTime());
    pinned = pinDbClock([store], clock);
    for (const e of ['breaker:opened', 'breaker:half-open', 'breaker:closed'] as const) events.on(e, () => moves.push(e));
    gates = [1, 2, 3].map((i) => {
      const g = new FlowGate({store, clock, logger: createLogger('silent'), refreshMs: 1e9});
      g.attach(events, `w${i}`);
      return g;
    });
    for (const g of gates) await g.start([], broker);
  });
  afterAll(async () => {
    pinned?.assertPinned();
    for (const g of gates ?? []) await g.stop();
    await env?.dispose();
  });

  const refreshAll = () => Promise.all(gates.map((g) => g.refresh()));
  /** Attempts of TYPE in the fake clock's current second, as one worker's outcome row. */
  const outcomes = (ok: number, failed: number) =>
    env.sql(
      'INSERT INTO type_outcomes (cell, type, second, worker, ok, failed) VALUES (?, ?, FROM_UNIXTIME(?), ?, ?, ?) ON DUPLICATE KEY UPDATE ok = ok + VALUES(ok), failed = failed + VALUES(failed)',
      ['default', TYPE, Math.floor(clock.now() / 1000), 'w1', ok, failed],
    );
  const breaker = async () => (await store.flowView({liveMs: 15_000})).types.find((t) => t.type === TYPE)?.breaker.state ?? 'closed';
  const parked = async () =>
    Number((await env.sql<{n: number}>("SELECT COUNT(*) AS n FROM tasks WHERE type = ? AND parked = 'breaker'", [TYPE]))[0]!.n);

  /** Submits `n` tasks of TYPE and parks them as an open breaker's admission does. */
  async function parkSome(n: number): Promise<string[]> {
    const tasks = Array.from({length: n}, (_, i) =>
      validateTaskSpec({type: TYPE, payload: {i}}, {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'}, Date.now(), newId),
    );
    await store.tasksInsert({tasks, actor: 'test'});
    const r = await store.tasksDefer({
      tasks: tasks.map((t) => ({id: t.id, delayMs: 600_000, parked: 'breaker' as const, reason: 'parked: breaker open'})),
      actor: 'w1',
      unhandledDeadAfterMs: 3_600_000,
      liveMs: 15_000,
    });
    expect(r.deferred).toHaveLength(n);
    return tasks.map((t) => t.id);
  }

  async function open(): Promise<void> {
    clock.advance(2000);
    await outcomes(5, 20);
    await refreshAll();
    expect(await breaker()).toBe('open');
  }

  it('opens, half-opens and closes five times; each close releases what it parked', async () => {
    const admin = createTypesAdmin({
      store,
      broker,
      clock,
      logger: createLogger('silent'),
      operator: () => 'alice',
      flowRefreshMs: 1000,
    });
    for (let episode = 1; episode <= 5; episode++) {
      moves.length = 0;
      await open();
      const ids = await parkSome(10);
      expect(await parked()).toBe(10);
      // Every gate parks the type now.
      for (const g of gates) expect(g.admit(TYPE, true)).toMatchObject({run: false, parked: 'breaker'});
      await takeRung(env, 'io');
      if (episode === 3) {
        // An operator closes it: the parked tasks are due and rung by the same call.
        const r = await admin.resetBreaker(TYPE, 'vendor fixed it');
        expect(r).toMatchObject({from: 'open', released: 10, unrung: 0});
      } else {
        clock.advance(30_000); // the base cool-down: closed breakers start again from it
        await refreshAll();
        expect(await breaker()).toBe('half_open');
        clock.advance(1000);
        await outcomes(3, 0);
        await refreshAll();
      }
      expect(await breaker()).toBe('closed');
      expect(await parked()).toBe(0);
      const due = await env.sql<{n: number}>(
        `SELECT COUNT(*) AS n FROM tasks WHERE id IN (${ids.map(() => '?').join(',')}) AND run_at <= FROM_UNIXTIME(?) AND published_at IS NOT NULL`,
        [...ids, clock.now() / 1000],
      );
      expect(Number(due[0]!.n)).toBe(10);
      expect(new Set((await takeRung(env, 'io')).ids)).toEqual(new Set(ids));
      // One event per transition however many gates decided it.
      expect(moves).toEqual(episode === 3 ? ['breaker:opened'] : ['breaker:opened', 'breaker:half-open', 'breaker:closed']);
      // The failures of this episode are not counted again after it closed.
      clock.advance(1000);
      await refreshAll();
      expect(await breaker()).toBe('closed');
      // Clean tasks for the next episode.
      await env.sql('DELETE FROM tasks WHERE type = ?', [TYPE]);
    }
    const hist = await store.typeHistory({type: TYPE, limit: 100});
    expect(hist.filter((e) => e.event === 'breaker:opened')).toHaveLength(5);
    expect(hist.filter((e) => e.event === 'breaker:closed')).toHaveLength(5);
  });

  it('--breaker-off closes an open breaker at once and releases its parked tasks; a reset follows --rate', async () => {
    const admin = createTypesAdmin({store, broker, clock, logger: createLogger('silent'), operator: () => 'bob', flowRefreshMs: 1000});
    await open();
    await parkSome(5);
    const off = await admin.set(TYPE, {breaker: {enabled: false}});
    expect(off).toMatchObject({known: true, released: 5, breaker: {enabled: false}});
    expect(await breaker()).toBe('closed');
    expect(await parked()).toBe(0);
    expect((await store.typeHistory({type: TYPE, limit: 2})).map((e) => [e.event, e.detail])).toContainEqual([
      'breaker:closed',
      'breaker turned off by bob',
    ]);
    await env.sql('DELETE FROM tasks WHERE type = ?', [TYPE]);
    // On again; a reset at 20 tasks/s releases in batches of 2 (a tenth of a second's worth each).
    await admin.set(TYPE, {breaker: {enabled: true}});
    await open();
    await parkSome(5);
    const progress: number[] = [];
    const realClockAdmin = createTypesAdmin({
      store,
      broker,
      clock: env.rt.clock,
      logger: createLogger('silent'),
      operator: () => 'bob',
      flowRefreshMs: 1000,
    });
    const r = await realClockAdmin.resetBreaker(TYPE, null, {rate: 20, onProgress: (n) => progress.push(n)});
    expect(r).toMatchObject({released: 5, unrung: 0});
    expect(progress).toEqual([2, 4, 5]);
    await expect(realClockAdmin.resetBreaker(TYPE, null, {rate: 0})).rejects.toMatchObject({code: 'invalid_input'});
    await env.sql('DELETE FROM tasks WHERE type = ?', [TYPE]);
  });

  it('a worker whose snapshot still says open does not park a task again once the breaker has closed', async () => {
    expect(await breaker()).toBe('closed');
    const [id] = await parkSome(1);
    const rows = await env.sql<{parked: string | null; due: number}>(
      'SELECT parked, run_at <= FROM_UNIXTIME(?) AS due FROM tasks WHERE id = ?',
      [clock.now() / 1000, id],
    );
    expect(rows[0]).toEqual({parked: null, due: 1});
  });

  it("an operator's reset from a host whose clock is 30 s off closes it at the database's time: the next window counts what follows, not what came before", async () => {
    const offBy = (offsetMs: number): Clock => ({...clock, now: () => clock.now() + offsetMs});
    const adminAt = (offsetMs: number) =>
      createTypesAdmin({store, broker, clock: offBy(offsetMs), logger: createLogger('silent'), operator: () => 'carol', flowRefreshMs: 0});
    // Behind: a window starting 30 s early would count the failures it was reset for and re-open it.
    await open();
    await adminAt(-30_000).resetBreaker(TYPE, 'host behind');
    clock.advance(1000);
    await refreshAll();
    expect(await breaker()).toBe('closed');
    // Ahead: a window starting 30 s late would ignore the failures that come next (open() expects it open).
    await open();
    await adminAt(30_000).resetBreaker(TYPE, 'host ahead');
    expect(await breaker()).toBe('closed');
    await open();
    const closes = (await store.typeHistory({type: TYPE, limit: 10})).filter((e) => e.event === 'breaker:closed').slice(0, 2);
    expect(closes.map((e) => e.detail)).toEqual(['reset by carol: host ahead', 'reset by carol: host behind']);
  });
});
