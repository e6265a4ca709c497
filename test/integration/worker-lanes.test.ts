/**
 * A worker's intake lanes (core/worker/intake.ts) against the real MariaDB and RabbitMQ: tasks its
 * claims defer in their own transaction (a pause, a breaker or a limit the worker's snapshot did
 * not know of yet) were never claimed, so their lane's room must come back; a lane that kept it
 * would stop the whole queue once the deferred tasks reached its cap.
 */
import {afterAll, describe, expect, it} from 'vitest';
import {createClient} from '../../src/core/client.js';
import {nextEvent} from '../../src/core/events.js';
import {createTestEnv, createTestWorker, eventually} from '../helpers/env.js';

describe('worker intake lanes', () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined);
  });

  it('tasks the claim defers give their lane room back: the queue keeps flowing past the lane cap', async () => {
    // Lane cap = pool size + local queue = 2 + 8 = 10 tasks; the snapshot is never refreshed.
    const env = await createTestEnv({ioConcurrency: 2, poolQueueCapacity: 8, flowRefreshMs: 3_600_000, submitFlushMs: 5});
    cleanup.push(() => env.dispose());
    const worker = await createTestWorker(env, {workerId: 'lanes-1'});
    cleanup.push(() => worker.stop({graceMs: 0}));
    await worker.start();
    const store = await env.store();
    await store.typeSetPaused({
      type: 'test_noop',
      paused: true,
      operator: 'test',
      reason: 'lanes',
      audit: {operator: 'test', command: 'types pause', filter: {type: 'test_noop'}, reason: 'lanes'},
    });
    const client = createClient({...env.rt, store, broker: await env.broker({reconnect: true}), release: async () => undefined});
    cleanup.push(() => client.close());
    const N = 60;
    for (let i = 0; i < N; i++) await client.submit({type: 'test_noop', payload: {i}});
    await client.flush();
    await eventually(
      async () => (await env.sql<{n: number}>("SELECT COUNT(*) AS n FROM tasks WHERE parked = 'paused'"))[0]!.n === N,
      20_000,
      `the claims to park all ${N} paused tasks`,
    );
    expect(worker.stats.claimed).toBe(0);
    // Six lanes' worth deferred: a task of another type on the same pool and level still runs.
    const id = await client.submit({type: 'test_sleep', payload: {ms: 1}});
    const done = nextEvent(worker.events, 'task:succeeded', (e) => e.id === id);
    await client.flush();
    await done;
    expect((await client.getTask(id)).task.state).toBe('succeeded');
  });
});
