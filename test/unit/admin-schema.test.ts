import {describe, expect, it} from 'vitest';
import {createAdmin} from '../../src/core/admin/service.js';
import {fakeAdmin} from '../helpers/fake-admin.js';

describe('admin schema', () => {
  it("status counts the pending migrations of ax's database; migrate applies them", async () => {
    const f = fakeAdmin({
      servers: () => ({
        schema: {
          database: 'ax',
          schemaStatus: async () => [
            {version: 1, name: 'init', appliedAt: new Date(0)},
            {version: 2, name: 'more', appliedAt: null},
          ],
          schemaMigrate: async () => ({database: 'ax', applied: [{version: 2, name: 'more'}], current: 2}) as never,
        },
      }),
    });
    const admin = createAdmin(f.ctx);
    expect(await admin.schema.status()).toMatchObject({database: 'ax', pending: 1});
    expect(await admin.schema.migrate()).toMatchObject({current: 2});
    await admin.close();
    expect(f.opened).toEqual(['main:schema']);
    expect(f.closed).toEqual(['main:schema']);
  });

  it('the outbox is opened without requiring its table, which it reports on or creates', async () => {
    let exists = false;
    const f = fakeAdmin({
      servers: () => ({
        outbox: {
          database: 'shop',
          outboxTableExists: async () => exists,
          outboxCreateTable: async () => void (exists = true),
        },
      }),
    });
    await using admin = createAdmin(f.ctx);
    expect(await admin.schema.outboxStatus()).toEqual({database: 'shop', exists: false});
    expect(await admin.schema.outboxCreate()).toEqual({database: 'shop'});
    expect(await admin.schema.outboxStatus()).toEqual({database: 'shop', exists: true});
    expect(f.opened).toEqual(['main:outbox(requireTable=false)']);
  });

  it('a database down: unavailable', async () => {
    const f = fakeAdmin({servers: () => ({})});
    await using admin = createAdmin(f.ctx);
    await expect(admin.schema.status()).rejects.toMatchObject({code: 'unavailable'});
    await expect(admin.schema.outboxCreate()).rejects.toMatchObject({code: 'unavailable'});
  });
});
