/**
 * The scheduler's dead-letter scan against the real MariaDB: runOnce() reports the tasks that died
 * since the previous pass per type (a dlq:new event and a warn line), each death once; retried
 * failures and deaths before the first scheduler of the database started are not reported; the
 * watermark survives a restart (the downtime's deaths are reported by the next scheduler) and two
 * schedulers report each death once between them.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {AxEventMap} from '../../src/core/events.js';
import {createSchedulerService} from '../../src/core/scheduler/service.js';
import type {Scheduler} from '../../src/core/scheduler/scheduler.js';
import type {AxStore} from '../../src/core/store/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import {createTestEnv, type TestEnv} from '../helpers/env.js';

const newId = createIdGenerator(Date.now);
/** The scan's windows end this far behind the database clock (its default). */
const SETTLE_MS = 1000;

describe('dead-letter scan', () => {
  let env: TestEnv;
  let store: AxStore;
  let scheduler: Scheduler;
  const seen: Array<AxEventMap['dlq:new']> = [];

  /** Runs a task of `type` to death (or to a retried failure). */
  const runToEnd = async (type: string, kind: 'deadLetter' | 'fail'): Promise<string> => {
    const t = validateTaskSpec({type, payload: {}}, {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'}, Date.now(), newId);
    await store.tasksInsert({tasks: [t], actor: 'test'});
    const c = (await store.tasksClaim({ids: [t.id], worker: 'w:1', leaseMs: 30_000})).claimed[0]!;
    const o =
      kind === 'fail'
        ? {kind, id: t.id, fence: c.fence, retryDelayMs: 60_000, error: 'boom'}
        : {kind, id: t.id, fence: c.fence, error: 'boom'};
    expect((await store.outcomesApply({outcomes: [o], actor: 'w:1'})).applied).toEqual([t.id]);
    return t.id;
  };
  /** Waits until the database clock is past the settle margin: what died so far is in the next window. */
  const settle = async () => {
    const until = (await store.clockNow()).getTime() + SETTLE_MS;
    while ((await store.clockNow()).getTime() <= until) await new Promise((r) => setTimeout(r, 20));
  };
  const pass = async () => {
    seen.length = 0;
    await scheduler.runOnce();
    return seen.map((e) => [e.type, e.count]);
  };

  beforeAll(async () => {
    env = await createTestEnv();
    store = await env.store();
    // Died before the scheduler started: not new to it.
    await runToEnd('scan_before', 'deadLetter');
    await settle();
    scheduler = createSchedulerService({...env.rt, config: env.config, store, broker: await env.broker(), id: 'scan-test'});
    scheduler.events.on('dlq:new', (e) => seen.push(e));
    await scheduler.start();
  });
  afterAll(async () => {
    await scheduler?.stop();
    await env?.dispose();
  });

  it('reports each new dead task once, per type, and not the retried failures', async () => {
    await runToEnd('scan_a', 'deadLetter');
    await runToEnd('scan_a', 'deadLetter');
    await runToEnd('scan_b', 'deadLetter');
    await runToEnd('scan_a', 'fail');
    await settle();
    expect(await pass()).toEqual([
      ['scan_a', 2],
      ['scan_b', 1],
    ]);
    const first = seen[0]!;
    expect(first.since).toBeLessThan(first.until);
    // Nothing died since: the second pass reports nothing.
    expect(await pass()).toEqual([]);
    await runToEnd('scan_b', 'deadLetter');
    await settle();
    expect(await pass()).toEqual([['scan_b', 1]]);
    expect(await pass()).toEqual([]);
  });

  it('survives a restart: deaths while no scheduler ran are reported once by the next one; two replicas report a death once', async () => {
    await pass(); // nothing pending
    await scheduler.stop();
    // Down: two tasks die.
    await runToEnd('scan_down', 'deadLetter');
    await runToEnd('scan_down', 'deadLetter');
    await settle();
    const mk = async (id: string) => {
      const s = createSchedulerService({...env.rt, config: env.config, store: await env.store(), broker: await env.broker(), id});
      s.events.on('dlq:new', (e) => seen.push(e));
      await s.start();
      return s;
    };
    scheduler = await mk('scan-test-2');
    const replica = await mk('scan-test-3');
    try {
      seen.length = 0;
      await Promise.all([scheduler.runOnce(), replica.runOnce()]);
      expect(seen.map((e) => [e.type, e.count])).toEqual([['scan_down', 2]]);
      await runToEnd('scan_down', 'deadLetter');
      await settle();
      seen.length = 0;
      await replica.runOnce();
      await scheduler.runOnce();
      expect(seen.map((e) => [e.type, e.count])).toEqual([['scan_down', 1]]);
    } finally {
      await replica.stop();
    }
  });
});
