import {describe, expect, it} from 'vitest';
import {createAdmin} from '../../src/core/admin/service.js';
import type {TaskSpec} from '../../src/core/task/model.js';
import {fakeAdmin} from '../helpers/fake-admin.js';

const cells = {big: {types: ['report_*']}};

describe('admin producer', () => {
  it('refuses a bad spec, or (pinned) a type of another cell, before opening anything', async () => {
    const f = fakeAdmin({cells, servers: () => ({})});
    await using admin = createAdmin(f.ctx);
    await expect(admin.producer.submit([{type: 'order_notify'}, {type: 'Bad'} as TaskSpec])).rejects.toMatchObject({
      code: 'invalid_input',
    });
    await expect(admin.producer.submit([{type: 'order_notify', payload: []} as unknown as TaskSpec])).rejects.toMatchObject({
      code: 'invalid_input',
    });
    await expect(admin.producer.submit([{type: 'order_notify'}, {type: 'report_daily'}], {pinned: true})).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/big/),
    });
    expect(f.opened).toEqual([]);
  });

  it('submits in order through one producer, flushes, and closes it with the service', async () => {
    const submitted: string[] = [];
    const f = fakeAdmin({
      cells,
      servers: () => ({
        producer: {
          submit: async (t) => {
            submitted.push(t.type);
            return `id-${submitted.length}`;
          },
          flush: async () => ({inserted: 1, existing: 1, unpublished: 0, conflicts: []}),
        },
      }),
    });
    const admin = createAdmin(f.ctx);
    // Not pinned: a type of another cell is the producer's to route.
    expect(await admin.producer.submit([{type: 'order_notify'}, {type: 'report_daily'}])).toEqual({
      ids: ['id-1', 'id-2'],
      inserted: 1,
      existing: 1,
      unpublished: 0,
    });
    expect(submitted).toEqual(['order_notify', 'report_daily']);
    await admin.close();
    expect(f.opened).toEqual(['main:producer']);
    expect(f.closed).toEqual(['main:producer']);
  });

  it('servers down: unavailable', async () => {
    const f = fakeAdmin({servers: () => ({})});
    await using admin = createAdmin(f.ctx);
    await expect(admin.producer.submit([{type: 'order_notify'}])).rejects.toMatchObject({code: 'unavailable'});
  });
});
