import {afterAll, beforeAll, describe, it, expect} from 'vitest';
import {isAxError} from '../../src/core/errors.js';
import {createLogger, silentLogger} from '../../src/core/log.js';
import {systemClock} from '../../src/core/time.js';
import {createCpuPool} from '../../src/core/worker/cpu-pool.js';
import type {ExecutionPool, JobResult, PoolJob} from '../../src/core/worker/pool.js';

// The CPU pool runs real threads, so it uses the real clock; timeouts are tens of ms and only ever
// interrupt handlers that never finish (spin, gate), so no outcome depends on timing.
const MODULE = new URL('../fixtures/pool-handlers.js', import.meta.url).href;
/** Same name as GATE_CHANNEL in the fixture (a JS file, not imported here to keep this file typed). */
const GATE_CHANNEL = 'ax-pool-test-gate';

const job = (taskId: string, type: string, timeoutMs = 10_000, payload = {}): PoolJob => ({taskId, type, attempt: 1, payload, timeoutMs});
function run(pool: ExecutionPool, j: PoolJob): Promise<JobResult> {
  const p = pool.tryRun(j);
  if (!p) throw new Error(`tryRun(${j.taskId}) was refused`);
  return p;
}

/** Test side of the fixture's `pool_gate` handler: observes starts, releases on demand. */
function gateChannel() {
  const ch = new BroadcastChannel(GATE_CHANNEL);
  const waiters = new Map<string, () => void>();
  const seen = new Set<string>();
  const counter = {active: 0, max: 0};
  ch.onmessage = (ev: {data: {started?: string}}) => {
    const id = ev.data.started;
    if (id === undefined) return;
    seen.add(id);
    counter.active++;
    counter.max = Math.max(counter.max, counter.active);
    waiters.get(id)?.();
  };
  return {
    counter,
    started: (id: string) => new Promise<void>((r) => (seen.has(id) ? r() : waiters.set(id, r))),
    release(id: string) {
      counter.active--;
      ch.postMessage({release: id});
    },
    close: () => ch.close(),
  };
}

describe('cpu pool', () => {
  let pool: ExecutionPool;
  beforeAll(async () => {
    pool = await createCpuPool({size: 2, capacity: 2, handlersModule: MODULE, clock: systemClock, logger: silentLogger});
  });
  afterAll(async () => {
    await pool.drain(0);
  });

  it('normalises handler results from the thread', async () => {
    const results = await Promise.all([
      run(pool, job('1', 'pool_ok')),
      run(pool, job('2', 'pool_void')),
      run(pool, job('3', 'pool_fail', 10_000, {message: 'nope'})),
      run(pool, job('4', 'pool_throw_string')),
    ]);
    expect(results).toEqual([
      {kind: 'success'},
      {kind: 'success'},
      {kind: 'fail', message: 'nope', unrecoverable: false},
      {kind: 'fail', message: 'handler threw a non-Error: "boom"', unrecoverable: false},
    ]);
    // instanceof UnrecoverableError works: fixture and thread share one handlers.ts module instance
    expect(await run(pool, job('5', 'pool_unrecoverable'))).toEqual({
      kind: 'fail',
      message: 'bad payload',
      unrecoverable: true,
      stack: expect.stringMatching(/^UnrecoverableError: bad payload\n\s+at /),
    });
    expect(await run(pool, job('6', 'no_such_type'))).toEqual({kind: 'fail', message: 'unknown task type', unrecoverable: true});
  });

  it('runs at most `size` jobs at once and refuses work beyond size + capacity', async () => {
    const gate = gateChannel();
    try {
      const ids = ['a', 'b', 'c', 'd'];
      const results = ids.map((id) => run(pool, job(id, 'pool_gate')));
      expect(pool.tryRun(job('e', 'pool_ok'))).toBeNull();
      await Promise.all([gate.started('a'), gate.started('b')]);
      expect([pool.running, pool.queued]).toEqual([2, 2]);
      for (const [i, id] of ids.entries()) {
        await gate.started(id);
        expect(gate.counter.active).toBeLessThanOrEqual(2);
        gate.release(id);
        expect(await results[i]).toEqual({kind: 'success'});
      }
      expect(gate.counter.max).toBe(2);
      expect([pool.running, pool.queued]).toEqual([0, 0]);
    } finally {
      gate.close();
    }
  });

  it('terminates a CPU-bound handler on timeout and replaces the thread', async () => {
    const spins = [run(pool, job('s1', 'pool_spin', 30)), run(pool, job('s2', 'pool_spin', 30))];
    expect(await Promise.all(spins)).toEqual([
      {kind: 'timeout', message: 'timed out after 30ms (worker thread terminated)'},
      {kind: 'timeout', message: 'timed out after 30ms (worker thread terminated)'},
    ]);
    // both threads were killed: these run on fresh ones
    expect(await Promise.all([run(pool, job('ok1', 'pool_ok')), run(pool, job('ok2', 'pool_ok'))])).toEqual([
      {kind: 'success'},
      {kind: 'success'},
    ]);
  });

  it('fails the job of a thread that exits or crashes, and replaces the thread', async () => {
    expect(await run(pool, job('x', 'pool_exit'))).toEqual({
      kind: 'fail',
      message: 'worker thread exited: exit code 3',
      unrecoverable: false,
    });
    expect(await run(pool, job('y', 'pool_crash'))).toEqual({
      kind: 'fail',
      message: 'handler failed: uncaught exception in worker thread: async boom',
      unrecoverable: false,
      stack: expect.stringMatching(/^Error: async boom\n.*pool-handlers\.js/s),
    });
    const after = await Promise.all([1, 2, 3, 4].map((i) => run(pool, job(`after${i}`, 'pool_ok'))));
    expect(after).toEqual([1, 2, 3, 4].map(() => ({kind: 'success'})));
  });

  it('cancel: the handler in the thread sees its signal aborted and ends with its own result, before the grace period', async () => {
    const gate = gateChannel();
    try {
      const r = run(pool, job('c1', 'pool_until_aborted'));
      await gate.started('c1');
      expect(pool.cancel!('c1', 'cancelled by alice: refunded', 30_000)).toBe(true);
      // Long before the 30 s grace period: the handler saw its signal and returned.
      expect(await r).toEqual({kind: 'fail', message: 'stopped: cancelled by alice: refunded', unrecoverable: false});
      expect(await run(pool, job('c1b', 'pool_ok'))).toEqual({kind: 'success'});
    } finally {
      gate.close();
    }
  });

  it('cancel: a handler that ignores its signal has its thread terminated after the grace period, and the thread is replaced', async () => {
    const gate = gateChannel();
    try {
      const r = run(pool, job('c2', 'pool_spin_gated', 60_000));
      await gate.started('c2');
      const t0 = Date.now();
      pool.cancel!('c2', 'cancelled by bob', 300);
      expect(await r).toEqual({
        kind: 'aborted',
        message: 'cancelled by bob (worker thread terminated after the cancel grace period of 300ms)',
      });
      expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
      expect(await Promise.all([run(pool, job('c2b', 'pool_ok')), run(pool, job('c2c', 'pool_ok'))])).toEqual([
        {kind: 'success'},
        {kind: 'success'},
      ]);
    } finally {
      gate.close();
    }
  });

  it('aborts a running job by terminating its thread', async () => {
    const gate = gateChannel();
    try {
      const r = run(pool, job('g', 'pool_gate'));
      await gate.started('g');
      pool.abort('g', 'lease lost');
      expect(await r).toEqual({kind: 'aborted', message: 'lease lost'});
      expect(await run(pool, job('g2', 'pool_ok'))).toEqual({kind: 'success'});
    } finally {
      gate.close();
    }
  });
});

describe('cpu pool startup and drain', () => {
  it('reports a handlers module that cannot be loaded at startup', async () => {
    const opts = {size: 1, capacity: 1, clock: systemClock, logger: silentLogger};
    const missing = createCpuPool({...opts, handlersModule: new URL('../fixtures/no-such-file.js', import.meta.url).href});
    await expect(missing).rejects.toSatisfy(
      (e) => isAxError(e, 'invalid_input') && /cannot load handlers module/.test((e as Error).message),
    );
    const none = createCpuPool({...opts, handlersModule: new URL('../fixtures/pool-handlers-none.js', import.meta.url).pathname});
    await expect(none).rejects.toSatisfy((e) => isAxError(e, 'invalid_input') && /must export defineHandlers/.test((e as Error).message));
  });

  it('drain aborts the running job at the deadline and returns the queued ones as not started', async () => {
    const lines: string[] = [];
    const logger = createLogger('warn', {}, (l) => lines.push(l));
    const pool = await createCpuPool({size: 1, capacity: 2, handlersModule: MODULE, clock: systemClock, logger});
    const gate = gateChannel();
    try {
      const running = run(pool, job('r', 'pool_gate'));
      const queued = [run(pool, job('q1', 'pool_ok')), run(pool, job('q2', 'pool_ok'))];
      await gate.started('r');
      const drained = pool.drain(20);
      expect(pool.tryRun(job('late', 'pool_ok'))).toBeNull();
      expect(await drained).toEqual({notStarted: ['q1', 'q2']});
      expect(await running).toEqual({kind: 'aborted', message: 'shutdown grace period of 20ms expired'});
      expect(await Promise.all(queued)).toEqual([
        {kind: 'aborted', message: 'not started'},
        {kind: 'aborted', message: 'not started'},
      ]);
      expect(lines.some((l) => l.includes('grace period expired'))).toBe(true);
    } finally {
      gate.close();
    }
  });

  it('drain lets running and queued jobs finish', async () => {
    const pool = await createCpuPool({size: 1, capacity: 1, handlersModule: MODULE, clock: systemClock, logger: silentLogger});
    const results = [run(pool, job('a', 'pool_ok')), run(pool, job('b', 'pool_ok'))];
    expect(await pool.drain(10_000)).toEqual({notStarted: []});
    expect(await Promise.all(results)).toEqual([{kind: 'success'}, {kind: 'success'}]);
  });
});

describe('cpu pool: stray errors of handler code in a thread', () => {
  const lines: Array<{level: string; msg: string; taskId?: string; error?: {message: string; stack?: string}}> = [];
  const strays: string[] = [];
  let seen: ((kind: string) => void) | null = null;
  let pool: ExecutionPool;
  beforeAll(async () => {
    const logger = createLogger('info', {}, (line) => void lines.push(JSON.parse(line)));
    pool = await createCpuPool({
      size: 1,
      capacity: 4,
      handlersModule: MODULE,
      clock: systemClock,
      logger,
      onStray: (kind) => {
        strays.push(kind);
        seen?.(kind);
      },
    });
  });
  afterAll(async () => {
    await pool.drain(0);
  });
  const nextStray = () => new Promise<string>((r) => (seen = r));

  it('an unhandled rejection is logged at error with its stack and reported; the thread keeps running', async () => {
    const reported = nextStray();
    expect(await run(pool, job('r1', 'pool_stray_reject'))).toEqual({kind: 'success'});
    expect(await reported).toBe('unhandledRejection');
    const line = lines.find((l) => l.msg.startsWith('unhandled promise rejection in a CPU worker thread'));
    expect(line).toMatchObject({level: 'error', error: {message: 'stray rejection from r1'}});
    expect(line?.error?.stack).toMatch(/pool-handlers\.js/);
    // The same (only) thread runs the next jobs: it did not die.
    expect(await run(pool, job('r2', 'pool_ok'))).toEqual({kind: 'success'});
    expect(lines.some((l) => /exited|replaced/.test(l.msg))).toBe(false);
  });

  it('an uncaught exception fails the running job with that error, is logged and reported, and the thread is replaced', async () => {
    const reported = nextStray();
    const r = await run(pool, job('c1', 'pool_crash'));
    expect(r).toMatchObject({
      kind: 'fail',
      unrecoverable: false,
      message: 'handler failed: uncaught exception in worker thread: async boom',
    });
    expect(await reported).toBe('uncaughtException');
    const line = lines.find((l) => l.msg.startsWith('uncaught exception in a CPU worker thread'));
    expect(line).toMatchObject({level: 'error', taskId: 'c1', error: {message: 'async boom'}});
    expect(line?.error?.stack).toMatch(/pool-handlers\.js/);
    expect(await run(pool, job('c2', 'pool_ok'))).toEqual({kind: 'success'});
    expect(strays).toEqual(['unhandledRejection', 'uncaughtException']);
  });
});
