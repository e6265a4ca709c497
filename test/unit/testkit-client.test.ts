/**
 * The test kit's in-process client (createTestClient): submits validated as the real client does,
 * tasks run in the test's process on a fake clock (handlers' own submits, retries with backoff,
 * delays, dependencies), and what ran is there to assert.
 */
import {describe, expect, it} from 'vitest';
import type {AxClient} from '../../src/core/client.js';
import {isAxError} from '../../src/core/errors.js';
import type {JsonValue} from '../../src/core/task/model.js';
import {
  createTestClient,
  createTestClock,
  defineHandlers,
  TaskResult,
  UnrecoverableError,
  type TaskOutcome,
  type TestClient,
} from '../../src/testing.js';

/** A success with a result, in the form handlers may return (`{ok: true, result}`). */
const withResult = (result: JsonValue): TaskOutcome => ({ok: true, result}) as TaskOutcome;

async function rejects(p: Promise<unknown>, code: string, re: RegExp): Promise<void> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(isAxError(e), String(e)).toBe(true);
  expect((e as {code: string}).code).toBe(code);
  expect((e as Error).message).toMatch(re);
}

describe('createTestClient: running what is submitted', () => {
  it('runs a chain of submits made by handlers, in order, and records who submitted what', async () => {
    // The application code under test takes its client, as it would take connect()'s.
    const app = (ax: Pick<AxClient, 'submit'>) =>
      defineHandlers({
        order_place: {execute: async (ctx) => void (await ax.submit({type: 'order_pay', payload: {order: ctx.payload.order!}}))},
        order_pay: {execute: async (ctx) => void (await ax.submit({type: 'order_ship', payload: ctx.payload}))},
        order_ship: {execute: (ctx) => withResult({shipped: ctx.payload.order!})},
      });
    const client: TestClient = createTestClient({handlers: app({submit: (t) => client.submit(t)})});
    const first = await client.submit({type: 'order_place', payload: {order: 42}});
    expect(await client.flush()).toEqual({inserted: 1, existing: 0, unpublished: 0, conflicts: []});
    const report = await client.drain();
    expect(report).toEqual({attempts: 3, unfinished: []});
    expect(client.ran().map((r) => r.type)).toEqual(['order_place', 'order_pay', 'order_ship']);
    const [place, pay, ship] = client.tasks;
    expect([place!.id, place!.submittedBy, pay!.submittedBy, ship!.submittedBy]).toEqual([first, null, place!.id, pay!.id]);
    expect(client.tasks.map((t) => t.state)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(ship!.result).toEqual({shipped: 42});
    expect(client.ran('order_ship')[0]!.payload).toEqual({order: 42});
    expect(await client.flush()).toMatchObject({inserted: 2});
  });

  it('retries with the backoff on the fake clock, without sleeping', async () => {
    let calls = 0;
    const clock = createTestClock();
    const start = clock.now();
    const client = createTestClient({
      clock,
      retry: {baseMs: 1000},
      handlers: {
        mail_send: {
          execute() {
            if (++calls < 3) throw new Error(`smtp down (${calls})`);
          },
        },
      },
    });
    const id = await client.submit({type: 'mail_send', payload: {to: 'a@b.c'}, maxRetries: 5});
    expect(await client.runDue()).toEqual({attempts: 1, unfinished: [id]});
    expect(client.task(id)).toMatchObject({state: 'failed', attempt: 1, lastError: 'Error: smtp down (1)'});
    expect(client.task(id).runAt.getTime()).toBe(start + 1000);
    expect((await client.runDue()).attempts).toBe(0); // not due yet: time stands still
    expect(await client.drain()).toEqual({attempts: 2, unfinished: []});
    expect(clock.now() - start).toBe(1000 + 2000);
    expect(client.task(id)).toMatchObject({state: 'succeeded', attempt: 3});
    expect(client.task(id).history.map((h) => `${h.from}>${h.to}@${h.at.getTime() - start}`)).toEqual([
      'submitted>running@0',
      'running>failed@0',
      'failed>running@1000',
      'running>failed@1000',
      'failed>running@3000',
      'running>succeeded@3000',
    ]);
    expect(client.ran().map((r) => r.next.action)).toEqual(['retry', 'retry', 'complete']);
  });

  it('dead-letters after the last retry, and at once on an UnrecoverableError', async () => {
    const client = createTestClient({
      handlers: {
        feed_fetch: {execute: () => TaskResult.fail('503')},
        feed_parse: {
          execute() {
            throw new UnrecoverableError('not XML');
          },
        },
      },
    });
    const fetch = await client.submit({type: 'feed_fetch', maxRetries: 2});
    const parse = await client.submit({type: 'feed_parse'});
    await client.drain();
    expect(client.task(fetch)).toMatchObject({state: 'dead', attempt: 3, lastError: '503 (attempt 3 of 3, no retries left)'});
    expect(client.task(parse)).toMatchObject({state: 'dead', attempt: 1, lastError: 'not XML'});
  });

  it('runs a delayed task once the clock reaches it', async () => {
    const clock = createTestClock();
    const client = createTestClient({clock, handlers: {report_build: {execute: () => undefined}}});
    const id = await client.submit({type: 'report_build', delay: '10m'});
    expect((await client.runDue()).attempts).toBe(0);
    await clock.advance('9m');
    expect((await client.runDue()).attempts).toBe(0);
    await clock.advance('1m');
    expect((await client.runDue()).attempts).toBe(1);
    expect(client.task(id).state).toBe('succeeded');
  });

  it('runs dependencies in order; a dependent sees its parents; a dead parent cancels its dependents unless they run anyway', async () => {
    const seen: Record<string, unknown> = {};
    const client = createTestClient({
      handlers: {
        step_ok: {execute: (ctx) => withResult({n: ctx.payload.n!})},
        step_bad: {execute: () => TaskResult.unrecoverable('no')},
        step_join: {execute: (ctx) => void (seen[ctx.taskId] = (ctx as unknown as {parents: unknown}).parents)},
      },
    });
    // A diamond: a → b, c → d, submitted with d first in due order (a later delay on a).
    const a = await client.submit({type: 'step_ok', payload: {n: 1}, delay: 5});
    const b = await client.submit({type: 'step_ok', payload: {n: 2}, after: [a]});
    const c = await client.submit({type: 'step_ok', payload: {n: 3}, after: [a]});
    const d = await client.submit({type: 'step_join', after: [b, c]});
    // A failed parent: its dependent is cancelled (and that one's dependent too); with 'run' it runs.
    const bad = await client.submit({type: 'step_bad'});
    const cancelled = await client.submit({type: 'step_join', after: [bad]});
    const cascade = await client.submit({type: 'step_join', after: [cancelled]});
    const anyway = await client.submit({type: 'step_join', after: [bad], onParentFailure: 'run'});
    await client.drain();
    const order = client.ran().map((r) => r.taskId);
    expect(order.indexOf(a)).toBeLessThan(order.indexOf(b));
    expect(order.indexOf(c)).toBeLessThan(order.indexOf(d));
    expect(seen[d]).toEqual({
      [b]: {type: 'step_ok', state: 'succeeded', result: {n: 2}},
      [c]: {type: 'step_ok', state: 'succeeded', result: {n: 3}},
    });
    expect(client.task(cancelled)).toMatchObject({state: 'cancelled', lastError: `parent ${bad} ended dead`});
    expect(client.task(cascade)).toMatchObject({state: 'cancelled', lastError: `parent ${cancelled} ended cancelled`});
    expect(client.task(anyway).state).toBe('succeeded');
    expect(seen[anyway]).toEqual({[bad]: {type: 'step_bad', state: 'dead', result: null}});
    expect(order).not.toContain(cancelled);
  });

  it('leaves tasks without a handler submitted, as a worker without them would', async () => {
    const client = createTestClient({handlers: {order_pay: {execute: () => undefined}}});
    const other = await client.submit({type: 'invoice_send'});
    expect(await client.drain()).toEqual({attempts: 0, unfinished: [other]});
    expect(client.task(other).state).toBe('submitted');
  });

  it('stops a handler that resubmits itself forever', async () => {
    const client: TestClient = createTestClient({
      handlers: {loop_again: {execute: async () => void (await client.submit({type: 'loop_again'}))}},
    });
    await client.submit({type: 'loop_again'});
    await rejects(client.drain({maxAttempts: 50}), 'internal', /after 50 attempts/);
    expect(client.ran()).toHaveLength(50);
  });
});

describe('createTestClient: the client surface', () => {
  it('dedup keys return the existing task; other content under the same key is a conflict flush() throws', async () => {
    const client = createTestClient({handlers: {credit_grant: {execute: () => undefined}}});
    const one = await client.submit({type: 'credit_grant', payload: {user: 7}, dedupKey: 'signup:7'});
    const again = await client.submit({type: 'credit_grant', payload: {user: 7}, dedupKey: 'signup:7'});
    expect(again).toBe(one);
    expect(await client.flush()).toMatchObject({inserted: 1, existing: 1});
    await client.submit({type: 'credit_grant', payload: {user: 8}, dedupKey: 'signup:7'});
    await rejects(client.flush(), 'conflict', /1 task\(s\) refused/);
    expect(client.tasks).toHaveLength(1);
  });

  it('throttle keeps the first of a window; debounce runs the last', async () => {
    const clock = createTestClock();
    const client = createTestClient({clock, handlers: {search_index: {execute: () => undefined}}});
    const kept = await client.submit({type: 'search_index', throttle: {key: 'doc:1', window: '1m'}});
    const dropped = await client.submit({type: 'search_index', throttle: {key: 'doc:1', window: '1m'}});
    expect((await client.flush()).throttled).toEqual([{id: dropped, keptId: kept, key: 'doc:1'}]);
    const first = await client.submit({type: 'search_index', payload: {v: 1}, debounce: {key: 'doc:2', window: '5s'}});
    const last = await client.submit({type: 'search_index', payload: {v: 2}, debounce: {key: 'doc:2', window: '5s'}});
    await client.drain();
    expect(client.task(first)).toMatchObject({state: 'cancelled', lastError: `replaced by ${last} (debounce)`});
    expect(client.task(last).state).toBe('succeeded');
    expect(client.ran().map((r) => r.taskId)).toEqual([kept, last]);
  });

  it('cancel: a waiting task is cancelled; a running one has its signal aborted; unknown and finished ids are refused', async () => {
    let aborted = false;
    const client: TestClient = createTestClient({
      handlers: {
        job_slow: {
          execute: async (ctx) => {
            ctx.signal.addEventListener('abort', () => (aborted = true));
            await client.cancel(ctx.taskId, 'changed my mind');
          },
        },
      },
    });
    const waiting = await client.submit({type: 'job_slow', delay: '1h'});
    expect(await client.cancel(waiting)).toEqual({id: waiting, from: 'submitted'});
    const running = await client.submit({type: 'job_slow'});
    await client.drain();
    expect(aborted).toBe(true);
    expect(client.task(running)).toMatchObject({state: 'cancelled', lastError: 'cancelled: changed my mind'});
    await rejects(client.cancel(running), 'conflict', /is cancelled/);
    await rejects(client.cancel('01900000-0000-7000-8000-0000000000ff'), 'not_found', /no task/);
    await rejects(client.cancel('nope'), 'invalid_input', /not a task id/);
  });

  it('refuses bad input as the real client does, and stores nothing', async () => {
    const client = createTestClient({handlers: {order_pay: {execute: () => undefined}}});
    const ok = await client.submit({type: 'order_pay'});
    const bad: Array<[unknown, RegExp]> = [
      [{type: 'OrderPay'}, /not domain_action/],
      [{type: 'order_pay', dealy: '5s'}, /unknown task field "dealy"/],
      [{type: 'order_pay', payload: {big: 'x'.repeat(70_000)}}, /over the limit of 65536 bytes/],
      [{type: 'order_pay', maxRetries: -1}, /maxRetries/],
      [{type: 'order_pay', delay: '5s', runAt: new Date()}, /either delay or runAt/],
      [{type: 'order_pay', after: ['01900000-0000-7000-8000-0000000000ff']}, /after: unknown task/],
      [{type: 'order_pay', after: [ok, ok]}, /after names a task twice/],
      [{type: 'order_pay', after: []}, /non-empty list/],
      [{type: 'order_pay', after: [ok], delay: '5s'}, /either after or delay/],
      [{type: 'order_pay', onParentFailure: 'run'}, /only for a task with after/],
      [{type: 'order_pay', after: 'x'}, /after must be a non-empty list/],
      [{type: 'order_pay', after: [ok], onParentFailure: 'ignore'}, /onParentFailure must be cancel or run/],
      [null, /a task must be an object/],
    ];
    for (const [spec, re] of bad) await rejects(client.submit(spec as never), 'invalid_input', re);
    const self = '01900000-0000-7000-8000-00000000abcd';
    await rejects(client.submit({type: 'order_pay', id: self, after: [self]}), 'invalid_input', /waits for itself/);
    expect(client.tasks.map((t) => t.id)).toEqual([ok]);
    expect(() => createTestClient({handlers: {Bad: {execute: () => undefined}}})).toThrow(/not domain_action/);
    await client.close();
    await rejects(client.submit({type: 'order_pay'}), 'closed', /closed/);
  });
});

describe('createTestClient: submitBatch', () => {
  const ID = (n: number): string => `01900000-0000-7000-8000-${String(n).padStart(12, '0')}`;

  it('writes tasks that name each other in any order; the callback runs once, after all ended, with the counts', async () => {
    const client = createTestClient({
      handlers: {
        part_ok: {execute: () => undefined},
        part_bad: {execute: () => TaskResult.unrecoverable('no')},
        parts_done: {execute: () => undefined},
      },
    });
    // The dependent first, its parent after it; one part fails, its dependent is cancelled.
    const r = await client.submitBatch(
      [
        {type: 'part_ok', id: ID(2), after: [ID(1)]},
        {type: 'part_ok', id: ID(1)},
        {type: 'part_bad', id: ID(3)},
        {type: 'part_ok', id: ID(4), after: [ID(3)]},
      ],
      {callback: {type: 'parts_done', payload: {report: 9}}},
    );
    expect(r).toMatchObject({ids: [ID(2), ID(1), ID(3), ID(4)], inserted: 4, existing: 0, conflicts: []});
    expect(await client.batch(r.batchId!)).toMatchObject({total: 4, succeeded: 0, callbackState: 'submitted', doneAt: null});
    await client.drain();
    const order = client.ran().map((x) => x.taskId);
    expect(order.indexOf(ID(1))).toBeLessThan(order.indexOf(ID(2)));
    expect(order.at(-1)).toBe(r.callbackId);
    expect(client.ran('parts_done')).toHaveLength(1);
    expect(client.ran('parts_done')[0]!.payload).toEqual({
      report: 9,
      batch: {id: r.batchId, total: 4, succeeded: 2, dead: 1, cancelled: 1},
    });
    expect(await client.batch(r.batchId!)).toMatchObject({succeeded: 2, dead: 1, cancelled: 1, callbackState: 'succeeded'});
    await rejects(client.batch(ID(99)), 'not_found', /no batch/);
  });

  it('refuses a bad batch, and writes none of it', async () => {
    const client = createTestClient({handlers: {part_ok: {execute: () => undefined}}});
    const bad: Array<[unknown[], unknown, RegExp]> = [
      [[], undefined, /at least one task/],
      [
        [
          {type: 'part_ok', id: ID(1), after: [ID(2)]},
          {type: 'part_ok', id: ID(2), after: [ID(1)]},
        ],
        undefined,
        /cycle/,
      ],
      [[{type: 'part_ok', after: [ID(7)]}], undefined, /unknown task/],
      [[{type: 'part_ok'}, {type: 'nope'}], undefined, /^task 1: task type "nope"/],
      [
        [
          {type: 'part_ok', id: ID(1)},
          {type: 'part_ok', id: ID(1)},
        ],
        undefined,
        /given twice in the batch/,
      ],
      [[{type: 'part_ok', throttle: {key: 'k', window: '1s'}}], undefined, /not for submitBatch/],
      [[{type: 'part_ok', id: ID(1)}], {type: 'part_ok', after: [ID(1)]}, /callback: a batch callback waits for its batch/],
      [[{type: 'part_ok'}], {type: 'part_ok', delay: '1s'}, /give it no delay/],
      [[{type: 'part_ok'}], {type: 'part_ok', payload: {batch: 1}}, /"batch" key/],
    ];
    for (const [specs, callback, re] of bad)
      await rejects(client.submitBatch(specs as never, callback === undefined ? {} : {callback: callback as never}), 'invalid_input', re);
    expect(client.tasks).toEqual([]);
  });
});
