/**
 * A type's task keys on MariaDB (issue 25): FlowStore.typeKeys's top keys by backlog and by
 * running with the totals, `ax types show`'s keys (types.show) with the key that dominates the
 * backlog, and `ax doctor` naming it.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {openAdmin} from '../../src/compose.js';
import type {AxStore} from '../../src/core/store/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import {createTestEnv, type TestEnv} from '../helpers/env.js';

const newId = createIdGenerator(() => Date.now());
const TYPE = 'keys_probe';

describe('task keys of a type', () => {
  let env: TestEnv;
  let store: AxStore;

  beforeAll(async () => {
    env = await createTestEnv();
    store = await env.store();
    const spec = (key: string | undefined, delay?: string) =>
      validateTaskSpec(
        {type: TYPE, payload: {}, ...(key === undefined ? {} : {key}), ...(delay ? {delay} : {})},
        {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'},
        Date.now(),
        newId,
      );
    const tasks = [
      ...Array.from({length: 150}, () => spec('tenant:42')),
      ...Array.from({length: 20}, () => spec('tenant:7')),
      ...Array.from({length: 5}, () => spec('tenant:9', '1h')),
      ...Array.from({length: 10}, () => spec(undefined)),
      // Another type's key: not counted.
      validateTaskSpec(
        {type: 'keys_other', payload: {}, key: 'tenant:42'},
        {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'},
        Date.now(),
        newId,
      ),
    ];
    for (let i = 0; i < tasks.length; i += 50) await store.tasksInsert({tasks: tasks.slice(i, i + 50), actor: 'test'});
    // Two of tenant:7's running, one of tenant:3's (its only task), one finished (no longer counted).
    await env.sql(
      `UPDATE tasks SET state = 'running', attempt = 1, worker = 'w:1', lease_until = NOW(3) + INTERVAL 60 SECOND
        WHERE type = ? AND task_key = 'tenant:7' ORDER BY id LIMIT 2`,
      [TYPE],
    );
    await store.tasksInsert({tasks: [spec('tenant:3')], actor: 'test'});
    await env.sql(
      `UPDATE tasks SET state = 'running', attempt = 1, worker = 'w:1', lease_until = NOW(3) + INTERVAL 60 SECOND WHERE task_key = 'tenant:3'`,
    );
    await env.sql(
      `UPDATE tasks SET state = 'succeeded' WHERE type = ? AND task_key = 'tenant:7' AND state = 'submitted' ORDER BY id LIMIT 1`,
      [TYPE],
    );
  });
  afterAll(async () => env?.dispose());

  it('typeKeys: the totals, and each top list with the other count of its keys (read when the other list was cut)', async () => {
    expect(await store.typeKeys({type: TYPE, limit: 10})).toEqual({
      backlog: 150 + 17 + 5,
      withBacklog: 3,
      running: 3,
      withRunning: 2,
      top: [
        {key: 'tenant:42', backlog: 150, running: 0},
        {key: 'tenant:7', backlog: 17, running: 2},
        {key: 'tenant:9', backlog: 5, running: 0},
        {key: 'tenant:3', backlog: 0, running: 1},
      ],
    });
    // One of each: the most backlog (tenant:42, its running read apart) and the most running (tenant:7, its backlog read apart).
    expect((await store.typeKeys({type: TYPE, limit: 1})).top).toEqual([
      {key: 'tenant:42', backlog: 150, running: 0},
      {key: 'tenant:7', backlog: 17, running: 2},
    ]);
    expect(await store.typeKeys({type: 'keys_none', limit: 10})).toEqual({backlog: 0, withBacklog: 0, running: 0, withRunning: 0, top: []});
  });

  it('types.show gives the keys with the dominant one (its share of the whole backlog, keyless tasks counted)', async () => {
    await using admin = openAdmin(env.rt);
    const d = await admin.types.show(TYPE);
    expect(d.keys).toMatchObject({withBacklog: 3, backlog: 172, withRunning: 2, running: 3});
    expect(d.keys.top[0]).toEqual({key: 'tenant:42', backlog: 150, running: 0});
    expect(d.keys.dominant).toEqual({key: 'tenant:42', share: 150 / 182, backlog: 150, of: 182});
  });

  it('ax doctor names the type and the key', async () => {
    await using admin = openAdmin(env.rt);
    const {report} = await admin.doctor.check({since: '15m'});
    const f = report.findings.find((x) => x.id === 'keys.dominant');
    expect(f).toMatchObject({
      status: 'warn',
      title: "key tenant:42 holds 82 % of keys_probe's backlog of 182: consider --fair or --max-running-per-key",
    });
  });
});
