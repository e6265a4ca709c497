/**
 * `ax tasks cancel` on a running task, end to end: a worker process (`bin/run.js worker`, IO and
 * CPU pools, run `npm run build` first) runs long handlers; the CLI cancels them against the real
 * MariaDB and RabbitMQ. The lease is 60 s, so its renewal (every 20 s) cannot be what stops the
 * handlers here: the control message does. Covered: a handler that honours its signal, one that
 * ignores it in the IO pool (its attempt ends at the grace period's end), a CPU handler that never
 * yields (its thread terminated after the grace period, then replaced), no retry and the operator
 * in the history, and bad input (finished, unknown, an over-long reason) refused with nothing changed.
 */
import {mkdtempSync, readFileSync, existsSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {eventually, type TestEnv} from '../helpers/env.js';
import {createProcessTestEnv, logLines, type ProcessTestEnv} from '../helpers/processes.js';
import {ROOT, runCli, type CliRun, type Spawned} from '../helpers/spawn.js';

const GRACE_MS = 1000;
/** oclif wraps error messages to the terminal width behind " ›   " margins: undo that. */
const flat = (stderr: string): string => stderr.replace(/\s*\n\s*›\s*/g, ' ');

describe('ax tasks cancel on a running task', () => {
  let fx: ProcessTestEnv;
  let env: TestEnv;
  let dir: string;
  let worker: Spawned;
  let workerId: string;
  const log = (): string => join(dir, 'handlers.log');
  const lines = (): string[] => (existsSync(log()) ? readFileSync(log(), 'utf8').trim().split('\n') : []);
  const ax = (args: string[], vars: Record<string, string> = {}): Promise<CliRun> =>
    runCli(args, {cwd: ROOT, env: {...env.env, AX_OPERATOR: 'alice', ...vars}});

  beforeAll(async () => {
    if (!existsSync(join(ROOT, 'dist/commands/tasks/cancel.js'))) throw new Error('the CLI is not built: run `npm run build` first');
    fx = await createProcessTestEnv();
    env = fx.env;
    dir = mkdtempSync(join(tmpdir(), 'ax-cancel-e2e-'));
    worker = fx.spawn(['worker', '--handlers', 'test/fixtures/cancel-handlers.js', '--pools', 'io,cpu'], {
      ...env.env,
      AX_LEASE: '60s',
      AX_CANCEL_GRACE: `${GRACE_MS}ms`,
      AX_CPU_THREADS: '1',
      AX_HEARTBEAT: '200ms',
      AX_LOG_LEVEL: 'info',
    });
    const started = await eventually(
      async () => logLines(worker.stderr()).find((l: {msg?: string}) => l.msg === 'worker started'),
      30_000,
      'the worker to start',
    );
    workerId = started.worker as string;
  });
  afterAll(async () => fx?.dispose());

  /** Submits a task of `type` and waits until its handler has started. */
  async function startTask(type: string, payload: Record<string, unknown> = {}): Promise<string> {
    const id = await fx.client.submit({type, payload: {log: log(), ...payload}});
    await fx.client.flush();
    await eventually(async () => lines().includes(`started ${id}`), 20_000, `${type} to start`);
    return id;
  }

  /** The worker's in-flight count as its heartbeat wrote it. */
  const inFlight = async (): Promise<number> =>
    Number((await env.sql<{n: number}>('SELECT in_flight AS n FROM workers WHERE id = ?', [workerId]))[0]?.n);

  /** The task ended cancelled by alice with its one attempt: no retry, no failed row, the operator and reason in history. */
  async function expectCancelledOnce(id: string, reason: string): Promise<void> {
    const [row] = await env.sql<{state: string; attempt: number}>('SELECT state, attempt FROM tasks WHERE id = ?', [id]);
    expect(row).toEqual({state: 'cancelled', attempt: 1});
    const history = await env.sql<{from_state: string; to_state: string; attempt: number; worker: string; error: string}>(
      'SELECT from_state, to_state, attempt, worker, error FROM task_history WHERE task_id = ? ORDER BY seq',
      [id],
    );
    expect(history).toEqual([
      {from_state: 'running', to_state: 'cancelled', attempt: 1, worker: workerId, error: `cancelled by alice: ${reason}`},
    ]);
    expect(lines().filter((l) => l === `started ${id}`)).toHaveLength(1);
  }

  it('a handler that honours its signal stops at once; the task ends cancelled, no retry, audited', async () => {
    const id = await startTask('cancel_io_honour');
    const t0 = Date.now();
    const r = await ax(['tasks', 'cancel', id, '--reason', 'order refunded', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toEqual({id, from: 'running', to: 'cancelled', stopped: {worker: workerId, attempt: 1}, notified: true});
    await eventually(async () => lines().includes(`aborted ${id} cancelled by alice: order refunded`), 10_000, 'the signal');
    // Well within the grace period and far from a lease renewal (20 s): the control message did it.
    expect(Date.now() - t0).toBeLessThan(GRACE_MS + 8000);
    await eventually(async () => (await inFlight()) === 0, 10_000, 'the worker to let the attempt go');
    await expectCancelledOnce(id, 'order refunded');
    const [audit] = await env.sql<{operator: string; command: string; reason: string; task_ids: string}>(
      'SELECT operator, command, reason, task_ids FROM admin_audit ORDER BY id DESC LIMIT 1',
    );
    expect(audit).toEqual({operator: 'alice', command: 'tasks cancel', reason: 'order refunded', task_ids: JSON.stringify([id])});
    const human = await ax(['tasks', 'show', id]);
    expect(human.stdout).toContain('cancelled by alice: order refunded');
  });

  it('an IO handler that ignores its signal: its attempt ends at the grace period like a timeout', async () => {
    const id = await startTask('cancel_io_ignore', {ms: 30_000});
    const r = await ax(['tasks', 'cancel', id, '--reason', 'stuck']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`cancelled ${id} (was running, attempt 1 on ${workerId})`);
    await eventually(async () => lines().includes(`saw-abort ${id}`), 10_000, 'the signal');
    const ignored = await eventually(
      async () =>
        logLines(worker.stderr()).find((l: {msg?: string; taskId?: string}) => l.msg?.includes('ignored its cancel') && l.taskId === id),
      10_000,
      'the grace period to end',
    );
    expect(ignored).toMatchObject({graceMs: GRACE_MS, level: 'warn'});
    await eventually(async () => (await inFlight()) === 0, 10_000, 'the slot to be freed');
    expect(lines()).not.toContain(`finished ${id}`);
    await expectCancelledOnce(id, 'stuck');
  });

  it('a CPU handler that never yields: its thread is terminated after the grace period and replaced', async () => {
    const id = await startTask('cancel_cpu_ignore', {ms: 60_000});
    const t0 = Date.now();
    const r = await ax(['tasks', 'cancel', id, '--reason', 'runaway report']);
    expect(r.code, r.stderr).toBe(0);
    await eventually(
      async () =>
        logLines(worker.stderr()).find((l: {msg?: string; taskId?: string}) => l.msg?.includes('thread terminated') && l.taskId === id),
      15_000,
      'the thread to be terminated',
    );
    expect(Date.now() - t0).toBeGreaterThanOrEqual(GRACE_MS - 50);
    await expectCancelledOnce(id, 'runaway report');
    expect(lines()).not.toContain(`finished ${id}`);
    // The one CPU thread was replaced: the next CPU task runs.
    const next = await fx.client.submit({type: 'cancel_cpu_quick', payload: {log: log()}});
    await fx.client.flush();
    await eventually(async () => (await fx.client.getTask(next)).task.state === 'succeeded', 20_000, 'a CPU task on the new thread');
    expect(lines()).toContain(`ran ${next}`);
  });

  it('in bulk: --type T --state running stops every running task of the type, one audit row, each worker told', async () => {
    const ids = [await startTask('cancel_io_bulk'), await startTask('cancel_io_bulk')];
    const dry = await ax(['tasks', 'cancel', '--type', 'cancel_io_bulk', '--state', 'running', '--dry-run', '--json']);
    expect(dry.json).toMatchObject({dryRun: true, tasks: {running: 2}, total: 2});
    expect(lines().some((l) => ids.some((id) => l.startsWith(`aborted ${id}`)))).toBe(false);
    expect((await env.sql<{state: string}>('SELECT state FROM tasks WHERE id IN (?, ?)', ids)).map((t) => t.state)).toEqual([
      'running',
      'running',
    ]);
    const r = await ax(['tasks', 'cancel', '--type', 'cancel_io_bulk', '--state', 'running', '--reason', 'bad release', '--yes', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toEqual({type: 'cancel_io_bulk', states: ['running'], dryRun: false, tasks: {running: 2}, total: 2, notified: true});
    for (const id of ids)
      await eventually(async () => lines().includes(`aborted ${id} cancelled by alice: bad release`), 10_000, `the signal of ${id}`);
    for (const id of ids) await expectCancelledOnce(id, 'bad release');
    const [audit] = await env.sql<{command: string; task_count: number}>(
      'SELECT command, task_count FROM admin_audit ORDER BY id DESC LIMIT 1',
    );
    expect(audit).toEqual({command: 'tasks cancel --type', task_count: 2});
  });

  it('bad input: a finished or unknown task, an over-long reason: a clear error, the right exit code, nothing changed', async () => {
    const id = await startTask('cancel_io_honour');
    const snapshot = async () =>
      JSON.stringify([
        await env.sql('SELECT id, state, fence, attempt FROM tasks ORDER BY id'),
        await env.sql('SELECT COUNT(*) AS n FROM task_history'),
        await env.sql('SELECT COUNT(*) AS n FROM admin_audit'),
      ]);
    const before = await snapshot();
    const long = await ax(['tasks', 'cancel', id, '--reason', 'x'.repeat(1001)]);
    expect(long.code).toBe(2);
    expect(flat(long.stderr)).toMatch(/--reason is longer than 1000 characters/);
    const unknown = await ax(['tasks', 'cancel', '01a234fc-34ca-7523-94bd-1ea0af5a4290', '--json']);
    expect(unknown.code).toBe(3);
    expect(unknown.json.error.code).toBe('not_found');
    expect(await snapshot()).toBe(before);
    expect(lines()).not.toContain(`aborted ${id} `);
    // Cancelled for real, then again: the second is a conflict (finished), nothing changes.
    expect((await ax(['tasks', 'cancel', id])).code).toBe(0);
    await eventually(async () => lines().some((l) => l.startsWith(`aborted ${id}`)), 10_000, 'the signal');
    const after = await snapshot();
    const again = await ax(['tasks', 'cancel', id, '--reason', 'twice']);
    expect(again.code).toBe(4);
    expect(flat(again.stderr)).toMatch(/is cancelled: it has finished/);
    expect(await snapshot()).toBe(after);
  });
});
