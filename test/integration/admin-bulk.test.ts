/**
 * Bulk actions of the admin service on MariaDB and RabbitMQ (the console's "select, or all
 * matching → cancel or replay"): the plan changes nothing; the run acts on exactly the tasks the
 * plan counted as actionable; the audit rows name the command and the operator.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {openAdmin} from '../../src/compose.js';
import type {Admin} from '../../src/core/admin/service.js';
import type {AxStore} from '../../src/core/store/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import type {NewTask} from '../../src/core/task/model.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import {createTestEnv, takeRung, type TestEnv} from '../helpers/env.js';

const newId = createIdGenerator(() => Date.now());
const TYPE = 'bulk_web';
const task = (n: number): NewTask =>
  validateTaskSpec({type: TYPE, payload: {n}}, {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'}, Date.now(), newId);

describe('bulk actions on tasks', () => {
  let env: TestEnv;
  let store: AxStore;
  let admin: Admin;
  const t: Record<string, NewTask> = {};

  beforeAll(async () => {
    env = await createTestEnv();
    store = await env.store();
    admin = openAdmin({...env.rt, operator: () => 'web:alice@127.0.0.1'});
    for (const [k, n] of [
      ['sub1', 1],
      ['sub2', 2],
      ['sub3', 3],
      ['failed', 4],
      ['running', 5],
      ['dead1', 6],
      ['dead2', 7],
      ['ok', 8],
    ] as const)
      t[k] = task(n);
    await store.tasksInsert({tasks: Object.values(t), actor: 'test'});
    const claim = async (x: NewTask) => (await store.tasksClaim({ids: [x.id], worker: 'w1', leaseMs: 60_000})).claimed[0]!.fence;
    await store.outcomesApply({
      outcomes: [{kind: 'fail', id: t.failed!.id, fence: await claim(t.failed!), retryDelayMs: 600_000, error: 'e'}],
      actor: 'w1',
    });
    await claim(t.running!);
    for (const d of [t.dead1!, t.dead2!])
      await store.outcomesApply({outcomes: [{kind: 'deadLetter', id: d.id, fence: await claim(d), error: 'gone'}], actor: 'w1'});
    await store.outcomesApply({outcomes: [{kind: 'complete', id: t.ok!.id, fence: await claim(t.ok!)}], actor: 'w1'});
    await env.broker(); // the topology: the replay rings on the pool queue
  });
  afterAll(async () => {
    await admin?.close();
    await env?.dispose();
  });

  const states = async (): Promise<Record<string, string>> =>
    Object.fromEntries(await Promise.all(Object.entries(t).map(async ([k, x]) => [k, (await store.tasksGet({id: x.id}))!.state])));

  it('plans change nothing; a replay by ids replays the dead ones only, audited as the command and operator, and rings them', async () => {
    const before = await states();
    const auditBefore = (await admin.audit.list({limit: 100})).entries.length;
    const cancel = await admin.tasks.planBulk({
      action: 'cancel',
      filter: {type: TYPE},
      reason: 'retired',
      command: 'web tasks bulk cancel',
    });
    expect(cancel).toMatchObject({
      action: 'cancel',
      matched: 8,
      actionable: 5,
      unknown: 0,
      byState: {submitted: 3, failed: 1, running: 1, dead: 2, succeeded: 1},
    });
    const unknown = newId();
    const replay = await admin.tasks.planBulk({
      action: 'replay',
      ids: [t.dead1!.id, t.dead2!.id, t.ok!.id, unknown],
      reason: 'fixed',
      command: 'web tasks bulk replay',
    });
    expect(replay).toMatchObject({matched: 3, actionable: 2, unknown: 1, byState: {dead: 2, succeeded: 1}});
    expect(await states()).toEqual(before);
    expect((await admin.audit.list({limit: 100})).entries.length).toBe(auditBefore);

    expect(await replay.run()).toEqual({action: 'replay', done: 2, skipped: 1, byState: {dead: 2}, unrung: 0});
    expect(await states()).toMatchObject({dead1: 'submitted', dead2: 'submitted', ok: 'succeeded'});
    expect((await takeRung(env, 'io')).ids.sort()).toEqual([t.dead1!.id, t.dead2!.id].sort());
    const [row] = (await admin.audit.list({limit: 1})).entries;
    expect(row).toMatchObject({operator: 'web:alice@127.0.0.1', command: 'web tasks bulk replay', reason: 'fixed', taskCount: 2});

    // The cancel planned before the replay acts on what it counted: the replayed tasks are not among them.
    const r = await cancel.run();
    expect(r).toEqual({action: 'cancel', done: 5, skipped: 3, byState: {submitted: 3, failed: 1, running: 1}, notified: true});
    expect(await states()).toEqual({
      sub1: 'cancelled',
      sub2: 'cancelled',
      sub3: 'cancelled',
      failed: 'cancelled',
      running: 'cancelled',
      dead1: 'submitted',
      dead2: 'submitted',
      ok: 'succeeded',
    });
    const [c] = (await admin.audit.list({limit: 1})).entries;
    expect(c).toMatchObject({
      operator: 'web:alice@127.0.0.1',
      command: 'web tasks bulk cancel',
      filter: {type: TYPE},
      reason: 'retired',
      taskCount: 5,
    });
    expect((await store.historyList({taskId: t.running!.id})).at(-1)).toMatchObject({
      from: 'running',
      to: 'cancelled',
      error: 'cancelled by web:alice@127.0.0.1: retired',
    });
  });

  it('a filter matching nothing plans zeros and its run does nothing', async () => {
    const p = await admin.tasks.planBulk({action: 'replay', filter: {type: 'bulk_none'}, command: 'web tasks bulk replay'});
    expect(p).toMatchObject({matched: 0, actionable: 0, byState: {}});
    expect(await p.run()).toEqual({action: 'replay', done: 0, skipped: 0, byState: {}, unrung: 0});
  });
});
