/**
 * A spawned `bin/run.js worker` against stray errors in handler code and handler modules that hold
 * resources: an unhandled rejection is logged and counted and the worker keeps running; an
 * uncaught exception drains in-flight work, marks the worker stopped and exits 7; a module's
 * onStart/onStop are awaited and a leaked open handle cannot keep the worker alive after SIGTERM.
 */
import {mkdtempSync, readFileSync, existsSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {AxClient} from '../../src/core/client.js';
import {eventually, type TestEnv} from '../helpers/env.js';
import {createProcessTestEnv, logLines, type ProcessTestEnv} from '../helpers/processes.js';
import type {Spawned} from '../helpers/spawn.js';

const lines = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

describe('worker process safety', () => {
  let fx: ProcessTestEnv;
  let env: TestEnv;
  let client: AxClient;
  let dir: string;

  const worker = (handlers: string, log: string, args: string[] = [], extra: Record<string, string> = {}): Spawned =>
    fx.spawn(['worker', '--handlers', handlers, '--pools', 'io', ...args], {
      ...env.env,
      AX_LOG_FORMAT: 'json',
      AX_TEST_EXEC_LOG: log,
      ...extra,
    });
  const state = async (id: string): Promise<string> => (await client.getTask(id)).task.state;

  beforeAll(async () => {
    fx = await createProcessTestEnv();
    ({env, client} = fx);
    dir = mkdtempSync(join(tmpdir(), 'ax-safety-'));
  });

  afterAll(async () => fx?.dispose());

  it('an unhandled rejection in handler code is logged with its stack and counted; the worker keeps running', async () => {
    const log = join(dir, 'reject.log');
    const w = worker('test/fixtures/stray-handlers.js', log, ['--json']);
    const stray = await client.submit({type: 'test_stray_reject', payload: {}});
    await client.flush();
    await eventually(async () => (await state(stray)) === 'succeeded', 20_000, 'the stray task to succeed');
    await eventually(async () => w.stderr().includes('unhandled promise rejection'), 10_000, 'the rejection to be logged');
    // Still alive and working.
    const after = await client.submit({type: 'test_noop', payload: {}});
    await client.flush();
    await eventually(async () => (await state(after)) === 'succeeded', 20_000, 'a later task to succeed');
    expect(w.child.exitCode).toBeNull();

    const line = logLines(w.stderr()).find((l) => l.msg?.startsWith('unhandled promise rejection'));
    expect(line).toMatchObject({level: 'error', unhandledRejections: 1});
    expect(line.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(line.error.message).toBe(`stray rejection from ${stray}`);
    expect(line.error.stack).toMatch(/stray-handlers\.js/);

    w.child.kill('SIGTERM');
    expect((await w.exited).code).toBe(0);
    expect(JSON.parse(w.stdout())).toMatchObject({signal: 'SIGTERM', unhandledRejections: 1, succeeded: 2});
  });

  it('CPU pool: a stray rejection is logged and counted, a stray exception fails its attempt, replaces the thread; the worker keeps running', async () => {
    const log = join(dir, 'cpu.log');
    const w = fx.spawn(['worker', '--handlers', 'test/fixtures/stray-handlers.js', '--pools', 'cpu', '--cpu-threads', '1', '--json'], {
      ...env.env,
      AX_LOG_FORMAT: 'json',
      AX_TEST_EXEC_LOG: log,
    });
    const stray = await client.submit({type: 'test_cpu_stray_reject', pool: 'cpu', payload: {}});
    await client.flush();
    await eventually(async () => (await state(stray)) === 'succeeded', 20_000, 'the stray task to succeed');
    await eventually(
      async () => w.stderr().includes('unhandled promise rejection in a CPU worker thread'),
      10_000,
      'the rejection to be logged',
    );
    const rejected = logLines(w.stderr()).find((l) => l.msg?.startsWith('unhandled promise rejection in a CPU worker thread'));
    expect(rejected).toMatchObject({level: 'error'});
    expect(rejected.error.message).toBe(`stray rejection from ${stray}`);
    expect(rejected.error.stack).toMatch(/stray-handlers\.js/);

    const bad = await client.submit({type: 'test_cpu_stray_throw', pool: 'cpu', payload: {}});
    await client.flush();
    await eventually(
      async () => {
        const [r] = await env.sql<{last_error: string | null}>('SELECT last_error FROM tasks WHERE id = ?', [bad]);
        return r?.last_error?.includes('uncaught exception in worker thread') ? r.last_error : undefined;
      },
      20_000,
      'the crashing attempt to fail',
    );
    const [row] = await env.sql<{last_error: string}>('SELECT last_error FROM tasks WHERE id = ?', [bad]);
    expect(row!.last_error).toContain(`stray exception from ${bad}`);
    const thrown = logLines(w.stderr()).find((l) => l.msg?.startsWith('uncaught exception in a CPU worker thread'));
    expect(thrown).toMatchObject({level: 'error', taskId: bad});
    expect(thrown.error.stack).toMatch(/stray-handlers\.js/);
    // The replaced thread runs the next CPU task; the worker process never stopped.
    const after = await client.submit({type: 'test_cpu_noop', pool: 'cpu', payload: {}});
    await client.flush();
    await eventually(async () => (await state(after)) === 'succeeded', 20_000, 'a later CPU task to succeed');
    expect(w.child.exitCode).toBeNull();

    w.child.kill('SIGTERM');
    expect((await w.exited).code).toBe(0);
    expect(JSON.parse(w.stdout())).toMatchObject({signal: 'SIGTERM', unhandledRejections: 1, threadExceptions: 1});
  });

  it('an uncaught exception drains in-flight work, marks the worker stopped and exits 7', async () => {
    const log = join(dir, 'throw.log');
    const w = worker('test/fixtures/stray-handlers.js', log, [], {AX_SHUTDOWN_GRACE: '10s'});
    const slow = await client.submit({type: 'test_slow', payload: {ms: 1500}});
    await client.flush();
    await eventually(async () => lines(log).includes(`start ${slow}`), 20_000, 'the slow task to start');
    const bad = await client.submit({type: 'test_stray_throw', payload: {}});
    await client.flush();
    const {code} = await w.exited;
    expect(code).toBe(7);
    // The task in flight when the exception happened was finished, not abandoned.
    expect(await state(slow)).toBe('succeeded');
    expect(await state(bad)).toBe('succeeded');
    expect(lines(log)).toContain(`done ${slow}`);
    const line = logLines(w.stderr()).find((l) => l.msg?.startsWith('uncaught exception'));
    expect(line).toMatchObject({level: 'error', exitCode: 7});
    expect(line.error.message).toBe(`stray exception from ${bad}`);
    expect(line.error.stack).toMatch(/stray-handlers\.js/);
    const [row] = await env.sql<{stopped_at: Date | null}>('SELECT stopped_at FROM workers WHERE pid = ?', [w.child.pid]);
    expect(row?.stopped_at).toBeInstanceOf(Date);
  });

  it('SIGTERM with a handlers module holding mysql2 pools: drain, then onStop, then exit 0', async () => {
    const log = join(dir, 'pool.log');
    const w = worker('test/fixtures/pool-lifecycle-handlers.js', log);
    await eventually(async () => lines(log).includes('onStart'), 20_000, 'onStart');
    const id = await client.submit({type: 'test_query', payload: {ms: 800}});
    await client.flush();
    await eventually(async () => (await state(id)) === 'running', 20_000, 'the task to be claimed');
    w.child.kill('SIGTERM');
    const exited = await Promise.race([w.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 15_000))]);
    expect(exited).toEqual({code: 0, signal: null});
    // onStart before the task, the task (which used onStart's pool) finished in the drain, onStop last.
    expect(lines(log)).toEqual(['onStart', `done ${id} 2`, 'onStop']);
    expect(await state(id)).toBe('succeeded');
  });
});
