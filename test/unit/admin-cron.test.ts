import {describe, expect, it} from 'vitest';
import {createAdmin} from '../../src/core/admin/service.js';
import {AxError} from '../../src/core/errors.js';
import type {ScheduleRecord} from '../../src/core/store/types.js';
import {fakeAdmin, rejecting} from '../helpers/fake-admin.js';

const reached = new AxError('internal', 'reached the store');
const cells = {big: {types: ['report_*']}};
const daily = {name: 'report-daily', cron: '0 2 * * *', tz: 'Asia/Shanghai', type: 'report_daily'};

describe('admin cron', () => {
  it('refuses a bad name, schedule or number of fire times before opening anything', async () => {
    const f = fakeAdmin({cells, servers: () => ({})});
    await using admin = createAdmin(f.ctx);
    for (const call of [
      () => admin.cron.show('Bad Name'),
      () => admin.cron.show('ok', 0),
      () => admin.cron.pause(''),
      () => admin.cron.resume('Bad Name'),
      () => admin.cron.remove('Bad Name'),
      () => admin.cron.trigger('Bad Name'),
      () => admin.cron.add({...daily, cron: '61 * * * *'}),
      () => admin.cron.add({...daily, tz: 'Mars/Olympus'}),
      () => admin.cron.addAndShow(daily, {next: 101}),
    ])
      await expect(call()).rejects.toMatchObject({code: 'invalid_input'});
    expect(f.opened).toEqual([]);
  });

  it('add goes to the cell of the type; pinned to another cell it is refused unopened', async () => {
    const f = fakeAdmin({cells, servers: () => ({store: rejecting(reached)})});
    await using admin = createAdmin(f.ctx);
    await expect(admin.cron.add(daily, {pinned: true})).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/big/),
    });
    expect(f.opened).toEqual([]);
    await expect(admin.cron.add(daily)).rejects.toBe(reached);
    await expect(admin.cron.addAndShow({...daily, name: 'other'}, {next: 5})).rejects.toBe(reached);
    await expect(admin.cron.add({...daily, type: 'order_notify'})).rejects.toBe(reached);
    expect(f.opened).toEqual(['big:store', 'main:store']);
  });

  it('trigger opens RabbitMQ; overview and remove read the pending occurrences from the store', async () => {
    const s: ScheduleRecord = {
      name: 'nightly',
      cron: '0 2 * * *',
      tz: 'UTC',
      type: 'report_daily',
      payload: '{}',
      pool: 'io',
      priority: 'normal',
      maxRetries: null,
      timeoutMs: null,
      key: null,
      overlap: 'allow',
      misfire: 'skip',
      paused: false,
      nextFireAt: null,
      lastFireAt: null,
      lastTaskId: null,
      createdAt: new Date(0),
      updatedAt: new Date(0),
    };
    const runAt = new Date('2026-04-30T02:00:00Z');
    const f = fakeAdmin({
      servers: () => ({
        store: {
          clockNow: async () => new Date('2026-05-01T00:00:00Z'),
          schedulesList: async () => [s],
          schedulesGet: async () => s,
          schedulesRemove: async () => true,
          occurrencesPrevious: async () => ({id: 't1', state: 'succeeded'}),
          tasksGet: async () => ({id: 't1', runAt, state: 'succeeded'}) as never,
        },
      }),
    });
    await using admin = createAdmin(f.ctx);
    const [o] = await admin.cron.overview();
    expect(o?.nextOccurrence?.toISOString()).toBe('2026-05-01T02:00:00.000Z');
    expect(o?.lastOccurrence).toEqual({taskId: 't1', fireAt: runAt, state: 'succeeded'});
    expect(await admin.cron.remove('nightly')).toEqual({name: 'nightly', cancelled: [], cancelledOccurrences: []});
    await expect(admin.cron.trigger('nightly')).rejects.toMatchObject({code: 'unavailable'});
    expect(f.opened).toEqual(['main:store', 'main:broker(declare=true)']);
  });
});
