/** The audit domain of the admin service over fakes: the page's bounds are checked before MySQL is opened; `next` names the next page. */
import {describe, expect, test, vi} from 'vitest';
import {fakeAdmin} from '../helpers/admin.js';

const row = (id: number) => ({
  id,
  at: new Date(0),
  operator: 'op',
  command: 'tasks cancel',
  filter: {},
  reason: null,
  taskCount: 1,
  taskIds: null,
});

describe('admin audit', () => {
  test('a bad limit or cursor is refused before anything is opened', async () => {
    const f = fakeAdmin({store: {}});
    for (const page of [{limit: 0}, {limit: 1001}, {limit: 1.5}, {after: 0}, {after: -3}])
      await expect(f.admin.audit.list(page)).rejects.toMatchObject({code: 'invalid_input'});
    expect(f.opened).toEqual([]);
  });

  test('a full page names the next one; a short page is the last', async () => {
    const auditList = vi.fn(async (p: {limit: number}) => [row(9), row(8), row(7)].slice(0, p.limit === 2 ? 2 : 3));
    const f = fakeAdmin({store: {auditList}});
    expect(await f.admin.audit.list({limit: 2, after: 10})).toMatchObject({entries: [{id: 9}, {id: 8}], next: 8});
    expect(auditList).toHaveBeenCalledWith({limit: 2, after: 10});
    expect(await f.admin.audit.list()).toMatchObject({next: null});
    expect(auditList).toHaveBeenLastCalledWith({limit: 50});
    expect(f.opened).toEqual(['store']);
  });
});
