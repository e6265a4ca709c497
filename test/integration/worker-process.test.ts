/**
 * Worker processes under faults: kill -9 in the middle of a handler, and SIGTERM with work in
 * flight. The worker runs as `bin/run.js worker`, exactly as in production.
 */
import {mkdtempSync, readFileSync, existsSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, it, onTestFinished} from 'vitest';
import type {AxClient} from '../../src/core/client.js';
import {reconcile} from '../../src/core/reconcile/reconcile.js';
import {AxEvents, nextEvent} from '../../src/core/events.js';
import {eventually, type TestEnv} from '../helpers/env.js';
import {createProcessTestEnv, type ProcessTestEnv} from '../helpers/processes.js';
import type {Spawned} from '../helpers/spawn.js';

/** The JSON log lines a spawned process wrote on stderr. */
const logLines = (p: Spawned): Array<Record<string, unknown>> =>
  p
    .stderr()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const lines = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

describe('worker processes', () => {
  let fx: ProcessTestEnv;
  let env: TestEnv;
  let client: AxClient;
  let dir: string;

  const worker = (extra: Record<string, string> = {}, args: string[] = []): Spawned =>
    fx.spawn(['worker', '--handlers', 'test/fixtures/handlers.js', '--pools', 'io', ...args], {
      ...env.env,
      AX_LEASE: '1s',
      AX_RETRY_BASE: '100ms',
      AX_TEST_EXEC_LOG: join(dir, 'exec.log'),
      AX_TEST_STARTED_LOG: join(dir, 'started.log'),
      ...extra,
    });

  /** The reconciler's events over the whole file. */
  const events = new AxEvents();
  const reconcileOnce = async () =>
    reconcile({
      ...env.rt,
      events,
      store: await env.store(),
      broker: await env.broker(),
      backoff: {baseMs: 100, maxMs: 60_000},
      limit: 1000,
      rate: 10_000,
      republishAfterMs: 60_000,
      dryRun: false,
    });

  beforeAll(async () => {
    fx = await createProcessTestEnv();
    ({env, client} = fx);
    dir = mkdtempSync(join(tmpdir(), 'ax-worker-'));
  });

  afterAll(async () => fx?.dispose());

  it('kill -9 mid-handler: the lease expires, reconcile retries it, it succeeds once, nothing lost', async () => {
    const first = worker();
    const id = await client.submit({type: 'test_sleep', payload: {ms: 60_000, sleepAttempts: 1}});
    await client.flush();
    await eventually(async () => lines(join(dir, 'started.log')).some((l) => l.startsWith(`${id} 1 `)), 20_000, 'the handler to start');
    first.child.kill('SIGKILL');
    await first.exited;
    const crashed = await client.getTask(id);
    expect(crashed.task.state).toBe('running');
    // The attempt running now is on the task row (no history row yet): the timeline shows it.
    expect(crashed.history.map((h) => h.to)).toEqual(['submitted', 'running']);
    expect(crashed.history[1]).toMatchObject({from: 'submitted', attempt: 1, worker: crashed.task.worker, at: crashed.task.startedAt});
    const deadWorker = crashed.task.worker!;

    const second = worker();
    const rescued = nextEvent(events, 'lease:expired', (e) => e.id === id);
    const reported = nextEvent(events, 'reconcile:done', (r) => r.expiredLeases.failed === 1);
    // The rescuer's part: once the 1 s lease has expired, the task goes back to failed (attempt used)…
    await eventually(async () => (await reconcileOnce()).expiredLeases.failed === 1, 10_000, 'the expired lease to be rescued');
    // … and says so on the event stream.
    expect(await rescued).toMatchObject({attempt: 1, to: 'failed', worker: expect.any(String)});
    expect((await reported).expiredLeases.ids).toContain(id);
    // …and once its backoff is over it is rung again and the second worker runs it.
    const task = await eventually(
      async () => {
        await reconcileOnce();
        const t = (await client.getTask(id)).task;
        return t.state === 'succeeded' ? t : undefined;
      },
      20_000,
      'the retry to succeed',
    );
    expect(task.attempt).toBe(2);
    const {history} = await client.getTask(id);
    expect(history.map((h) => h.to)).toEqual(['submitted', 'running', 'failed', 'running', 'succeeded']);
    expect(history[2]?.error).toMatch(/lease expired/);
    // The crashed attempt keeps its start and its machine: the rescue row carries both.
    expect(history[1]).toMatchObject({at: crashed.task.startedAt, worker: deadWorker});
    expect(history[2]).toMatchObject({from: 'running', attempt: 1, worker: deadWorker, startedAt: crashed.task.startedAt});
    expect(history[3]!.worker).not.toBe(deadWorker);
    expect(history[4]).toMatchObject({attempt: 2, worker: history[3]!.worker, startedAt: history[3]!.at});
    // Stored: one row per attempt, written with its end.
    expect((await (await env.store()).historyList({taskId: id})).map((h) => h.to)).toEqual(['failed', 'succeeded']);
    const execs = lines(join(dir, 'exec.log')).filter((l) => l.startsWith(id));
    expect(execs.map((l) => l.split(' ')[1])).toEqual(['1', '2']);
    expect(new Set(execs.map((l) => l.split(' ')[2])).size).toBe(2);
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
  });

  it('SIGTERM: running work gets the grace period, queued work is handed back without using an attempt', async () => {
    const w = worker({AX_SHUTDOWN_GRACE: '1500ms'}, ['--io-concurrency', '1']);
    const quick = await client.submit({type: 'test_sleep', payload: {ms: 300}});
    const queued = [
      await client.submit({type: 'test_sleep', payload: {ms: 300}}),
      await client.submit({type: 'test_sleep', payload: {ms: 300}}),
    ];
    await client.flush();
    await eventually(async () => lines(join(dir, 'started.log')).some((l) => l.startsWith(`${quick} `)), 20_000, 'the first task to start');
    w.child.kill('SIGTERM');
    expect((await w.exited).code).toBe(0);
    const states = await env.sql<{id: string; state: string; attempt: number}>(
      'SELECT id, state, attempt FROM tasks WHERE id IN (?, ?, ?)',
      [quick, ...queued],
    );
    const byId = new Map(states.map((r) => [r.id, r]));
    expect(byId.get(quick)).toMatchObject({state: 'succeeded', attempt: 1});
    // With one slot, 300 ms each and 1.5 s of grace, the queued ones either finished or were handed back unused.
    for (const id of queued) {
      const r = byId.get(id)!;
      expect(['succeeded', 'failed']).toContain(r.state);
      if (r.state === 'failed') expect(r.attempt).toBe(0);
    }
    const [row] = await env.sql<{stopped_at: Date | null}>('SELECT stopped_at FROM workers ORDER BY started_at DESC LIMIT 1');
    expect(row?.stopped_at).toBeInstanceOf(Date);
  });

  it('SIGTERM with a short grace period releases queued tasks (attempt 0) and rings for them', async () => {
    const w = worker({AX_SHUTDOWN_GRACE: '100ms'}, ['--io-concurrency', '1']);
    onTestFinished(() => void w.child.kill('SIGKILL')); // a failure here must not leave it taking the next test's tasks
    // Submitted in two flushes: ax does not order the doorbells of concurrently written batches, and
    // with one slot the short tasks would simply run first if their doorbell came first.
    const long = await client.submit({type: 'test_sleep', payload: {ms: 30_000}});
    await client.flush();
    await eventually(async () => lines(join(dir, 'started.log')).some((l) => l.startsWith(`${long} `)), 20_000, 'the long task to start');
    const queued = [
      await client.submit({type: 'test_sleep', payload: {ms: 10}}),
      await client.submit({type: 'test_sleep', payload: {ms: 10}}),
    ];
    await client.flush();
    await eventually(
      async () => {
        const r = await env.sql<{n: number}>("SELECT COUNT(*) AS n FROM tasks WHERE id IN (?, ?, ?) AND state = 'running'", [
          long,
          ...queued,
        ]);
        return Number(r[0]!.n) === 3;
      },
      20_000,
      'all three to be claimed',
    );
    w.child.kill('SIGTERM');
    expect((await w.exited).code).toBe(0);
    const rows = await env.sql<{id: string; state: string; attempt: number; published_at: Date | null}>(
      'SELECT id, state, attempt, published_at FROM tasks WHERE id IN (?, ?, ?)',
      [long, ...queued],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    // The running one was aborted at the end of the grace period: a used attempt, retried later.
    expect(byId.get(long)).toMatchObject({state: 'failed', attempt: 1});
    // Recorded once with its cause, not "aborted: aborted: …".
    const longLast = (await client.getTask(long)).history.at(-1);
    expect(longLast).toMatchObject({from: 'running', to: 'failed', attempt: 1});
    expect(longLast?.error).toBe('aborted: shutdown grace period of 100ms expired');
    // And the worker said so: a warn line for the failed attempt.
    const failedLine = logLines(w).find((l) => l.msg === 'task failed; will retry' && l.id === long);
    expect(failedLine).toMatchObject({type: 'test_sleep', attempt: 1, error: 'aborted: shutdown grace period of 100ms expired'});
    expect(['warn', 40]).toContain(failedLine?.level);
    for (const id of queued) {
      expect(byId.get(id)).toMatchObject({state: 'failed', attempt: 0});
      expect(byId.get(id)?.published_at).toBeInstanceOf(Date);
      const hist = (await client.getTask(id)).history;
      expect(hist.at(-1)).toMatchObject({from: 'running', to: 'failed', attempt: 0});
      expect(hist.at(-1)?.error).toMatch(/released/);
    }
    // Another worker picks the released ones up straight from their doorbell.
    const next = worker();
    onTestFinished(() => void next.child.kill('SIGKILL'));
    await eventually(
      async () => {
        const r = await env.sql<{n: number}>("SELECT COUNT(*) AS n FROM tasks WHERE id IN (?, ?) AND state = 'succeeded'", queued);
        return Number(r[0]!.n) === 2;
      },
      20_000,
      'the released tasks to run elsewhere',
    );
    next.child.kill('SIGTERM');
    await next.exited;
  });

  it('logs each failure at warn and each dead-letter at error, and a summary line every --summary-every', async () => {
    const w = worker({AX_LOG_LEVEL: 'info', AX_SHUTDOWN_GRACE: '100ms'}, ['--summary-every', '200ms']);
    onTestFinished(() => void w.child.kill('SIGKILL'));
    const id = await client.submit({type: 'test_fail', payload: {}, maxRetries: 1});
    await client.flush();
    await eventually(async () => (await client.getTask(id)).task.state === 'failed', 20_000, 'the first attempt to fail');
    // No scheduler here: the reconciler rings for the retry once it is due.
    await eventually(
      async () => {
        await reconcileOnce();
        return (await client.getTask(id)).task.state === 'dead';
      },
      20_000,
      'the task to be dead-lettered',
    );
    const summary = await eventually(
      async () => logLines(w).find((l) => l.msg === 'worker summary' && Number(l.dead) >= 1) ?? null,
      10_000,
      'a summary line counting the dead-letter',
    );
    // Earlier tests' retries may run here too: at least this task's two attempts are counted.
    expect(Number(summary.claimed)).toBeGreaterThanOrEqual(2);
    expect(Number(summary.failed)).toBeGreaterThanOrEqual(1);
    expect(summary).toHaveProperty('inFlight');
    expect(summary).toHaveProperty('released');
    const mine = logLines(w).filter((l) => l.id === id);
    expect(mine.map((l) => [l.msg, l.level, l.attempt])).toEqual([
      ['task failed; will retry', expect.anything(), 1],
      ['task dead-lettered', expect.anything(), 2],
    ]);
    expect(['warn', 40]).toContain(mine[0]!.level);
    expect(['error', 50]).toContain(mine[1]!.level);
    expect(mine[0]).toMatchObject({type: 'test_fail', error: 'always fails (attempt 1)'});
    expect(mine[1]).toMatchObject({type: 'test_fail', error: expect.stringMatching(/^always fails \(attempt 2\)/)});
    w.child.kill('SIGTERM');
    expect((await w.exited).code).toBe(0);
  });

  it('a bad --summary-every is invalid input before anything starts', async () => {
    const [before] = await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM workers');
    const w = worker({}, ['--summary-every', 'soon']);
    expect((await w.exited).code).toBe(2);
    expect(w.stderr()).toMatch(/--summary-every/);
    const [after] = await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM workers');
    expect(Number(after!.n)).toBe(Number(before!.n));
  });
});
