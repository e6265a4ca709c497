import {describe, expect, it} from 'vitest';
import {createAdmin} from '../../src/core/admin/service.js';
import {AxError} from '../../src/core/errors.js';
import {fakeAdmin, rejecting} from '../helpers/fake-admin.js';

describe('admin reconcile', () => {
  it('refuses a limit that is not a positive integer before opening anything', async () => {
    const f = fakeAdmin({servers: () => ({})});
    await using admin = createAdmin(f.ctx);
    await expect(admin.reconcile.once({limit: 0})).rejects.toMatchObject({code: 'invalid_input'});
    await expect(admin.reconcile.once({limit: 1.5})).rejects.toMatchObject({code: 'invalid_input'});
    expect(f.opened).toEqual([]);
  });

  it('opens MySQL then RabbitMQ (declaring) before the pass reads anything; RabbitMQ down changes nothing', async () => {
    const reached = new AxError('internal', 'reached the store');
    const up = fakeAdmin({servers: () => ({store: rejecting(reached), broker: rejecting(reached)})});
    await using admin = createAdmin(up.ctx);
    await expect(admin.reconcile.once({dryRun: true})).rejects.toBe(reached);
    expect(up.opened).toEqual(['main:store', 'main:broker(declare=true)']);

    const down = fakeAdmin({servers: () => ({store: rejecting(reached)})});
    await using admin2 = createAdmin(down.ctx);
    await expect(admin2.reconcile.once()).rejects.toMatchObject({code: 'unavailable'});
  });
});
