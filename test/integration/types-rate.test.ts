/**
 * The types view's rate: attempts finished per second over the last minute, from the breaker's
 * per-second outcome rows (type_outcomes) that types.list already reads (outcomeCounts); rows older
 * than the minute, and other cells' rows, are left out.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {openAdmin} from '../../src/compose.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import {createTestEnv, type TestEnv} from '../helpers/env.js';

const newId = createIdGenerator(() => Date.now());

describe('types view: rate1m', () => {
  let env: TestEnv;
  beforeAll(async () => {
    env = await createTestEnv();
  });
  afterAll(async () => env?.dispose());

  it('is the last minute of outcome rows per second, every worker together; with nothing counted, 0', async () => {
    const store = await env.store();
    const spec = (type: string) =>
      validateTaskSpec({type, payload: {}}, {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'}, Date.now(), newId);
    await store.tasksInsert({tasks: [spec('rate_probe'), spec('rate_idle')], actor: 'test'});
    const row = 'INSERT INTO type_outcomes (cell, type, second, worker, ok, failed) VALUES (?, ?, NOW() - INTERVAL ? SECOND, ?, ?, ?)';
    await env.sql(row, ['default', 'rate_probe', 1, 'w1', 60, 20]);
    await env.sql(row, ['default', 'rate_probe', 30, 'w2', 30, 10]);
    await env.sql(row, ['default', 'rate_probe', 120, 'w1', 600, 0]);
    await env.sql(row, ['other', 'rate_probe', 1, 'w9', 600, 0]);
    await using admin = openAdmin(env.rt);
    const {types} = await admin.types.list();
    expect(types.find((t) => t.type === 'rate_probe')).toMatchObject({rate1m: 2, failureRate1m: 0.25});
    expect(types.find((t) => t.type === 'rate_idle')).toMatchObject({rate1m: 0, failureRate1m: null});
  });
});
