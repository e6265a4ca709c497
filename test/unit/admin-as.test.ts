/**
 * Admin.as: the same service acting as another operator (the web console's token name and client
 * address) over the same connections; its audit rows carry that name, its close() closes nothing,
 * its forCell keeps the name.
 */
import {describe, expect, it, vi} from 'vitest';
import {createAdmin} from '../../src/core/admin/service.js';
import type {TasksCancelParams} from '../../src/core/store/types.js';
import {fakeAdmin} from '../helpers/fake-admin.js';

const ID = '0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d';

describe('admin as another operator', () => {
  it('audits as the name given, on the connections of the service it came from', async () => {
    const tasksCancel = vi.fn(async (_p: TasksCancelParams) => ({from: 'submitted' as const, cancelled: true}));
    const f = fakeAdmin({servers: () => ({store: {tasksCancel}})});
    const admin = createAdmin(f.ctx);
    const web = admin.as('  web:alice@127.0.0.1 ');
    expect(web.cell).toBe('main');
    await web.tasks.cancel(ID, {reason: 'refund'});
    expect(tasksCancel.mock.calls[0]![0].audit).toMatchObject({operator: 'web:alice@127.0.0.1', command: 'tasks cancel'});
    await admin.tasks.cancel(ID);
    expect(tasksCancel.mock.calls[1]![0].audit).toMatchObject({operator: 'tester'});
    await admin.as('web:bob@10.0.0.2').tasks.cancel(ID);
    expect(tasksCancel.mock.calls[2]![0].audit).toMatchObject({operator: 'web:bob@10.0.0.2'});
    // One store for all three.
    expect(f.opened).toEqual(['main:store']);
    await web.close();
    await web[Symbol.asyncDispose]();
    expect(f.closed).toEqual([]);
    await admin.close();
    expect(f.closed).toEqual(['main:store']);
  });

  it("keeps the name in another cell's service, which shares the sessions of the original", async () => {
    const tasksCancel = vi.fn(async (_p: TasksCancelParams) => ({from: 'failed' as const, cancelled: true}));
    const f = fakeAdmin({cells: {big: {types: ['report_*']}}, servers: () => ({store: {tasksCancel}})});
    const admin = createAdmin(f.ctx);
    const big = admin.as('web:carol@::1').forCell('big');
    expect(big.cell).toBe('big');
    await big.tasks.cancel(ID);
    expect(tasksCancel.mock.calls[0]![0].audit).toMatchObject({operator: 'web:carol@::1'});
    await admin.forCell('big').tasks.cancel(ID);
    expect(tasksCancel.mock.calls[1]![0].audit).toMatchObject({operator: 'tester'});
    expect(f.opened).toEqual(['big:store']);
    expect(admin.as('web:carol@::1').forCell('main').cell).toBe('main');
    await admin.close();
    expect(f.closed).toEqual(['big:store']);
  });

  it('refuses a blank name, control characters or more than 255 characters', () => {
    const admin = createAdmin(fakeAdmin({servers: () => ({})}).ctx);
    for (const bad of ['', '   ', 'web:a\nb', 'web:\u0007', 'x'.repeat(256)])
      expect(() => admin.as(bad)).toThrow(expect.objectContaining({code: 'invalid_input'}));
    expect(() => admin.as('x'.repeat(255))).not.toThrow();
  });
});
