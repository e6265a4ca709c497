/**
 * The dead-letter domain of the admin service over fakes: input is checked before anything is
 * opened, show points at the archive when a session has one (and stays not_found when it has none,
 * as the SDK's), and a replay opens RabbitMQ only when its plan runs.
 */
import {describe, expect, test, vi} from 'vitest';
import {fakeAdmin} from '../helpers/admin.js';

const ID = '0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d';

describe('admin dlq', () => {
  test('bad input is refused before anything is opened', async () => {
    const f = fakeAdmin({store: {}});
    const d = f.admin.dlq;
    for (const [call, message] of [
      [() => d.list({since: '1h', until: '2h'}), /must be before until/],
      [() => d.list({}, {limit: 0}), /limit must be a whole number/],
      [() => d.list({}, {after: "x' OR 1=1 --"}), /is not a task id/],
      [() => d.show('nope'), /is not a task id/],
      [() => d.stats({type: 'no type'}), /type/],
      [() => d.plan({command: 'c'}), /name the tasks to replay/],
      [() => d.plan({ids: [ID], force: true, command: 'c'}), /reason/],
    ] as Array<[() => Promise<unknown>, RegExp]>)
      await expect(call()).rejects.toMatchObject({code: 'invalid_input', message: expect.stringMatching(message)});
    expect(f.opened).toEqual([]);
  });

  test('show: an unknown id is not_found, also when the session has no archive (the SDK)', async () => {
    const store = {tasksGet: async () => null, historyList: async () => []};
    const withArchive = fakeAdmin({store, archive: {listParts: vi.fn(async () => [])}});
    await expect(withArchive.admin.dlq.show(ID)).rejects.toMatchObject({code: 'not_found'});
    expect(withArchive.opened).toEqual(['store', 'archive']);
    const none = fakeAdmin({store});
    none.ctx.open.archiveTarget = () => {
      throw Object.assign(new Error('the SDK client has no archive'), {code: 'unavailable'});
    };
    await expect(none.admin.dlq.show(ID)).rejects.toMatchObject({code: 'not_found'});
  });

  test('a replay plan reads MySQL only; RabbitMQ is opened when it runs (unavailable then, nothing replayed)', async () => {
    const deadErrorGroups = vi.fn(async () => [{type: 'a_b', count: 3}]);
    const deadPage = vi.fn();
    const deadReplay = vi.fn();
    const store = {clockNow: async () => new Date('2026-12-01T12:00:00Z'), deadErrorGroups, deadList: async () => [], deadPage, deadReplay};
    const f = fakeAdmin({store, down: ['broker']});
    const {plan, run} = await f.admin.dlq.plan({filter: {type: 'a_b'}, command: 'top replay'});
    expect(plan).toMatchObject({total: 3, byType: {a_b: 3}});
    expect(f.opened).toEqual(['store']);
    await expect(run()).rejects.toMatchObject({code: 'unavailable'});
    expect(f.opened).toEqual(['store', 'broker']);
    expect(deadPage).not.toHaveBeenCalled();
    expect(deadReplay).not.toHaveBeenCalled();
  });
});
