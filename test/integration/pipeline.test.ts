/**
 * The core pipeline against the real MariaDB and RabbitMQ: SDK submit → MySQL + RabbitMQ → an
 * in-process worker → outcome, including retries, dead-lettering, duplicates and poison messages.
 */
import {randomUUID} from 'node:crypto';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import amqp from 'amqplib';
import {createClient, type AxClient} from '../../src/core/client.js';
import {reconcile} from '../../src/core/reconcile/reconcile.js';
import {createWorkerService} from '../../src/core/worker/service.js';
import type {Worker} from '../../src/core/worker/worker.js';
import type {Broker} from '../../src/core/broker/types.js';
import {AxError} from '../../src/core/errors.js';
import {nextEvent} from '../../src/core/events.js';
import {AMQP_URL, createTestEnv, eventually, type TestEnv} from '../helpers/env.js';
import {retryDelayBounds} from '../../src/core/retry/backoff.js';

const HANDLERS = new URL('../fixtures/handlers.js', import.meta.url).href;

describe('core pipeline', () => {
  let env: TestEnv;
  let client: AxClient;
  const workers: Worker[] = [];

  /** Resolves with the outcome of `id` once a worker has made it durable (from the workers' events). */
  type Seen = {kind: 'complete' | 'fail' | 'deadLetter'; error?: string};
  const outcomeOf = (id: string, timeoutMs = 15_000): Promise<Seen> =>
    new Promise((resolve, reject) => {
      const offs: Array<() => void> = [];
      const t = setTimeout(() => (offs.forEach((f) => f()), reject(new Error(`no outcome for ${id}`))), timeoutMs);
      const done = (o: Seen): void => {
        clearTimeout(t);
        offs.forEach((f) => f());
        resolve(o);
      };
      for (const w of workers) {
        offs.push(w.events.on('task:succeeded', (e) => e.id === id && done({kind: 'complete'})));
        offs.push(w.events.on('task:failed', (e) => e.id === id && done({kind: 'fail', error: e.error})));
        offs.push(w.events.on('task:dead', (e) => e.id === id && done({kind: 'deadLetter', error: e.error})));
      }
    });

  const startWorker = async (): Promise<Worker> => {
    const store = await env.store();
    const broker = await env.broker({reconnect: true});
    const w = await createWorkerService({
      ...env.rt,
      config: env.config,
      store,
      broker,
      handlersModule: HANDLERS,
      pools: ['io'],
      workerId: `test-${workers.length}`,
    });
    await w.start();
    workers.push(w);
    return w;
  };

  const runReconcile = async () =>
    reconcile({
      ...env.rt,
      store: await env.store(),
      broker: await env.broker(),
      backoff: {baseMs: env.config.retryBaseMs, maxMs: env.config.retryMaxMs},
      limit: 1000,
      rate: 10_000,
      republishAfterMs: 60_000,
      dryRun: false,
    });

  beforeAll(async () => {
    env = await createTestEnv({retryBaseMs: 200, leaseMs: 2000, submitFlushMs: 20});
    const store = await env.store();
    const broker = await env.broker({reconnect: true});
    client = createClient({...env.rt, store, broker, release: async () => undefined});
    await startWorker();
    await startWorker();
  });

  afterAll(async () => {
    for (const w of workers) await w.stop({graceMs: 1000});
    await client?.close();
    await env?.dispose();
  });

  it('submit → succeeded, with history submitted → running → succeeded by one worker', async () => {
    const id = await client.submit({type: 'test_noop', payload: {n: 1}});
    const done = outcomeOf(id);
    await client.flush();
    expect((await done).kind).toBe('complete');
    const {task, history} = await client.getTask(id);
    expect(task).toMatchObject({state: 'succeeded', attempt: 1, publishedAt: expect.any(Date)});
    expect(history.map((h) => `${h.from ?? ''}>${h.to}`)).toEqual(['>submitted', 'submitted>running', 'running>succeeded']);
    expect(history[1]?.worker).toMatch(/^test-\d$/);
    // The running event is the attempt's start, on the worker it ran on, from its one stored row.
    expect(history[1]).toMatchObject({at: task.startedAt, worker: task.worker});
    expect(history[2]).toMatchObject({worker: task.worker, startedAt: task.startedAt});
    expect(history[2]!.at.getTime()).toBeGreaterThanOrEqual(task.startedAt!.getTime());
    const stored = await env.sql<{to_state: string}>('SELECT to_state FROM task_history WHERE task_id = ? ORDER BY seq', [id]);
    // A successful task has exactly one history row: its attempt. Its creation is the task row.
    expect(stored.map((r) => r.to_state)).toEqual(['succeeded']);
    expect(history[0]).toMatchObject({from: null, to: 'submitted', attempt: 0, at: task.createdAt, worker: task.submittedBy});
    expect(task.submittedBy).toMatch(/:\d+$/);
  });

  it('a failure → failed with run_at inside the backoff bounds, then retried to success', async () => {
    const id = await client.submit({type: 'test_flaky', payload: {succeedOn: 2}});
    const first = outcomeOf(id);
    await client.flush();
    expect((await first).kind).toBe('fail');
    const [row] = await env.sql<{run_at: Date; state: string; last_error: string}>(
      'SELECT run_at, state, last_error FROM tasks WHERE id = ?',
      [id],
    );
    const [failedAt] = await env.sql<{at: Date}>("SELECT at FROM task_history WHERE task_id = ? AND to_state = 'failed'", [id]);
    const gap = row!.run_at.getTime() - failedAt!.at.getTime();
    const [lo, hi] = retryDelayBounds(1, {baseMs: 200, maxMs: 3_600_000});
    expect(gap).toBeGreaterThanOrEqual(lo - 1);
    expect(gap).toBeLessThanOrEqual(hi + 1);
    expect(row!.last_error).toContain('flaky failure on attempt 1');
    // The thrown error's stack (first lines) is kept with that attempt's history row.
    const [failedRow] = await env.sql<{stack: string | null}>("SELECT stack FROM task_history WHERE task_id = ? AND to_state = 'failed'", [
      id,
    ]);
    expect(failedRow!.stack).toMatch(/^Error: flaky failure on attempt 1\n\s+at /);
    expect(failedRow!.stack!.split('\n').length).toBeLessThanOrEqual(10);
    const second = outcomeOf(id);
    await eventually(
      async () => {
        const r = await runReconcile();
        return r.undispatched.ids.includes(id);
      },
      10_000,
      'the retry to be rung',
    );
    expect((await second).kind).toBe('complete');
    expect((await client.getTask(id)).task.attempt).toBe(2);
  });

  it('exhausting the retries → dead with the reason, gaps inside the backoff bounds', async () => {
    const id = await client.submit({type: 'test_fail', payload: {}, maxRetries: 2});
    await client.flush();
    const task = await eventually(
      async () => {
        await runReconcile();
        const t = (await client.getTask(id)).task;
        return t.state === 'dead' ? t : undefined;
      },
      20_000,
      'the task to die',
    );
    expect(task.attempt).toBe(3);
    expect(task.lastError).toMatch(/always fails \(attempt 3\).*no retries left/);
    const rows = await env.sql<{to_state: string; at: Date; attempt: number; started_at: Date | null; worker: string}>(
      'SELECT to_state, at, attempt, started_at, worker FROM task_history WHERE task_id = ? ORDER BY seq',
      [id],
    );
    // One row per attempt, written with its outcome: its start, the worker it ran on, its end.
    expect(rows.map((r) => [r.to_state, r.attempt])).toEqual([
      ['failed', 1],
      ['failed', 2],
      ['dead', 3],
    ]);
    for (const r of rows) {
      expect(r.worker).toMatch(/^test-\d+$/);
      expect(r.started_at!.getTime()).toBeLessThanOrEqual(r.at.getTime());
    }
    // Each retry started no earlier than its backoff allowed.
    for (const attempt of [1, 2]) {
      const gap = rows[attempt]!.started_at!.getTime() - rows[attempt - 1]!.at.getTime();
      expect(gap).toBeGreaterThanOrEqual(retryDelayBounds(attempt, {baseMs: 200, maxMs: 3_600_000})[0] - 1);
    }
    // The timeline shows each attempt as it ran: its start on its worker, then its end.
    const {history} = await client.getTask(id);
    expect(history.map((h) => [h.from, h.to, h.attempt])).toEqual([
      [null, 'submitted', 0],
      ['submitted', 'running', 1],
      ['running', 'failed', 1],
      ['failed', 'running', 2],
      ['running', 'failed', 2],
      ['failed', 'running', 3],
      ['running', 'dead', 3],
    ]);
    for (const [i, r] of rows.entries())
      expect(history[2 * i + 1]).toMatchObject({to: 'running', at: r.started_at, worker: r.worker, startedAt: null});
  });

  it('unrecoverable failures and thrown non-Errors', async () => {
    const u = await client.submit({type: 'test_unrecoverable', payload: {}});
    const s = await client.submit({type: 'test_throw_string', payload: {}, maxRetries: 0});
    const [ou, os] = [outcomeOf(u), outcomeOf(s)];
    await client.flush();
    expect(await ou).toMatchObject({kind: 'deadLetter', error: 'cannot ever work'});
    expect(await os).toMatchObject({kind: 'deadLetter'});
    expect((await client.getTask(s)).task.lastError).toContain('a string, not an Error');
  });

  it('a type no live worker handles is parked unclaimed (no attempt used, no death), not dead-lettered', async () => {
    const parked = new Promise<{parked: string | null; claimed: boolean; reason: string}>((resolve) => {
      for (const w of workers) w.events.on('task:parked', (e) => e.type === 'nobody_handles' && resolve(e));
    });
    const id = await client.submit({type: 'nobody_handles', payload: {}});
    await client.flush();
    expect(await parked).toMatchObject({
      parked: 'unhandled',
      claimed: false,
      reason: expect.stringMatching(/no live worker has a handler for type "nobody_handles"/),
    });
    const {task, history} = await client.getTask(id);
    expect(task).toMatchObject({state: 'submitted', attempt: 0});
    expect(history.map((h) => h.to)).toEqual(['submitted', 'submitted']);
    expect(history.some((h) => h.to === 'running')).toBe(false);
    const v = (await client.types.list()).types.find((t) => t.type === 'nobody_handles');
    expect(v).toMatchObject({noHandler: true, parked: {unhandled: 1}});
  });

  it('a handler that never resolves times out and is failed', async () => {
    const id = await client.submit({type: 'test_timeout', payload: {}, maxRetries: 0});
    const o = outcomeOf(id);
    await client.flush();
    expect(await o).toMatchObject({kind: 'deadLetter'});
    expect((await client.getTask(id)).task.lastError).toMatch(/timed out/);
  });

  it('the same task delivered many times to several workers runs once and succeeds once', async () => {
    const before = (globalThis as {__axExecutions?: number}).__axExecutions ?? 0;
    const absorbedBefore = workers.reduce((n, w) => n + w.stats.staleDeliveries + w.stats.duplicateDeliveries, 0);
    const broker = await env.broker();
    // Listening from the submit on: the producer writes a lone task at once (group commit).
    const id = await client.submit({type: 'test_noop', payload: {dup: true}});
    const done = outcomeOf(id);
    await client.flush();
    // 30 more doorbells for the same task on top of the producer's own, racing across two workers.
    // One message each (a single publish would put them all in one doorbell).
    await Promise.all(Array.from({length: 30}, () => broker.publish([{id, type: 'test_noop', pool: 'io' as const}])));
    await done;
    // Let every duplicate be claimed (and refused) before counting.
    await eventually(async () => {
      const depths = await broker.queueDepths();
      const busy = workers.some((w) => w.inFlight > 0);
      return Object.values(depths).every((n) => n === 0) && !busy;
    });
    const rows = await env.sql<{n: number}>("SELECT COUNT(*) AS n FROM task_history WHERE task_id = ? AND to_state = 'succeeded'", [id]);
    expect(Number(rows[0]!.n)).toBe(1);
    expect(((globalThis as {__axExecutions?: number}).__axExecutions ?? 0) - before).toBe(1);
    // Every extra doorbell was absorbed: dropped as stale, or acked with the claim it arrived with.
    const absorbed = () => workers.reduce((n, w) => n + w.stats.staleDeliveries + w.stats.duplicateDeliveries, 0);
    await eventually(async () => absorbed() - absorbedBefore >= 30, 10_000, 'every extra doorbell to be absorbed');
    expect(absorbed() - absorbedBefore).toBe(30);
  });

  it('malformed messages and unknown ids go to the poison queue, acked and never requeued', async () => {
    const conn = await amqp.connect(AMQP_URL);
    try {
      const ch = await conn.createConfirmChannel();
      const names = (await env.broker()).names;
      const known = await client.submit({type: 'test_noop', payload: {poison: 'neighbour'}});
      await client.flush();
      const unknown = [randomUUID(), randomUUID()];
      const bodies = [
        Buffer.from('not json'),
        Buffer.alloc(0),
        Buffer.from('{"id": 5}'),
        Buffer.from('{"v":2,"tasks":[["a","test_noop"],["b"]]}'),
        Buffer.from(JSON.stringify({v: 1, id: unknown[0], type: 'test_noop'})),
        // A doorbell for several tasks, one of them unknown: only that one is poisoned.
        Buffer.from(
          JSON.stringify({
            v: 2,
            tasks: [
              [known, 'test_noop'],
              [unknown[1], 'test_noop'],
            ],
          }),
        ),
      ];
      for (const b of bodies) ch.publish(names.exchange, names.routingKey('io'), b, {persistent: true});
      await ch.waitForConfirms();
      const poisoned = await eventually(async () => {
        const q = await ch.checkQueue(names.poisonQueue);
        return q.messageCount >= 6 ? q.messageCount : undefined;
      });
      expect(poisoned).toBe(6);
      await eventually(async () => (await ch.checkQueue(names.queue('io'))).messageCount === 0 && workers.every((w) => w.inFlight === 0));
      const reasons: string[] = [];
      const unknownBodies: string[] = [];
      for (let m = await ch.get(names.poisonQueue); m; m = await ch.get(names.poisonQueue)) {
        const reason = String(m.properties.headers?.['x-ax-reason']);
        reasons.push(reason);
        if (reason.startsWith('unknown task id')) unknownBodies.push(m.content.toString());
        ch.ack(m);
      }
      expect(reasons.filter((r) => r.startsWith('malformed')).length).toBe(4);
      expect(unknownBodies.map((b) => (JSON.parse(b) as {id: string}).id).sort()).toEqual([...unknown].sort());
      expect((await client.getTask(known)).task.state).toBe('succeeded');
    } finally {
      await conn.close();
    }
  });

  it('a task submitted to a pool its handler does not use moves to its handler’s pool once, and runs there', async () => {
    // test_cpu's handler declares pool cpu; submitted without --pool, the task is rung on io, where
    // only io-only workers listen.
    const id = await client.submit({type: 'test_cpu', payload: {n: 10}});
    await client.flush();
    await eventually(async () => (await client.getTask(id)).task.pool === 'cpu', 10_000, 'the task to move to the cpu pool');
    expect((await client.getTask(id)).task).toMatchObject({state: 'failed', attempt: 0});
    // Only then a worker that runs the cpu pool: it gets the doorbell the io worker rang on the cpu queue.
    const cpuWorker = await createWorkerService({
      ...env.rt,
      config: env.config,
      store: await env.store(),
      broker: await env.broker({reconnect: true}),
      handlersModule: HANDLERS,
      pools: ['cpu'],
      workerId: 'test-cpu',
    });
    await cpuWorker.start();
    try {
      await eventually(async () => (await client.getTask(id)).task.state === 'succeeded', 15_000, 'the task to run on the cpu worker');
    } finally {
      await cpuWorker.stop({graceMs: 1000});
    }
    const {history} = await client.getTask(id);
    expect(history.map((h) => [h.to, h.worker?.startsWith('test-cpu') ?? false])).toEqual([
      ['submitted', false],
      ['running', false],
      ['failed', false],
      ['running', true],
      ['succeeded', true],
    ]);
    expect(history[2]!.error).toMatch(/does not run the cpu pool; moved to its queue/);
  });

  it('the SDK manages cron schedules with the public operations only', async () => {
    expect(Object.keys(client.cron).sort()).toEqual(['add', 'list', 'pause', 'remove', 'resume', 'show', 'trigger']);
    await client.cron.add({name: 'sdk-daily', cron: '0 2 * * *', tz: 'Asia/Shanghai', type: 'test_noop', payload: {}});
    const shown = await client.cron.show('sdk-daily', 3);
    expect(shown.nextFireTimes).toHaveLength(3);
    for (const t of shown.nextFireTimes) expect(t.getUTCHours()).toBe(18); // 02:00 in Shanghai
    await expect(client.cron.show('sdk-daily', 0)).rejects.toMatchObject({code: 'invalid_input'});
    expect((await client.cron.list()).map((s) => s.name)).toContain('sdk-daily');
    await client.cron.remove('sdk-daily');
    await expect(client.cron.show('sdk-daily')).rejects.toMatchObject({code: 'not_found'});
  });

  it('a cancelled task never runs even when its doorbell rings', async () => {
    const id = await client.submit({type: 'test_noop', payload: {c: 1}, delay: '1h'});
    await client.flush();
    expect(await client.cancel(id, 'test')).toEqual({id, from: 'submitted'});
    const broker = await env.broker();
    const before = workers.reduce((n, w) => n + w.stats.staleDeliveries, 0);
    await broker.publish([{id, type: 'test_noop', pool: 'io'}]);
    await eventually(async () => workers.reduce((n, w) => n + w.stats.staleDeliveries, 0) > before);
    expect((await client.getTask(id)).task.state).toBe('cancelled');
  });

  it('when the poison queue cannot be reached, an unusable doorbell is dropped, never left unacked', async () => {
    // Its own environment, so that the shared workers do not take the message first.
    const own = await createTestEnv();
    const conn = await amqp.connect(AMQP_URL);
    try {
      const real = await own.broker({reconnect: true});
      const failing: Broker = Object.create(real, {
        poison: {value: () => Promise.reject(new AxError('unavailable', 'RabbitMQ blocked (test)'))},
      });
      const w = await createWorkerService({
        ...own.rt,
        config: own.config,
        store: await own.store(),
        broker: failing,
        handlersModule: HANDLERS,
        pools: ['io'],
      });
      await w.start();
      const ch = await conn.createConfirmChannel();
      const body = JSON.stringify({
        v: 2,
        tasks: [
          [randomUUID(), 'test_noop'],
          [randomUUID(), 'test_noop'],
        ],
      });
      ch.publish(real.names.exchange, real.names.routingKey('io'), Buffer.from(body), {persistent: true});
      await ch.waitForConfirms();
      await eventually(async () => w.stats.poisoned === 2, 10_000, 'both unknown ids to be poisoned');
      // Stopping closes the channel: an unacked message would be back in the queue.
      await w.stop({graceMs: 1000});
      expect((await ch.checkQueue(real.names.queue('io'))).messageCount).toBe(0);
    } finally {
      await conn.close();
      await own.dispose();
    }
  });

  it('runOnce() beats and renews now: the heartbeat moves without waiting for its 5 s period', async () => {
    const w = workers[0]!;
    const heartbeat = async () =>
      (await env.sql<{heartbeat_at: Date}>('SELECT heartbeat_at FROM workers WHERE id = ?', [w.id]))[0]!.heartbeat_at.getTime();
    const before = await heartbeat();
    await eventually(
      async () => (await env.sql<{t: Date}>('SELECT NOW(3) AS t'))[0]!.t.getTime() > before,
      5000,
      'the database clock to pass the last heartbeat',
    );
    await w.runOnce();
    expect(await heartbeat()).toBeGreaterThan(before);
  });

  // Last: it stops one of the workers.
  it('stop() with an AbortSignal ends the grace period at once: the running attempt is aborted and recorded once', async () => {
    const id = await client.submit({type: 'test_sleep', payload: {ms: 60_000}});
    const claimedBy = Promise.race(workers.map((w) => nextEvent(w.events, 'task:claimed', (e) => e.id === id).then(() => w)));
    await client.flush();
    const w = await claimedBy;
    const failed = nextEvent(w.events, 'task:failed', (e) => e.id === id);
    const ac = new AbortController();
    const started = Date.now();
    const stopped = w.stop({graceMs: 60_000, signal: ac.signal});
    ac.abort();
    await stopped;
    expect(Date.now() - started).toBeLessThan(10_000); // not the 60 s grace period
    expect(w.ready()).toBe(false);
    expect(await failed).toMatchObject({
      type: 'test_sleep',
      attempt: 1,
      error: 'aborted: shutdown: the stop signal ended the grace period',
    });
    const {history} = await client.getTask(id);
    expect(history.at(-1)).toMatchObject({
      from: 'running',
      to: 'failed',
      attempt: 1,
      error: 'aborted: shutdown: the stop signal ended the grace period',
    });
  });
});
