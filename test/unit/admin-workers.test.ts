import {describe, expect, it} from 'vitest';
import {createAdmin} from '../../src/core/admin/service.js';
import {fakeAdmin} from '../helpers/fake-admin.js';

describe('admin workers', () => {
  it('refuses a bad since, or since with all, before opening anything', async () => {
    const f = fakeAdmin({servers: () => ({})});
    await using admin = createAdmin(f.ctx);
    await expect(admin.workers.list({since: 'yesterday'})).rejects.toMatchObject({code: 'invalid_input'});
    await expect(admin.workers.list({since: '1h', all: true})).rejects.toMatchObject({code: 'invalid_input'});
    expect(f.opened).toEqual([]);
  });

  it('reads the registry of its cell within since (all: no bound), and closes the store with the service', async () => {
    const asked: unknown[] = [];
    const f = fakeAdmin({
      servers: () => ({
        store: {
          workersList: async (p) => {
            asked.push(p);
            return [];
          },
        },
      }),
    });
    const admin = createAdmin(f.ctx);
    expect(await admin.workers.list({since: '2h'})).toMatchObject({workers: [], counts: {live: 0, stale: 0, stopped: 0}});
    await admin.workers.list({all: true});
    expect(asked).toEqual([{seenWithinMs: 7_200_000}, {}]);
    await admin.close();
    expect(f.opened).toEqual(['main:store']);
    expect(f.closed).toEqual(['main:store']);
  });
});
