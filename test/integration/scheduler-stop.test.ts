/**
 * A scheduler stopped while it is still starting (its first load of a long horizon takes seconds)
 * lets go of every hold it took, in process and as `ax scheduler` on SIGTERM. This is what hung
 * `npm run bench` after P6: the process died of the signal with 50k rows still held.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {createSchedulerService} from '../../src/core/scheduler/service.js';
import type {HoldsTakeParams} from '../../src/core/store/types.js';
import {createTestEnv, eventually, type TestEnv} from '../helpers/env.js';
import {spawnAx, type Spawned} from '../helpers/spawn.js';

describe('scheduler stopped during its start', () => {
  let env: TestEnv;
  const procs: Spawned[] = [];

  const held = async (): Promise<number> =>
    Number((await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM tasks WHERE sched_owner IS NOT NULL'))[0]?.n);

  /** `n` submitted tasks due in a minute (inside a 2-minute horizon), straight in SQL. */
  const insertDueSoon = async (n: number, prefix: string): Promise<void> => {
    await env.sql(
      `INSERT INTO tasks (id, cell, type, pool, state, attempt, max_retries, run_at, fence, content_hash, created_at, updated_at, payload)
       SELECT CONCAT('${prefix}', '-0000-7000-8000-', LPAD(HEX(seq), 12, '0')), 'default', 'test_noop', 'io', 'submitted', 0, 5,
              NOW(3) + INTERVAL 60 SECOND, 0, 'x', NOW(3) - INTERVAL 1 MINUTE, NOW(3), '{}'
         FROM seq_1_to_${n}`,
    );
  };

  beforeAll(async () => {
    env = await createTestEnv({schedulerHorizonMs: 120_000});
  });

  afterAll(async () => {
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await env?.dispose();
  });

  it('stop() while the first load is in flight waits for it and releases its holds; the loops never start', async () => {
    await insertDueSoon(2000, 'aaaaaaaa');
    const real = await env.store();
    let loads = 0;
    let letLoad!: () => void;
    const gate = new Promise<void>((r) => (letLoad = r));
    let loadStarted!: () => void;
    const firstLoad = new Promise<void>((r) => (loadStarted = r));
    // The real store, with the first hold held back until the test has called stop().
    const store = new Proxy(real, {
      get(target, prop, receiver) {
        if (prop === 'holdsTake')
          return async (p: HoldsTakeParams) => {
            loads++;
            loadStarted();
            await gate;
            return target.holdsTake(p);
          };
        const v: unknown = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const s = createSchedulerService({...env.rt, config: env.config, store, broker: await env.broker(), id: 'sched-stop-early'});
    const started = s.start();
    await firstLoad;
    const stopped = s.stop();
    letLoad();
    await Promise.all([started, stopped]);
    expect(await held()).toBe(0);
    expect(s.ready()).toBe(false);
    // A later load (the loop) would take them again: none runs, whatever the load period.
    expect(loads).toBe(1);
    expect(s.summary().held).toBe(0);
    await env.sql('DELETE FROM tasks');
  });

  it('ax scheduler: SIGTERM while it takes its first holds → it exits 0 and nothing stays held', async () => {
    const n = 30_000;
    await insertDueSoon(n, 'bbbbbbbb');
    const p = spawnAx(['scheduler', '--summary-every', '0'], {...env.env, AX_SCHEDULER_HORIZON: '2m'});
    procs.push(p);
    // The holds commit before start() has read them back and filled its wheel: signal right then.
    await eventually(async () => (await held()) > 0, 30_000, 'the scheduler to take its holds');
    p.child.kill('SIGTERM');
    const exit = await p.exited;
    expect(exit, p.stderr()).toEqual({code: 0, signal: null});
    expect(await held()).toBe(0);
  });
});
