/**
 * The admin side of cancelling (core/inspect/cancel.ts, cancel-many.ts) over fake stores: what is
 * asked of the store, when the workers are told, a failed notice reported (never thrown: the
 * cancel has committed), and bad input refused before the store is called.
 */
import {describe, expect, it} from 'vitest';
import type {ControlMessage} from '../../src/core/broker/types.js';
import {isAxError} from '../../src/core/errors.js';
import {CANCEL_BATCH, parseCancelMany, runCancelMany} from '../../src/core/inspect/cancel-many.js';
import {cancelTask, MAX_CANCEL_REASON} from '../../src/core/inspect/cancel.js';
import type {CancelledTask, TasksCancelManyParams, TasksCancelParams} from '../../src/core/store/types.js';

const ID = '01900000-0000-7000-8000-000000000001';
const code = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (isAxError(e) ? e.code : 'other'),
  );

describe('cancelTask', () => {
  it('asks for a running task too, tells the workers of the attempt it stopped, and reports a failed notice', async () => {
    const asked: TasksCancelParams[] = [];
    const store = {
      tasksCancel: async (p: TasksCancelParams) => {
        asked.push(p);
        return {from: 'running' as const, cancelled: true, stopped: {id: ID, fence: 5, attempt: 2, worker: 'w:1'}};
      },
    };
    const sent: ControlMessage[] = [];
    const r = await cancelTask(store, ID, 'cli:1', 'refunded', 'alice', {publishControl: async (m) => void sent.push(m)});
    expect(asked[0]).toMatchObject({id: ID, running: true, audit: {operator: 'alice', command: 'tasks cancel'}});
    expect(r).toEqual({id: ID, from: 'running', stopped: {worker: 'w:1', attempt: 2}, notified: true});
    expect(sent).toEqual([{kind: 'cancel', tasks: [{id: ID, fence: 5}], by: 'alice', reason: 'refunded'}]);
    const down = await cancelTask(store, ID, 'cli:1', null, 'alice', {
      publishControl: async () => {
        throw new Error('RabbitMQ down');
      },
    });
    expect(down).toMatchObject({notified: false, notifyError: 'RabbitMQ down'});
  });

  it('a waiting task needs no notice; finished, unknown and bad input are refused', async () => {
    let calls = 0;
    const store = (from: 'submitted' | 'succeeded' | null) => ({
      tasksCancel: async () => (calls++, {from, cancelled: from === 'submitted'}),
    });
    const never = {publishControl: async () => expect.unreachable('no notice for a waiting task')};
    expect(await cancelTask(store('submitted'), ID, 'cli:1', null, 'alice', never)).toEqual({id: ID, from: 'submitted'});
    expect(await code(cancelTask(store('succeeded'), ID, 'cli:1', null, 'alice'))).toBe('conflict');
    expect(await code(cancelTask(store(null), ID, 'cli:1', null, 'alice'))).toBe('not_found');
    const before = calls;
    expect(await code(cancelTask(store('submitted'), ID, 'cli:1', 'x'.repeat(MAX_CANCEL_REASON + 1), 'alice'))).toBe('invalid_input');
    expect(await code(cancelTask(store('submitted'), 'nope', 'cli:1', null, 'alice'))).toBe('invalid_input');
    expect(calls).toBe(before);
  });
});

describe('runCancelMany', () => {
  it('accepts running in --state, and tells the workers of the running attempts of each batch', async () => {
    expect(parseCancelMany({type: 'order_notify', state: 'running,submitted'})).toEqual({
      type: 'order_notify',
      states: ['running', 'submitted'],
    });
    const batches: CancelledTask[][] = [
      Array.from({length: CANCEL_BATCH}, (_, i) =>
        i < 2
          ? {id: `r${i}`, from: 'running' as const, stopped: {id: `r${i}`, fence: 1, attempt: 1, worker: 'w'}}
          : {id: `s${i}`, from: 'submitted' as const},
      ),
      [{id: 'r9', from: 'running', stopped: {id: 'r9', fence: 3, attempt: 2, worker: 'w'}}],
    ];
    const asked: TasksCancelManyParams[] = [];
    const store = {tasksCancelMany: async (p: TasksCancelManyParams) => (asked.push(p), batches.shift() ?? [])};
    const sent: ControlMessage[] = [];
    const r = await runCancelMany(
      store,
      {type: 'order_notify', states: ['running', 'submitted']},
      {
        actor: 'cli:1',
        operator: 'bob',
        reason: null,
        command: 'tasks cancel --type',
        notifier: {publishControl: async (m) => void sent.push(m)},
      },
    );
    expect(asked).toHaveLength(2);
    expect(r).toEqual({tasks: {running: 3, submitted: CANCEL_BATCH - 2}, notified: true});
    expect(sent.map((m) => m.tasks)).toEqual([
      [
        {id: 'r0', fence: 1},
        {id: 'r1', fence: 1},
      ],
      [{id: 'r9', fence: 3}],
    ]);
    await expect(
      runCancelMany(
        store,
        {type: 'order_notify', states: ['running']},
        {actor: 'a', operator: 'b', reason: 'x'.repeat(1001), command: 'c'},
      ),
    ).rejects.toThrow(/--reason is longer than 1000/);
  });
});
