import {describe, expect, it} from 'vitest';
import {createAdmin} from '../../src/core/admin/service.js';
import type {QueueInfo} from '../../src/core/broker/types.js';
import {fakeAdmin} from '../helpers/fake-admin.js';

describe('admin queues', () => {
  const poison: QueueInfo = {name: 'ax.big.poison', role: 'poison', exists: false, messages: 0, consumers: 0} as QueueInfo;

  it("reads the cell's queues through RabbitMQ opened without declaring anything", async () => {
    const f = fakeAdmin({cells: {big: {types: ['report_*']}}, servers: () => ({broker: {inspectQueues: async () => [poison]}})});
    await using admin = createAdmin(f.ctx).forCell('big');
    expect(await admin.queues.list()).toEqual({cell: 'big', queues: [poison]});
    expect(f.opened).toEqual(['big:broker(declare=false)']);
  });

  it('RabbitMQ down: unavailable', async () => {
    const f = fakeAdmin({servers: () => ({})});
    await using admin = createAdmin(f.ctx);
    await expect(admin.queues.list()).rejects.toMatchObject({code: 'unavailable'});
  });
});
