/**
 * A pause reaches work already handed to a worker (issue 20, defect 5): 2,000 tasks of a type wait
 * in a worker's local queue behind one running task; the type is paused. From the refresh in which
 * the worker sees the pause, none of the queued tasks starts: they are taken back and parked in
 * storage (`paused`), their attempt given back. Only the one already running finishes. The same
 * for an opening breaker, and for a claim that committed before the pause and returns after it.
 */
import {afterAll, describe, expect, it} from 'vitest';
import {createClient} from '../../src/core/client.js';
import {nextEvent} from '../../src/core/events.js';
import {createTestEnv, createTestWorker, eventually, TEST_HANDLERS} from '../helpers/env.js';
import {createLogger} from '../../src/core/log.js';
import {createWorkerService} from '../../src/core/worker/service.js';

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
    // Handler starts in this process (test/fixtures/handlers.js counts them), when the worker
    // withdrew its queue: in the same synchronous step as the refresh that saw the pause.
    const executions = () => (globalThis as {__axExecutions?: number}).__axExecutions ?? 0;
    let atWithdrawal: number | undefined;
    worker.events.on('tasks:withdrawn', () => (atWithdrawal ??= executions()));
    await store.typeSetPaused({
      type: 'test_sleep',
      paused: true,
      operator: 'alice',
      reason: 'downstream down',
      audit: {operator: 'alice', command: 'types pause', filter: {type: 'test_sleep'}, reason: 'downstream down'},
    });
    await eventually(
      async () => (await count("state = 'succeeded'")) + (await count("parked = 'paused' AND state = 'submitted'")) === N,
      30_000,
      'every task succeeded before the pause or parked by it',
    );
    expect(worker.poolStats()[0]).toMatchObject({running: 0, queued: 0});
    // Not one handler started after the pause was seen (the one running then finished).
    expect(atWithdrawal).toBeDefined();
    expect(executions()).toBe(atWithdrawal);
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

  it(
    'a claim that committed before the pause but returns after the worker saw it: its tasks park, none starts',
    {timeout: 60_000},
    async () => {
      const env = await createTestEnv({ioConcurrency: 4, flowRefreshMs: 100, submitFlushMs: 5});
      cleanup.push(() => env.dispose());
      const store = await env.store();
      // The claim commits, then its answer is held until the test lets it go.
      let letGo!: () => void;
      const held = new Promise<void>((r) => (letGo = r));
      let claims = 0;
      const slowClaims = new Proxy(store, {
        get(target, key, receiver) {
          if (key !== 'tasksClaim') return Reflect.get(target, key, receiver) as unknown;
          return async (p: Parameters<typeof store.tasksClaim>[0]) => {
            const r = await target.tasksClaim(p);
            if (r.claimed.length > 0 && claims++ === 0) await held;
            return r;
          };
        },
      });
      const lines: string[] = [];
      const logger = createLogger('info', {}, (line) => lines.push(line));
      const worker = await createWorkerService({
        ...env.rt,
        logger,
        config: env.config,
        store: slowClaims,
        broker: await env.broker({reconnect: true}),
        handlersModule: TEST_HANDLERS,
        pools: ['io'],
        workerId: 'late-claim',
      });
      cleanup.push(() => worker.stop({graceMs: 0}));
      const client = createClient({...env.rt, store, broker: await env.broker({reconnect: true}), release: async () => undefined});
      cleanup.push(() => client.close());
      await worker.start();
      const id = await client.submit({type: 'test_sleep', payload: {ms: 1}});
      await client.flush();
      await eventually(async () => (await env.sql<{state: string}>('SELECT state FROM tasks WHERE id = ?', [id]))[0]?.state === 'running');
      const executions = () => (globalThis as {__axExecutions?: number}).__axExecutions ?? 0;
      const before = executions();
      await store.typeSetPaused({
        type: 'test_sleep',
        paused: true,
        operator: 'alice',
        reason: null,
        audit: {operator: 'alice', command: 'types pause', filter: {type: 'test_sleep'}, reason: null},
      });
      await eventually(async () => lines.some((l) => l.includes('type paused: parking its tasks')), 10_000, 'the worker to see the pause');
      const parked = nextEvent(worker.events, 'task:parked', (e) => e.id === id);
      letGo();
      expect(await parked).toMatchObject({parked: 'paused', claimed: true});
      expect(executions()).toBe(before);
      const [row] = await env.sql<{state: string; parked: string; attempt: number}>(
        'SELECT state, parked, attempt FROM tasks WHERE id = ?',
        [id],
      );
      expect(row).toEqual({state: 'submitted', parked: 'paused', attempt: 0});
    },
  );
});
