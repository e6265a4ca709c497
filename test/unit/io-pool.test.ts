import {describe, it, expect} from 'vitest';
import {createLogger} from '../../src/core/log.js';
import {fakeClock} from '../helpers/clock.js';
import {defineHandlers, TaskResult, UnrecoverableError, type TaskContext} from '../../src/core/worker/handlers.js';
import {createIoPool} from '../../src/core/worker/io-pool.js';
import type {JobResult, PoolJob} from '../../src/core/worker/pool.js';

interface Deferred<T = void> {
  promise: Promise<T>;
  resolve: (v: T) => void;
}
function deferred<T = void>(): Deferred<T> {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return {promise, resolve};
}

/** Handlers whose behaviour each test scripts through `gates`. */
function setup(size: number, capacity: number) {
  const clock = fakeClock();
  const lines: string[] = [];
  const logger = createLogger('debug', {}, (l) => lines.push(l));
  const started = new Map<string, Deferred<TaskContext>>();
  const gates = new Map<string, Deferred>();
  const gate = (id: string): Deferred => gates.get(id) ?? (gates.set(id, deferred()), gates.get(id)!);
  const start = (id: string): Deferred<TaskContext> => started.get(id) ?? (started.set(id, deferred<TaskContext>()), started.get(id)!);
  const counter = {active: 0, max: 0};
  const handlers = defineHandlers({
    test_gate: {
      async execute(ctx) {
        counter.active++;
        counter.max = Math.max(counter.max, counter.active);
        start(ctx.taskId).resolve(ctx);
        try {
          await gate(ctx.taskId).promise;
        } finally {
          counter.active--;
        }
      },
    },
    test_ok: {execute: () => TaskResult.success()},
    test_fail: {execute: () => TaskResult.fail('nope')},
    test_throw_string: {
      execute() {
        throw 'boom';
      },
    },
    test_unrecoverable: {
      execute() {
        throw new UnrecoverableError('bad payload');
      },
    },
  });
  const pool = createIoPool({size, capacity, handlers, clock, logger});
  const job = (taskId: string, type = 'test_gate', timeoutMs = 1000): PoolJob => ({taskId, type, attempt: 1, payload: {}, timeoutMs});
  const run = (taskId: string, type?: string, timeoutMs?: number): Promise<JobResult> => {
    const p = pool.tryRun(job(taskId, type, timeoutMs));
    if (!p) throw new Error(`tryRun(${taskId}) was refused`);
    return p;
  };
  return {pool, clock, lines, counter, gate, start, job, run};
}

describe('io pool', () => {
  it('runs at most `size` handlers at once and refuses work beyond size + capacity', async () => {
    const {pool, counter, gate, start, job, run} = setup(2, 3);
    const ids = ['a', 'b', 'c', 'd', 'e'];
    const results = ids.map((id) => run(id));
    expect(pool.tryRun(job('f'))).toBeNull();
    await Promise.all([start('a').promise, start('b').promise]);
    expect([pool.running, pool.queued]).toEqual([2, 3]);
    for (const id of ids) {
      await start(id).promise;
      expect(counter.active).toBeLessThanOrEqual(2);
      gate(id).resolve();
      await results[ids.indexOf(id)];
      expect(pool.tryRun(job(`late-${id}`, 'test_ok'))).not.toBeNull(); // a slot is free again
    }
    expect(await Promise.all(results)).toEqual(ids.map(() => ({kind: 'success'})));
    expect(counter.max).toBe(2);
  });

  it('normalises handler failures', async () => {
    const {run} = setup(4, 10);
    expect(await run('1', 'test_ok')).toEqual({kind: 'success'});
    expect(await run('2', 'test_fail')).toEqual({kind: 'fail', message: 'nope', unrecoverable: false});
    expect(await run('3', 'test_throw_string')).toEqual({kind: 'fail', message: 'handler threw a non-Error: "boom"', unrecoverable: false});
    expect(await run('4', 'test_unrecoverable')).toEqual({
      kind: 'fail',
      message: 'bad payload',
      unrecoverable: true,
      stack: expect.stringMatching(/^UnrecoverableError: bad payload\n\s+at /),
    });
    expect(await run('5', 'no_such_type')).toEqual({kind: 'fail', message: 'unknown task type', unrecoverable: true});
  });

  it('times out: aborts the signal, resolves at once, frees the slot, warns if the handler settles later', async () => {
    const {pool, clock, lines, gate, start, run} = setup(1, 1);
    const slow = run('slow', 'test_gate', 50);
    const next = run('next', 'test_gate', 5000);
    const ctx = await start('slow').promise;
    clock.advance(49);
    expect(ctx.signal.aborted).toBe(false);
    clock.advance(1);
    expect(await slow).toEqual({kind: 'timeout', message: 'timed out after 50ms'});
    expect(ctx.signal.aborted).toBe(true);
    expect((ctx.signal.reason as DOMException).name).toBe('TimeoutError');
    await start('next').promise; // started although `slow` is still stuck in its handler
    expect(pool.running).toBe(1);
    clock.advance(1001); // settling more than a second after the abort means the handler ignored it
    gate('slow').resolve();
    gate('next').resolve();
    expect(await next).toEqual({kind: 'success'});
    await Promise.resolve();
    expect(lines.some((l) => l.includes('ignored its abort signal') && l.includes('"taskId":"slow"'))).toBe(true);
  });

  it('a signal first read after the timeout is already aborted, also through a spread copy of the context', async () => {
    const {clock, lines, gate, start, run} = setup(1, 1);
    const slow = run('late-reader', 'test_gate', 50);
    const ctx = await start('late-reader').promise;
    clock.advance(50);
    expect(await slow).toMatchObject({kind: 'timeout'});
    const copy = {...ctx, payload: {wrapped: true}};
    expect(copy.signal.aborted).toBe(true);
    expect(ctx.signal.aborted).toBe(true);
    expect((ctx.signal.reason as DOMException).name).toBe('TimeoutError');
    copy.logger.info('from the handler');
    expect(lines.some((l) => l.includes('from the handler') && l.includes('"taskId":"late-reader"') && l.includes('"attempt":1'))).toBe(
      true,
    );
    gate('late-reader').resolve();
  });

  it('does not warn when an aborted handler stops promptly', async () => {
    const {clock, lines, gate, start, run} = setup(1, 1);
    const slow = run('prompt', 'test_gate', 50);
    await start('prompt').promise;
    clock.advance(50);
    expect(await slow).toEqual({kind: 'timeout', message: 'timed out after 50ms'});
    gate('prompt').resolve();
    await Promise.resolve();
    await Promise.resolve();
    expect(lines.some((l) => l.includes('ignored its abort signal'))).toBe(false);
  });

  it('aborts a running or a queued job', async () => {
    const {pool, start, run, counter} = setup(1, 1);
    const a = run('a');
    const b = run('b');
    const ctx = await start('a').promise;
    pool.abort('b', 'lease lost');
    expect(await b).toEqual({kind: 'aborted', message: 'lease lost'});
    pool.abort('a', 'lease lost');
    expect(await a).toEqual({kind: 'aborted', message: 'lease lost'});
    expect(ctx.signal.aborted).toBe(true);
    expect([pool.running, pool.queued]).toEqual([0, 0]);
    expect(counter.max).toBe(1); // `b` never started
  });

  it('cancel: aborts the signal with the reason; a handler that stops within the grace period ends with its own result', async () => {
    const {pool, clock, lines, gate, start, run} = setup(1, 1);
    const a = run('a', 'test_gate', 60_000);
    const ctx = await start('a').promise;
    expect(pool.cancel!('a', 'cancelled by alice: refunded', 500)).toBe(true);
    expect(ctx.signal.aborted).toBe(true);
    expect((ctx.signal.reason as DOMException).message).toBe('cancelled by alice: refunded');
    clock.advance(499);
    expect(pool.running).toBe(1); // within the grace period the handler keeps its slot
    gate('a').resolve(); // it honoured the signal
    expect(await a).toEqual({kind: 'success'});
    expect(pool.running).toBe(0);
    expect(clock.pending()).toBe(0); // its timeout and grace timers are gone
    expect(lines.some((l) => l.includes('ignored its cancel'))).toBe(false);
    expect(pool.cancel!('zz', 'x', 500)).toBe(false); // not in this pool
  });

  it('cancel: a handler that ignores its signal is stopped at the end of the grace period like a timeout', async () => {
    const {pool, clock, lines, start, run} = setup(1, 1);
    const a = run('a', 'test_gate', 60_000);
    const b = run('b', 'test_ok');
    await start('a').promise;
    pool.cancel!('a', 'cancelled by alice', 500);
    clock.advance(499);
    expect(pool.running).toBe(1);
    clock.advance(1);
    expect(await a).toEqual({kind: 'aborted', message: 'cancelled by alice (still running after the cancel grace period of 500ms)'});
    expect(lines.some((l) => l.includes('handler ignored its cancel'))).toBe(true);
    // Its slot is free: the queued job runs.
    expect(await b).toEqual({kind: 'success'});
  });

  it('cancel of a queued job ends it at once, never started', async () => {
    const {pool, start, run, counter, gate} = setup(1, 1);
    const a = run('a');
    const b = run('b');
    await start('a').promise;
    expect(pool.cancel!('b', 'cancelled by bob', 500)).toBe(true);
    expect(await b).toEqual({kind: 'aborted', message: 'cancelled by bob'});
    gate('a').resolve();
    expect(await a).toEqual({kind: 'success'});
    expect(counter.max).toBe(1);
  });

  it('drain lets jobs finish within the grace period', async () => {
    const {pool, clock, gate, start, job, run} = setup(1, 1);
    const a = run('a');
    const b = run('b');
    const drained = pool.drain(100);
    expect(pool.tryRun(job('c', 'test_ok'))).toBeNull();
    await start('a').promise;
    gate('a').resolve();
    await start('b').promise; // queued jobs still start while draining
    gate('b').resolve();
    expect(await drained).toEqual({notStarted: []});
    expect(await Promise.all([a, b])).toEqual([{kind: 'success'}, {kind: 'success'}]);
    expect(clock.pending()).toBe(0);
  });

  it('drain aborts what still runs at the deadline and returns the jobs never started', async () => {
    const {pool, clock, start, run, counter} = setup(1, 2);
    const a = run('a');
    const b = run('b');
    const c = run('c');
    const ctx = await start('a').promise;
    const drained = pool.drain(100);
    clock.advance(100);
    expect(await drained).toEqual({notStarted: ['b', 'c']});
    expect(await a).toEqual({kind: 'aborted', message: 'shutdown grace period of 100ms expired'});
    expect(ctx.signal.aborted).toBe(true);
    expect(await Promise.all([b, c])).toEqual([
      {kind: 'aborted', message: 'not started'},
      {kind: 'aborted', message: 'not started'},
    ]);
    await new Promise((r) => setImmediate(r));
    expect(counter).toEqual({active: 1, max: 1}); // `a` still stuck in its handler; `b`, `c` never ran
    expect([pool.running, pool.queued]).toEqual([0, 0]);
  });

  it('drain of an idle pool resolves at once', async () => {
    const {pool} = setup(1, 1);
    expect(await pool.drain(1000)).toEqual({notStarted: []});
  });
});
