/**
 * The tasks domain of the admin service over fakes: input is checked before anything is opened, a
 * cancel opens RabbitMQ only to tell the workers of a running task, and a bulk cancel changes
 * nothing until its plan runs.
 */
import {describe, expect, test, vi} from 'vitest';
import {fakeAdmin} from '../helpers/admin.js';
import type {ListFilter} from '../../src/core/store/types.js';
import type {TaskRecord} from '../../src/core/task/model.js';

const ID = '0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d';

describe('admin tasks', () => {
  test('bad input is refused before anything is opened', async () => {
    const f = fakeAdmin({store: {}});
    const t = f.admin.tasks;
    for (const call of [
      () => t.show('not-an-id'),
      () => t.trace('not-an-id'),
      () => t.trace(ID.toUpperCase()),
      () => t.list({state: 'sleeping'}),
      () => t.list({limit: 0}),
      () => t.list({since: '1h', until: '2h'}),
      () => t.list({since: '2026-12-01T10:00:00Z', until: '2026-12-01T10:00:00Z'}),
      () => t.list({until: 'tomorrow'}),
      () => t.list({after: 'not-an-id'}),
      () => t.list({after: ID.toUpperCase()}),
      () => t.stats('yesterday'),
      () => t.errors({since: 'soon'}),
      () => t.cancel('0190F1C2-7D3E-7A41-9B2C-5E6F7A8B9C0D'),
      () => t.cancel(ID, {reason: 'x'.repeat(1001)}),
      () => t.planCancel({state: 'submitted', command: 'c'}),
      () => t.planCancel({type: 'a_b', command: 'c'}),
      () => t.planCancel({type: 'a_b', state: 'succeeded', command: 'c'}),
      () => t.planCancel({type: 'a_b', state: 'submitted', reason: 'x'.repeat(1001), command: 'c'}),
      () => t.planBulk({action: 'cancel', command: 'c'}),
      () => t.planBulk({action: 'cancel', ids: [ID], filter: {type: 'a_b'}, command: 'c'}),
      () => t.planBulk({action: 'cancel', ids: [], command: 'c'}),
      () => t.planBulk({action: 'purge' as 'cancel', ids: [ID], command: 'c'}),
      () => t.planBulk({action: 'replay', ids: [ID, 'nope'], command: 'c'}),
      () =>
        t.planBulk({
          action: 'replay',
          ids: Array.from({length: 10_001}, (_, i) => ID.slice(0, -5) + String(i).padStart(5, '0')),
          command: 'c',
        }),
      () => t.planBulk({action: 'cancel', ids: [ID], reason: 'x'.repeat(1001), command: 'c'}),
      () => t.planBulk({action: 'cancel', filter: {state: 'sleeping'}, command: 'c'}),
      () => t.planBulk({action: 'cancel', filter: {since: '1h', until: '2h'}, command: 'c'}),
      () => t.planBulk({action: 'cancel', filter: {payload: 'a=1'}, command: 'c'}),
      () => t.planBulk({action: 'cancel', filter: {type: 'a_b', limit: 5} as {type: string}, command: 'c'}),
      () => t.planBulk({action: 'cancel', filter: {type: 'a_b', after: ID} as {type: string}, command: 'c'}),
    ])
      await expect(call()).rejects.toMatchObject({code: 'invalid_input'});
    expect(f.opened).toEqual([]);
  });

  test('a bad AX_OPERATOR stops a cancel before MySQL is opened', async () => {
    const f = fakeAdmin({
      store: {},
      operator: () => {
        throw Object.assign(new Error('AX_OPERATOR holds control characters'), {code: 'invalid_input'});
      },
    });
    await expect(f.admin.tasks.cancel(ID)).rejects.toThrow(/AX_OPERATOR/);
    await expect(f.admin.tasks.planCancel({type: 'a_b', state: 'submitted', command: 'c'})).rejects.toThrow(/AX_OPERATOR/);
    await expect(f.admin.tasks.planBulk({action: 'replay', ids: [ID], command: 'c'})).rejects.toThrow(/AX_OPERATOR/);
    expect(f.opened).toEqual([]);
  });

  test('cancelling a waiting task opens MySQL only, audited as the operator', async () => {
    const tasksCancel = vi.fn(async () => ({from: 'submitted' as const, cancelled: true}));
    const f = fakeAdmin({store: {tasksCancel}});
    expect(await f.admin.tasks.cancel(ID, {reason: 'refunded'})).toEqual({id: ID, from: 'submitted'});
    expect(tasksCancel).toHaveBeenCalledWith(
      expect.objectContaining({
        id: ID,
        actor: 'host:1',
        reason: 'refunded',
        audit: {operator: 'op', command: 'tasks cancel', filter: {ids: [ID]}, reason: 'refunded'},
      }),
    );
    expect(f.opened).toEqual(['store']);
    await f.admin.close();
    expect(f.closed).toEqual(['store']);
  });

  test("a running task's worker is told through the session's broker; a broker that is down leaves the cancel standing", async () => {
    const stopped = {id: ID, fence: 3, attempt: 2, worker: 'w:9'};
    const tasksCancel = vi.fn(async () => ({from: 'running' as const, cancelled: true, stopped}));
    const publishControl = vi.fn(async () => undefined);
    const up = fakeAdmin({store: {tasksCancel}, broker: {publishControl}});
    expect(await up.admin.tasks.cancel(ID)).toEqual({id: ID, from: 'running', stopped: {worker: 'w:9', attempt: 2}, notified: true});
    expect(publishControl).toHaveBeenCalledWith({kind: 'cancel', tasks: [{id: ID, fence: 3}], by: 'op', reason: null});
    expect(up.opened).toEqual(['store', 'broker']);

    const down = fakeAdmin({store: {tasksCancel}, down: ['broker']});
    expect(await down.admin.tasks.cancel(ID)).toMatchObject({from: 'running', notified: false, notifyError: 'broker is down'});
  });

  test('a bulk cancel counts first and changes nothing until its plan runs', async () => {
    const tasksStats = vi.fn(async () => [
      {type: 'a_b', state: 'submitted' as const, count: 3},
      {type: 'a_b', state: 'dead' as const, count: 9},
      {type: 'c_d', state: 'submitted' as const, count: 5},
    ]);
    const tasksCancelMany = vi.fn(async () => [
      {id: ID, from: 'submitted' as const},
      {id: ID, from: 'submitted' as const},
    ]);
    const f = fakeAdmin({store: {tasksStats, tasksCancelMany}});
    const p = await f.admin.tasks.planCancel({type: 'a_b', state: 'submitted,running', reason: 'retired', command: 'tasks cancel --type'});
    expect(p.selection).toEqual({type: 'a_b', states: ['submitted', 'running']});
    expect(p.tasks).toEqual({submitted: 3});
    expect(tasksCancelMany).not.toHaveBeenCalled();
    expect(await p.run()).toEqual({tasks: {submitted: 2}});
    expect(tasksCancelMany).toHaveBeenCalledWith(
      expect.objectContaining({
        type: 'a_b',
        states: ['submitted', 'running'],
        audit: {operator: 'op', command: 'tasks cancel --type', filter: {type: 'a_b', states: ['submitted', 'running']}, reason: 'retired'},
      }),
    );
    // Nothing running was cancelled: RabbitMQ was never needed.
    expect(f.opened).toEqual(['store']);
  });

  test('a bulk cancel that selects nothing is not_found', async () => {
    const f = fakeAdmin({store: {tasksStats: async () => [{type: 'a_b', state: 'dead', count: 2}]}});
    await expect(f.admin.tasks.planCancel({type: 'a_b', state: 'submitted', command: 'c'})).rejects.toMatchObject({
      code: 'not_found',
      message: expect.stringMatching(/nothing to cancel/),
    });
  });

  test('a list page: its cursor resolved to the keyset position, `next` only when the page is full, an unknown cursor not_found', async () => {
    const createdAt = new Date('2026-12-01T11:00:00Z');
    const rec = (id: string) => ({id, createdAt}) as TaskRecord;
    const OTHER = '0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0e';
    const tasksList = vi.fn(async (f: ListFilter) => (f.limit === 2 ? [rec(OTHER), rec(ID)] : [rec(OTHER)]));
    const tasksGet = vi.fn(async ({id}: {id: string}) => (id === OTHER ? rec(OTHER) : null));
    const f = fakeAdmin({store: {tasksList, tasksGet}});
    expect(await f.admin.tasks.list({limit: 2, until: '30m'})).toEqual({tasks: [rec(OTHER), rec(ID)], next: ID});
    expect(tasksList).toHaveBeenLastCalledWith({limit: 2, until: new Date('2026-12-01T11:30:00Z')});
    expect(await f.admin.tasks.list({limit: 3, after: OTHER})).toEqual({tasks: [rec(OTHER)], next: null});
    expect(tasksList).toHaveBeenLastCalledWith({limit: 3, after: {createdAt, id: OTHER}});
    await expect(f.admin.tasks.list({after: ID})).rejects.toMatchObject({code: 'not_found', message: expect.stringMatching(/first page/)});
  });

  test("show looks in the archive only when asked to (the SDK's getTask does not)", async () => {
    const store = {tasksGet: async () => null, historyList: async () => []};
    const f = fakeAdmin({store, archive: {listParts: async () => []}});
    await expect(f.admin.tasks.show(ID, {archive: false})).rejects.toMatchObject({code: 'not_found'});
    expect(f.opened).toEqual(['store']);
    await expect(f.admin.tasks.show(ID)).rejects.toMatchObject({code: 'not_found'});
    expect(f.opened).toEqual(['store', 'archive']);
  });
});
