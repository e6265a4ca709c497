/**
 * The test kit's runTask (ax-executor/testing): the fake context, the timeout on the fake clock,
 * the worker's normalisation of what a handler does and its decision (retry / dead), progress
 * validation, and bad options.
 */
import {describe, expect, it} from 'vitest';
import {isAxError} from '../../src/core/errors.js';
import {retryDelayBounds} from '../../src/core/retry/backoff.js';
import {MAX_PROGRESS_NOTE_LENGTH, validateProgress} from '../../src/core/task/progress.js';
import {createTestClock, defineHandlers, runTask, TaskResult, UnrecoverableError, type TestTaskContext} from '../../src/testing.js';
import {silentLogger} from '../../src/core/log.js';
import type {HandlerDefinition, TaskContext} from '../../src/core/worker/handlers.js';
import {createIoPool} from '../../src/core/worker/io-pool.js';
import {decideOutcome} from '../../src/core/worker/outcome.js';
import {fakeClock} from '../helpers/clock.js';
import {expectInvalid} from '../helpers/expect.js';

const PARENT = '01900000-0000-7000-8000-000000000001';

async function rejectsInvalid(p: Promise<unknown>, re: RegExp): Promise<void> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(isAxError(e, 'invalid_input'), String(e)).toBe(true);
  expect((e as Error).message).toMatch(re);
}

describe('runTask: the fake context', () => {
  it('gives the handler its id, type, attempt, a JSON copy of the payload, parents, replay, a live signal and a recording logger', async () => {
    let seen: TestTaskContext | undefined;
    const payload = {order: 42, lines: [{sku: 'a', qty: 2}]};
    const replay = {by: 'ops', at: new Date('2026-01-01T00:00:00Z'), reason: 'refund again'};
    const run = await runTask(
      defineHandlers({
        order_notify: {
          execute(ctx) {
            seen = ctx as TestTaskContext;
            ctx.logger.info('sending', {to: 'a@b.c'});
            ctx.logger.child({step: 2}).warn('slow');
          },
        },
      }),
      {payload, attempt: 3, parents: {[PARENT]: {type: 'order_pay', state: 'succeeded', result: {paid: true}}}, replay},
    );
    expect(seen!.type).toBe('order_notify');
    expect(seen!.taskId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/);
    expect(run.taskId).toBe(seen!.taskId);
    expect(seen!.attempt).toBe(3);
    expect(seen!.payload).toEqual(payload);
    expect(seen!.payload).not.toBe(payload);
    expect(seen!.parents).toEqual({[PARENT]: {type: 'order_pay', state: 'succeeded', result: {paid: true}}});
    expect(seen!.replay).toEqual(replay);
    expect(seen!.signal).toBeInstanceOf(AbortSignal);
    expect(seen!.signal.aborted).toBe(false);
    expect(run.logs).toEqual([
      {level: 'info', msg: 'sending', fields: {to: 'a@b.c'}},
      {level: 'warn', msg: 'slow', fields: {step: 2}},
    ]);
    expect(run).toMatchObject({outcome: {ok: true}, ended: 'settled', state: 'succeeded', next: {action: 'complete'}});
    expect(run.result).toBeUndefined();
  });

  it('parents default to an empty object; a parent without a result has result null', async () => {
    const none = await runTask((ctx) => void ctx);
    expect(none.context.parents).toEqual({});
    const one = await runTask(() => undefined, {parents: {[PARENT]: {type: 'order_pay', state: 'dead'}}});
    expect(one.context.parents[PARENT]).toEqual({type: 'order_pay', state: 'dead', result: null});
  });

  it('returns the result the handler returned with its success', async () => {
    const run = await runTask(() => ({ok: true, result: {total: 7}}) as ReturnType<typeof TaskResult.success>);
    expect(run.outcome.ok).toBe(true);
    expect(run.result).toEqual({total: 7});
    expect((await runTask(() => TaskResult.success())).result).toBeUndefined();
    const notJson = await runTask(() => ({ok: true, result: {n: 1n}}) as never);
    expect(notJson.outcome).toMatchObject({ok: false, unrecoverable: true, message: expect.stringMatching(/^result is not JSON/)});
    expect(notJson.next).toMatchObject({action: 'dead', error: expect.stringMatching(/^result is not JSON/)});
    const big = await runTask(() => ({ok: true, result: 'x'.repeat(70_000)}));
    expect(big.outcome).toMatchObject({ok: false, unrecoverable: true, message: expect.stringMatching(/over the 64 KiB limit/)});
    expect(big.result).toBeUndefined();
  });
});

describe('runTask: outcomes and what the worker does next', () => {
  it('a thrown error is a failure with its name and stack, retried as attempt n+1 after the backoff', async () => {
    const run = await runTask(
      () => {
        throw new TypeError('boom');
      },
      {attempt: 2, maxRetries: 3, retry: {baseMs: 1000, maxMs: 60_000}},
    );
    expect(run.outcome).toMatchObject({ok: false, message: 'TypeError: boom', unrecoverable: false});
    expect((run.outcome as {stack?: string}).stack).toContain('TypeError: boom');
    expect(run.state).toBe('failed');
    expect(run.next).toEqual({action: 'retry', attempt: 3, delayMs: 2000, error: 'TypeError: boom'});
    // With the worker's jitter: within its bounds.
    const jittered = await runTask(
      () => {
        throw new Error('x');
      },
      {attempt: 2, random: () => 0.999},
    );
    const [lo, hi] = retryDelayBounds(2, {baseMs: 1000, maxMs: 3_600_000});
    expect(jittered.next.action).toBe('retry');
    const delay = (jittered.next as {delayMs: number}).delayMs;
    expect(delay).toBeGreaterThan(lo);
    expect(delay).toBeLessThanOrEqual(hi);
  });

  it('the last attempt that fails is dead, with the worker’s message', async () => {
    const run = await runTask(() => TaskResult.fail('downstream 503'), {attempt: 4, maxRetries: 3});
    expect(run.state).toBe('dead');
    expect(run.next).toEqual({action: 'dead', error: 'downstream 503 (attempt 4 of 4, no retries left)'});
  });

  it('an UnrecoverableError (or TaskResult.unrecoverable) is dead at once, whatever the attempt', async () => {
    const thrown = await runTask(() => {
      throw new UnrecoverableError('no such order');
    });
    expect(thrown.outcome).toMatchObject({ok: false, message: 'no such order', unrecoverable: true});
    expect(thrown.next).toEqual({action: 'dead', error: 'no such order'});
    const returned = await runTask(() => TaskResult.unrecoverable('bad payload'));
    expect(returned.state).toBe('dead');
  });

  it('a thrown non-Error and a value that is not a TaskResult fail as the worker says', async () => {
    const nonError = await runTask(() => {
      throw {code: 7};
    });
    expect(nonError.outcome).toEqual({ok: false, message: 'handler threw a non-Error: {"code":7}', unrecoverable: false});
    const odd = await runTask(() => 42 as never);
    expect(odd.outcome).toEqual({ok: false, message: 'handler returned something that is not a TaskResult', unrecoverable: false});
  });
});

describe('runTask: timeout and abort', () => {
  it('the timeout fires on the fake clock: the signal aborts with a TimeoutError and the attempt fails as a timeout', async () => {
    const clock = createTestClock();
    let signal: AbortSignal | undefined;
    const running = runTask(
      {
        timeout: '30s',
        execute: (ctx) =>
          new Promise<void>((_, reject) => {
            signal = ctx.signal;
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error));
          }),
      },
      {clock, timeout: '5s'},
    );
    await clock.advance(4999);
    expect(signal!.aborted).toBe(false);
    await clock.advance(1);
    const run = await running;
    expect(signal!.aborted).toBe(true);
    expect((signal!.reason as DOMException).name).toBe('TimeoutError');
    expect(run.ended).toBe('timeout');
    expect(run.outcome).toEqual({ok: false, message: 'timed out after 5000ms', unrecoverable: false});
    expect(run.next).toMatchObject({action: 'retry', attempt: 2, error: 'timeout: timed out after 5000ms'});
    expect(clock.pending()).toBe(0);
  });

  it("the handler's own timeout applies when the task gives none", async () => {
    const clock = createTestClock();
    const running = runTask({timeout: 250, execute: () => new Promise<void>(() => undefined)}, {clock});
    await clock.advance(250);
    expect((await running).outcome).toMatchObject({message: 'timed out after 250ms'});
  });

  it("the test's signal aborts ctx.signal and ends the attempt as aborted", async () => {
    const ac = new AbortController();
    let signal: AbortSignal | undefined;
    const running = runTask(
      (ctx) => {
        signal = ctx.signal;
        return new Promise<void>(() => undefined);
      },
      {signal: ac.signal},
    );
    await Promise.resolve();
    ac.abort(new Error('shutdown'));
    const run = await running;
    expect(signal!.aborted).toBe(true);
    expect(run.ended).toBe('aborted');
    expect(run.next).toMatchObject({action: 'retry', error: 'aborted: shutdown'});
  });
});

describe('runTask: progress', () => {
  it('records every accepted call with its time on the clock', async () => {
    const clock = createTestClock(Date.UTC(2026, 5, 1));
    const run = await runTask(
      (ctx) => {
        ctx.progress(0);
        ctx.progress(49.6, 'half');
        ctx.progress(100, 'done');
      },
      {clock},
    );
    const at = Date.UTC(2026, 5, 1);
    expect(run.progress).toEqual([
      {percent: 0, note: null, atMs: at},
      {percent: 50, note: 'half', atMs: at},
      {percent: 100, note: 'done', atMs: at},
    ]);
  });

  it('refuses what the worker refuses: a throw inside the handler, nothing recorded', async () => {
    for (const [args, re] of [
      [[101], /from 0 to 100/],
      [[-1], /from 0 to 100/],
      [[Number.NaN], /from 0 to 100/],
      [['50'], /from 0 to 100/],
      [[10, 'x'.repeat(MAX_PROGRESS_NOTE_LENGTH + 1)], /note must be at most 200 characters/],
      [[10, 5], /note must be a string/],
    ] as const) {
      const run = await runTask((ctx) => (ctx.progress as (...a: unknown[]) => void)(...args));
      expect(run.outcome.ok).toBe(false);
      expect((run.outcome as {message: string}).message).toMatch(re);
      expect(run.progress).toEqual([]);
    }
    expect(validateProgress(100, 'x'.repeat(MAX_PROGRESS_NOTE_LENGTH))).toEqual({percent: 100, note: 'x'.repeat(200)});
    expectInvalid(() => validateProgress(Infinity), /from 0 to 100/);
  });
});

describe('runTask: bad input', () => {
  it('refuses bad options before the handler runs', async () => {
    let ran = 0;
    const h = defineHandlers({order_notify: {execute: () => void ran++}, order_pay: {execute: () => void ran++}});
    await rejectsInvalid(runTask(h), /give the type to run: one of order_notify, order_pay/);
    await rejectsInvalid(runTask(h, {type: 'order_ship'}), /no handler for task type order_ship/);
    await rejectsInvalid(runTask(h, {type: 'order_pay', payload: [] as never}), /payload must be a JSON object/);
    await rejectsInvalid(runTask(h, {type: 'order_pay', payload: {n: Infinity}}), /non-finite number/);
    await rejectsInvalid(runTask(h, {type: 'order_pay', attempt: 0}), /attempt/);
    await rejectsInvalid(runTask(h, {type: 'order_pay', maxRetries: 101}), /maxRetries/);
    await rejectsInvalid(runTask(h, {type: 'order_pay', timeout: 'soon'}), /timeout "soon" is not a duration/);
    await rejectsInvalid(runTask(h, {type: 'order_pay', parents: {nope: {type: 'order_pay', state: 'succeeded'}}}), /not a task id/);
    await rejectsInvalid(
      runTask(h, {type: 'order_pay', parents: {[PARENT]: {type: 'order_pay', state: 'running' as never}}}),
      /state must be/,
    );
    await rejectsInvalid(
      runTask(() => undefined, {type: 'Bad'}),
      /not domain_action/,
    );
    await rejectsInvalid(runTask({} as never), /must have an execute/);
    expect(ran).toBe(0);
  });
});

describe('runTask: the same as the worker', () => {
  it("gives every field of the IO pool's context, and decides as the worker decides for the same handler", async () => {
    const behaviours: Record<string, HandlerDefinition['execute']> = {
      job_ok: () => undefined,
      job_fail: () => TaskResult.fail('nope'),
      job_throw: () => {
        throw new RangeError('out');
      },
      job_dead: () => {
        throw new UnrecoverableError('gone');
      },
      job_odd: () => 'yes' as never,
    };
    const keys: Record<string, string[]> = {};
    const handlers = defineHandlers(
      Object.fromEntries(
        Object.entries(behaviours).map(([type, run]) => [
          type,
          {
            execute: (ctx: TaskContext) => {
              keys[ctx.taskId] = Object.keys(ctx);
              return run(ctx);
            },
          },
        ]),
      ),
    );
    const clock = fakeClock();
    const pool = createIoPool({size: 1, capacity: 10, handlers, clock, logger: silentLogger});
    const backoff = {baseMs: 1000, maxMs: 3_600_000};
    for (const type of Object.keys(behaviours)) {
      const taskId = `0190000${Object.keys(behaviours).indexOf(type)}-0000-7000-8000-000000000000`;
      const result = await pool.tryRun({taskId, type, attempt: 2, payload: {}, timeoutMs: 1000})!;
      const worker = decideOutcome({id: taskId, fence: 0, attempt: 2, maxRetries: 3, retryBase: 0}, result, backoff, () => 0);
      const run = await runTask(handlers, {type, attempt: 2, maxRetries: 3, taskId: taskId.replace(/^0/, '1')});
      const expected =
        worker.kind === 'complete'
          ? {action: 'complete'}
          : worker.kind === 'fail'
            ? {action: 'retry', attempt: 3, delayMs: worker.retryDelayMs, error: worker.error}
            : {action: 'dead', error: (worker as {error: string}).error};
      expect(run.next, type).toEqual(expected);
      expect(keys[taskId], 'the pool ran it').toContain('signal');
      expect(keys[run.taskId]).toEqual(expect.arrayContaining(keys[taskId]!));
    }
  });
});
