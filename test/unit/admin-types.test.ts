import {describe, expect, it} from 'vitest';
import {createAdmin} from '../../src/core/admin/service.js';
import {AxError} from '../../src/core/errors.js';
import {fakeAdmin, rejecting} from '../helpers/fake-admin.js';

const reached = new AxError('internal', 'reached the store');

describe('admin types', () => {
  it('refuses a malformed type name or release rate before opening anything', async () => {
    const f = fakeAdmin({servers: () => ({})});
    await using admin = createAdmin(f.ctx);
    await expect(admin.types.show('Not A Type')).rejects.toMatchObject({code: 'invalid_input'});
    await expect(admin.types.pause('x', 'why')).rejects.toMatchObject({code: 'invalid_input'});
    await expect(admin.types.set('BAD', {})).rejects.toMatchObject({code: 'invalid_input'});
    await expect(admin.types.resume('order_notify', {rate: 0})).rejects.toMatchObject({code: 'invalid_input'});
    await expect(admin.types.resetBreaker('order_notify', null, {rate: -1})).rejects.toMatchObject({code: 'invalid_input'});
    expect(f.opened).toEqual([]);
  });

  it('reads with the store only; a release opens RabbitMQ right after the store, before any change', async () => {
    const f = fakeAdmin({servers: () => ({store: rejecting(reached), broker: {}})});
    await using admin = createAdmin(f.ctx);
    await expect(admin.types.show('order_notify')).rejects.toBe(reached);
    expect(f.opened).toEqual(['main:store']);
    await expect(admin.types.resume('order_notify')).rejects.toBe(reached);
    expect(f.opened).toEqual(['main:store', 'main:broker(declare=true)']);
  });

  it('a release with RabbitMQ down fails unavailable and closes the store it opened', async () => {
    const f = fakeAdmin({servers: () => ({store: rejecting(reached)})});
    const admin = createAdmin(f.ctx);
    await expect(admin.types.resetBreaker('order_notify', null)).rejects.toMatchObject({code: 'unavailable'});
    await admin.close();
    expect(f.closed).toEqual(['main:store']);
  });
});
