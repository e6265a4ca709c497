/**
 * Cells isolate: two cells on two databases, served by one worker process (`ax worker --cell
 * default,fast`: a worker, pools and queues per cell). The default cell is saturated with 50,000
 * slow tasks (1 s each, an IO pool of 4: it drains 4 per second, so its backlog stays ~50k for the
 * whole test); the fast cell's tasks must still start at once. The latency comparison with an idle
 * run (p99 due→start within 20%) is a timing goal: bench/cells.js measures it; this test asserts
 * the isolation itself — every fast task started while the slow cell's backlog was still above
 * 45,000, and the fast cell's p99 start delay is a small fraction of how long the slow cell's
 * oldest due task has waited (without starting) by then.
 */
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {openClient} from '../../src/compose.js';
import type {AxClient} from '../../src/core/client.js';
import {startWorkerService, type RunningWorker} from '../../src/core/worker/service.js';
import type {Worker} from '../../src/core/worker/worker.js';
import {createTestEnv, eventually, type TestEnv} from '../helpers/env.js';
import {createBusinessDb, type BusinessDb} from '../helpers/outbox.js';
import {enqueueInTransaction} from '../../src/core/outbox/enqueue.js';
import {startRelay, type RunningRelay} from '../../src/relay.js';

const HANDLERS = new URL('../fixtures/cells-handlers.js', import.meta.url).href;
const SLOW_TASKS = 50_000;
const POOL = 4;
const FAST_TASKS = 40;

const p99 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.ceil(0.99 * xs.length) - 1] ?? NaN;

describe('cells: a saturated cell does not delay another', () => {
  let env: TestEnv;
  let client: AxClient;
  let running: RunningWorker;
  /** due→start (claim lateness, database clock) per cell, from each cell's worker events. */
  const late: Record<string, number[]> = {default: [], fast: []};

  beforeAll(async () => {
    env = await createTestEnv({ioConcurrency: POOL, submitFlushMs: 10}, {cells: {fast: ['fast_*']}});
    client = await openClient(env.rt, {reconnect: true});
    const fast = env.rt.forCell('fast');
    running = await startWorkerService({
      ...env.rt,
      store: await env.store(),
      broker: await env.broker({reconnect: true}),
      handlersModule: HANDLERS,
      pools: ['io'],
      workerId: 'cells-test/default',
      moreCells: [
        {
          config: fast.config,
          logger: fast.logger,
          store: await env.store('fast'),
          broker: await env.broker({reconnect: true, cell: 'fast'}),
          workerId: 'cells-test/fast',
        },
      ],
    });
    running.workers.forEach((w: Worker, i) => w.events.on('task:claimed', (e) => late[i === 0 ? 'default' : 'fast']?.push(e.lateMs)));
  }, 60_000);

  afterAll(async () => {
    await running?.stop(0);
    await client?.close().catch(() => undefined);
    await env?.dispose();
  }, 60_000);

  /** Submits FAST_TASKS fast_work tasks, one every 25 ms, and waits until all have started. */
  async function fastRound(): Promise<number[]> {
    const from = late.fast?.length ?? 0;
    for (let i = 0; i < FAST_TASKS; i++) {
      await client.submit({type: 'fast_work', payload: {i}});
      await new Promise((r) => setTimeout(r, 25));
    }
    await client.flush();
    await eventually(async () => (late.fast?.length ?? 0) - from >= FAST_TASKS, 20_000, 'the fast tasks to start');
    return (late.fast ?? []).slice(from);
  }

  test('the fast cell starts its tasks at once while the slow cell holds 50,000', async () => {
    const idle = await fastRound();

    const t0 = Date.now();
    for (let i = 0; i < SLOW_TASKS; i++) await client.submit({type: 'slow_work', payload: {i}});
    await client.flush();
    const submitS = (Date.now() - t0) / 1000;
    const slowStore = await env.store();
    // Saturated: its whole pool busy.
    await eventually(
      async () => ((await slowStore.backlog()).rows.find((r) => r.type === 'slow_work')?.running ?? 0) >= POOL,
      20_000,
      'the slow pool to fill',
    );

    const loaded = await fastRound();
    const slowReport = await slowStore.backlog();
    const slow = slowReport.rows.find((r) => r.type === 'slow_work');
    const fastStore = await env.store('fast');
    const fastRows = (await fastStore.backlog()).rows;

    const figures = {
      submitS,
      slowBacklogAfter: slow?.due,
      idleP99: p99(idle),
      loadedP99: p99(loaded),
      // The slow cell's tasks wait in its backlog (a worker claims at most its local queue, 2000,
      // ahead): the oldest due one has waited this long and has not started yet.
      slowOldestDueAgeMs: slow?.oldestDueAt ? slowReport.at.getTime() - slow.oldestDueAt.getTime() : 0,
      slowClaims: late.default?.length,
    };
    console.log('cells isolation', JSON.stringify(figures));

    // Every fast task ran in the fast cell, none was routed to the slow one.
    expect(fastRows.filter((r) => r.type === 'slow_work')).toEqual([]);
    expect((await slowStore.backlog()).rows.map((r) => r.type)).toEqual(['slow_work']);
    // The slow cell was saturated throughout: its backlog barely moved.
    expect(slow?.due ?? 0).toBeGreaterThan(45_000);
    // The fast cell's start delays stayed a small fraction of the slow cell's wait.
    expect(figures.slowOldestDueAgeMs).toBeGreaterThan(1000);
    expect(figures.loadedP99).toBeLessThan(figures.slowOldestDueAgeMs / 4);
  }, 120_000);
});

describe('cells: the outbox relay of a cell takes its own types only', () => {
  let env: TestEnv;
  let biz: BusinessDb;
  const relays: RunningRelay[] = [];

  beforeAll(async () => {
    biz = await createBusinessDb({migrate: true});
    env = await createTestEnv({outboxMysqlUrl: biz.url, relayIntervalMs: 50}, {cells: {fast: ['fast_*', 'user_register_credit']}});
  }, 60_000);

  afterAll(async () => {
    for (const r of relays) await r.stop();
    await env?.dispose();
    await biz?.dispose();
  }, 60_000);

  test('rows go to the cell of their type; a cell whose relay is not running keeps its rows', async () => {
    const conn = await biz.pool.getConnection();
    try {
      await conn.beginTransaction();
      await enqueueInTransaction(conn, [
        {type: 'fast_work', payload: {n: 1}},
        {type: 'order_notify', payload: {n: 2}},
        {type: 'user_register_credit', payload: {n: 3}},
        {type: 'user_register', payload: {n: 4}},
      ]);
      await conn.commit();
    } finally {
      conn.release();
    }
    const unsent = async () =>
      (await biz.sql<{type: string}>('SELECT type FROM task_outbox WHERE sent_at IS NULL ORDER BY type')).map((r) => r.type);

    relays.push(await startRelay(env.config, env.rt.logger, {cell: 'fast'}));
    await eventually(async () => (await unsent()).length === 2, 20_000, 'the fast cell’s rows to be relayed');
    expect(await unsent()).toEqual(['order_notify', 'user_register']);

    relays.push(await startRelay(env.config, env.rt.logger));
    await eventually(async () => (await unsent()).length === 0, 20_000, 'the default cell’s rows to be relayed');

    const types = async (cell?: string) => (await (await env.store(cell)).backlog()).rows.map((r) => r.type);
    expect(await types('fast')).toEqual(['fast_work', 'user_register_credit']);
    expect(await types()).toEqual(['order_notify', 'user_register']);
    expect(relays.map((r) => r.relay.id)).toEqual([expect.stringMatching(/\/fast$/), expect.not.stringMatching(/\/fast$/)]);
  }, 60_000);
});
