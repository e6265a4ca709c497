/**
 * Admin.as on MariaDB and RabbitMQ: an action through `admin.as('web:alice@127.0.0.1')` is audited
 * as that operator, and the acting service opens no second MySQL pool (or broker) of its own.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {adminContext} from '../../src/compose.js';
import {type Admin, createAdmin} from '../../src/core/admin/service.js';
import type {AdminContext} from '../../src/core/admin/context.js';
import type {AxStore} from '../../src/core/store/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import {createTestEnv, type TestEnv} from '../helpers/env.js';

const newId = createIdGenerator(() => Date.now());

describe('the admin service acting as another operator', () => {
  let env: TestEnv;
  let store: AxStore;
  let admin: Admin;
  const opened: string[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    store = await env.store();
    await env.broker();
    const ctx = adminContext({...env.rt, operator: () => 'ops@host'});
    const counted: AdminContext = {
      ...ctx,
      open: {
        ...ctx.open,
        store: async () => (opened.push('store'), ctx.open.store()),
        broker: async (o) => (opened.push(`broker(${o.declare})`), ctx.open.broker(o)),
      },
    };
    admin = createAdmin(counted);
  });
  afterAll(async () => {
    await admin?.close();
    await env?.dispose();
  });

  it('audits with the name given, over the connections of the service it came from', async () => {
    const spec = (n: number) =>
      validateTaskSpec({type: 'web_probe', payload: {n}}, {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'}, Date.now(), newId);
    const [a, b, c] = [spec(1), spec(2), spec(3)];
    await store.tasksInsert({tasks: [a, b, c], actor: 'test'});
    const [claimed] = (await store.tasksClaim({ids: [c.id], worker: 'w1', leaseMs: 60_000})).claimed;
    await store.outcomesApply({outcomes: [{kind: 'deadLetter', id: c.id, fence: claimed!.fence, error: 'x'}], actor: 'w1'});
    await admin.tasks.cancel(a.id, {reason: 'cli'});
    const web = admin.as('web:alice@127.0.0.1');
    expect(await web.tasks.cancel(b.id, {reason: 'from the console'})).toEqual({id: b.id, from: 'submitted'});
    const {entries} = await web.audit.list({limit: 2});
    expect(entries.map((e) => [e.operator, e.command, e.reason, e.taskIds])).toEqual([
      ['web:alice@127.0.0.1', 'tasks cancel', 'from the console', [b.id]],
      ['ops@host', 'tasks cancel', 'cli', [a.id]],
    ]);
    expect((await store.historyList({taskId: b.id})).at(-1)).toMatchObject({to: 'cancelled', error: 'from the console'});
    expect(opened).toEqual(['store']);
    // A replay through it rings on the broker the session opens once for both.
    const plan = await web.tasks.planBulk({action: 'replay', ids: [c.id, a.id], command: 'web tasks bulk replay'});
    expect(plan).toMatchObject({matched: 2, actionable: 1});
    expect(await plan.run()).toMatchObject({done: 1, skipped: 1});
    expect((await admin.audit.list({limit: 1})).entries[0]).toMatchObject({
      operator: 'web:alice@127.0.0.1',
      command: 'web tasks bulk replay',
    });
    expect(opened).toEqual(['store', 'broker(true)']);
    await web.close();
    // Still open: the original owns the connections.
    expect((await admin.tasks.show(b.id)).task.state).toBe('cancelled');
  });
});
