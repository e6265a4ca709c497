/**
 * The outbox domain of the admin service over fakes: input is checked before the business database
 * is opened, only the outbox is opened (never ax's store), and a retry by ids changes nothing
 * unless every id is a failed row.
 */
import {describe, expect, test, vi} from 'vitest';
import {fakeAdmin} from '../helpers/admin.js';

describe('admin outbox', () => {
  test('bad input is refused before the outbox is opened', async () => {
    const f = fakeAdmin({outbox: {}});
    const o = f.admin.outbox;
    for (const [call, message] of [
      [() => o.list({limit: 0}), /limit must be a whole number from 1 to 10000/],
      [() => o.list({limit: 10_001}), /limit/],
      [() => o.retry({}), /name the failed rows to retry by id/],
      [() => o.retry({ids: ['1'], all: true}), /not both/],
      [() => o.retry({ids: ['0']}), /"0" is not an outbox row id/],
      [() => o.retry({ids: ["1' OR 1=1"]}), /is not an outbox row id/],
      [() => o.retry({ids: ['99999999999999999']}), /is not an outbox row id/],
      [() => o.retry({ids: Array.from({length: 1001}, (_, i) => i + 1)}), /at most 1000 ids/],
    ] as Array<[() => Promise<unknown>, RegExp]>)
      await expect(call()).rejects.toMatchObject({code: 'invalid_input', message: expect.stringMatching(message)});
    expect(f.opened).toEqual([]);
  });

  test('list: pending rows by default, failed ones when asked, at most the limit', async () => {
    const outboxListUnsent = vi.fn(async () => [{id: 1}]);
    const outboxListFailed = vi.fn(async () => [{id: 2}]);
    const f = fakeAdmin({outbox: {outboxListUnsent, outboxListFailed}});
    expect(await f.admin.outbox.list()).toEqual({kind: 'pending', rows: [{id: 1}]});
    expect(outboxListUnsent).toHaveBeenCalledWith({limit: 50});
    expect(await f.admin.outbox.list({failed: true, limit: 7})).toEqual({kind: 'failed', rows: [{id: 2}]});
    expect(outboxListFailed).toHaveBeenCalledWith({limit: 7});
    expect(f.opened).toEqual(['outbox']);
  });

  test('stats: the database and its backlog', async () => {
    const f = fakeAdmin({outbox: {database: 'shop', outboxLag: async () => ({unsent: 3, failed: 1, oldestAgeMs: 1500})}});
    expect(await f.admin.outbox.stats()).toEqual({database: 'shop', unsent: 3, failed: 1, oldestAgeMs: 1500});
  });

  test('retry by ids: unknown ids are not_found, pending or sent ones a conflict, and nothing is retried then', async () => {
    const outboxRetryFailed = vi.fn(async () => 2);
    const states = new Map<number, 'pending' | 'sent' | 'failed'>([
      [1, 'failed'],
      [2, 'failed'],
      [3, 'pending'],
    ]);
    const f = fakeAdmin({outbox: {outboxRowStates: async () => states, outboxRetryFailed}});
    await expect(f.admin.outbox.retry({ids: ['1', '9']})).rejects.toMatchObject({code: 'not_found', details: {ids: [9]}});
    await expect(f.admin.outbox.retry({ids: [1, 3]})).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('3 (pending)'),
    });
    expect(outboxRetryFailed).not.toHaveBeenCalled();
    expect(await f.admin.outbox.retry({ids: ['2', '1', '2']})).toEqual({retried: 2, ids: [2, 1]});
    expect(outboxRetryFailed).toHaveBeenCalledWith({ids: [2, 1]});
    expect(await f.admin.outbox.retry({all: true})).toEqual({retried: 2, ids: 'all'});
    expect(f.opened).toEqual(['outbox']);
  });
});
