/**
 * A pause reaches work already handed to a worker (issue 20, defect 5): 2,000 tasks of a type wait
 * in a worker's local queue behind one running task; the type is paused. From the refresh in which
 * the worker sees the pause, none of the queued tasks starts: they are taken back and parked in
 * storage (`paused`), their attempt given back. Only the one already running finishes.
 */
import {afterAll, describe, expect, it} from 'vitest';
import {createClient} from '../../src/core/client.js';
import {nextEvent} from '../../src/core/events.js';
import {createTestEnv, createTestWorker, eventually} from '../helpers/env.js';

describe('a pause and the worker-local queue', () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined);
  });

  /** A worker with one IO slot whose local queue holds (nearly) all of `n` test_sleep tasks. */
  async function fullLocalQueue(n: number, workerId: string) {
    const env = await createTestEnv({ioConcurrency: 1, poolQueueCapacity: n + 100, flowRefreshMs: 200, submitFlushMs: 5});
    cleanup.push(() => env.dispose());
    const worker = await createTestWorker(env, {workerId});
    cleanup.push(() => worker.stop({graceMs: 0}));
    const store = await env.store();
    const client = createClient({...env.rt, store, broker: await env.broker({reconnect: true}), release: async () => undefined});
    cleanup.push(() => client.close());
    await worker.start();
    const ids = await Promise.all(Array.from({length: n}, (_, i) => client.submit({type: 'test_sleep', payload: {i, ms: 20}})));
    await client.flush();
    await eventually(async () => worker.poolStats()[0]!.queued >= n - 50, 30_000, 'the local queue to fill');
    const count = async (where: string) =>
      Number(
        (await env.sql<{n: number}>(`SELECT COUNT(*) AS n FROM tasks WHERE id IN (${ids.map(() => '?').join(',')}) AND ${where}`, ids))[0]!
          .n,
      );
    return {env, worker, store, count};
  }

  it('a paused type with 2,000 tasks in a worker-local queue starts none of them after the pause is seen', {timeout: 90_000}, async () => {
    const N = 2000;
    const {env, worker, store, count} = await fullLocalQueue(N, 'local-1');
    const started: string[] = [];
    // The pause, and the first task the worker parks after seeing it.
    const firstParked = nextEvent(worker.events, 'task:parked');
    await store.typeSetPaused({
      type: 'test_sleep',
      paused: true,
      operator: 'alice',
      reason: 'downstream down',
      audit: {operator: 'alice', command: 'types pause', filter: {type: 'test_sleep'}, reason: 'downstream down'},
    });
    await firstParked;
    const succeededAtPause = worker.stats.succeeded;
    worker.events.on('task:succeeded', (e) => started.push(e.id));
    await eventually(
      async () => (await count("state = 'succeeded'")) + (await count("parked = 'paused' AND state = 'submitted'")) === N,
      30_000,
      'every task succeeded before the pause or parked by it',
    );
    expect(worker.poolStats()[0]).toMatchObject({running: 0, queued: 0});
    // At most the task running when the pause was seen (pool size 1) finished afterwards.
    expect(started.length).toBeLessThanOrEqual(1);
    expect(worker.stats.succeeded).toBeLessThanOrEqual(succeededAtPause + 1);
    const parked = await count("parked = 'paused'");
    expect(parked).toBeGreaterThanOrEqual(N - 100);
    // No attempt used by the parked ones; each has a history row saying why.
    expect(await count("parked = 'paused' AND attempt = 0")).toBe(parked);
    const hist = await env.sql<{n: number}>("SELECT COUNT(*) AS n FROM task_history WHERE error LIKE '%withdrawn from local-1%'");
    expect(Number(hist[0]!.n)).toBeGreaterThanOrEqual(N - 100);
  });

  it('an opening breaker takes back the queued tasks of its type too, parked until the probe time', {timeout: 60_000}, async () => {
    const N = 300;
    const {worker, store, count} = await fullLocalQueue(N, 'local-2');
    const firstParked = nextEvent(worker.events, 'task:parked');
    const now = await store.clockNow();
    const until = new Date(now.getTime() + 60_000);
    await store.breakerTransition({
      type: 'test_sleep',
      expect: {state: 'closed', changedAt: null},
      to: {state: 'open', until, openings: 1, changedAt: now},
      event: 'breaker:opened',
      detail: 'test',
      actor: 'test',
    });
    expect(await firstParked).toMatchObject({parked: 'breaker', claimed: true});
    await eventually(
      async () => (await count("state = 'succeeded'")) + (await count("parked = 'breaker' AND state = 'submitted'")) === N,
      30_000,
      'every task succeeded before the opening or parked by it',
    );
    expect(await count("parked = 'breaker' AND attempt = 0 AND run_at > NOW(3) + INTERVAL 50 SECOND")).toBe(
      await count("parked = 'breaker'"),
    );
    expect(await count("parked = 'breaker'")).toBeGreaterThanOrEqual(N - 60);
  });
});
