/**
 * The opt-in index of task keys (`ax migrate --task-keys`, src/core/store/mysql/keys-index.ts) on
 * MariaDB: without it per-key limits and --fair are refused with the command that adds it, nothing
 * stored, and the keys views say it is missing instead of scanning; `ax migrate --task-keys` adds it
 * online (and again is a no-op), after which the same settings are accepted.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {openAdmin} from '../../src/compose.js';
import {createTestEnv, type TestEnv} from '../helpers/env.js';
import {runCli, ROOT} from '../helpers/spawn.js';

describe('the index of task keys is opt-in', () => {
  let env: TestEnv;
  beforeAll(async () => {
    env = await createTestEnv({}, {taskKeys: false});
  });
  afterAll(async () => env?.dispose());
  const ax = (args: string[]) => runCli(args, {env: {...env.env, AX_OPERATOR: 'ops-test'}, cwd: ROOT});

  it('refuses per-key limits and --fair without it, then ax migrate --task-keys adds it and they are accepted', async () => {
    await using admin = openAdmin(env.rt);
    for (const input of [{fair: true}, {maxRunningPerKey: 2}, {ratePerKey: '5/s'}])
      await expect(admin.types.set('order_notify', input), JSON.stringify(input)).rejects.toMatchObject({
        code: 'conflict',
        message: expect.stringMatching(/run `ax migrate --task-keys`/),
      });
    const cli = await ax(['types', 'set', 'order_notify', '--fair']);
    expect(cli).toMatchObject({code: 4, stderr: expect.stringMatching(/ax migrate --task-keys/)});
    expect((await env.sql<{n: number}>("SELECT COUNT(*) AS n FROM admin_audit WHERE command = 'types set'"))[0]!.n).toBe(0);
    // Limits of the type as a whole need no index.
    expect((await admin.types.set('order_notify', {maxRunning: 5})).limits.maxRunning).toBe(5);
    const store = await env.store();
    expect(await store.typeKeys({type: 'order_notify', limit: 10})).toMatchObject({indexed: false, backlog: 0, top: []});

    expect(await ax(['migrate', '--task-keys', '--status', '--json'])).toMatchObject({code: 0, json: {indexed: false}});
    const add = await ax(['migrate', '--task-keys']);
    expect(add).toMatchObject({code: 0, stdout: expect.stringMatching(/added the index of task keys/)});
    expect(await ax(['migrate', '--task-keys'])).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/has the index of task keys already/),
    });
    expect(await ax(['migrate', '--task-keys', '--status', '--json'])).toMatchObject({code: 0, json: {indexed: true}});
    expect((await admin.types.set('order_notify', {fair: true, maxRunningPerKey: 2})).limits).toMatchObject({
      fair: true,
      maxRunningPerKey: 2,
    });
    expect((await store.typeKeys({type: 'order_notify', limit: 10})).indexed).toBeUndefined();
  });
});
