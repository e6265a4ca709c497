/**
 * Dependencies and batches through the built CLI (`node bin/run.js …`; run `npm run build` first)
 * against the real MariaDB and RabbitMQ: `ax submit --after`, a waiting task as `ax tasks show`
 * prints it (and `ax types list` counts it), `ax batches list/show`, and bad input (exit 2, nothing written). No worker runs.
 */
import {existsSync, mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {randomUUID} from 'node:crypto';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {ROOT, runCli, type CliRun} from '../helpers/spawn.js';
import {createTestEnv, type TestEnv} from '../helpers/env.js';
import {createClient} from '../../src/core/client.js';

let testEnv: TestEnv;
let cwd: string;

const ax = (args: string[]): Promise<CliRun> => runCli(args, {cwd, env: testEnv.env});

async function ok(args: string[]): Promise<CliRun> {
  const r = await ax(args);
  expect(r.code, `${args.join(' ')}\n${r.stdout}\n${r.stderr}`).toBe(0);
  return r;
}

const count = async (table: string): Promise<number> =>
  Number((await testEnv.sql<{n: number}>(`SELECT COUNT(*) AS n FROM ${table}`))[0]?.n);

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist/commands/batches/list.js'))) throw new Error('the CLI is not built: run `npm run build` first');
  cwd = mkdtempSync(join(tmpdir(), 'ax-e2e-wf-'));
  testEnv = await createTestEnv();
});

afterAll(async () => {
  await testEnv?.dispose();
  if (cwd) rmSync(cwd, {recursive: true, force: true});
});

describe('ax submit --after, ax batches', () => {
  test('a dependent waits for its parents, and tasks show says so', async () => {
    const a = (await ok(['submit', 'order_pack'])).stdout.trim();
    const b = (await ok(['submit', 'order_pack', '--delay', '1h'])).stdout.trim();
    const c = (await ok(['submit', 'order_ship', '--after', a, '--after', b, '--on-parent-failure', 'run'])).stdout.trim();
    const shown = await ok(['tasks', 'show', c]);
    expect(shown.stdout).toContain('SUBMITTED (waiting)');
    expect(shown.stdout).toContain('waiting for 2 parents');
    expect(shown.stdout).toContain('on parent failure: run anyway');
    const json = (await ok(['tasks', 'show', c, '--json'])).json;
    expect(json.links.waitingFor).toBe(2);
    expect(json.links.parents.map((p: {id: string}) => p.id).sort()).toEqual([a, b].sort());
    const listed = (await ok(['tasks', 'list', '--type', 'order_ship'])).stdout;
    expect(listed).toMatch(new RegExp(`${c}.*waiting`));
    expect((await ok(['tasks', 'show', a, '--json'])).json.links.dependents).toEqual([{id: c, type: 'order_ship', state: 'submitted'}]);
    // The types' backlog counts it among the delayed, and says it waits.
    expect((await ok(['types', 'list'])).stdout).toMatch(/^order_ship +no handler +0 +1 \(1 waiting\) +0 /m);
    const types = (await ok(['types', 'list', '--json'])).json as {types: Array<{type: string; delayed: number; waiting: number}>};
    expect(types.types.find((t) => t.type === 'order_ship')).toMatchObject({delayed: 1, waiting: 1});
    expect(types.types.find((t) => t.type === 'order_pack')).toMatchObject({waiting: 0});
  });

  test('bad input: exit 2 and nothing written', async () => {
    const before = [await count('tasks'), await count('task_deps')];
    const unknown = await ax(['submit', 'order_ship', '--after', randomUUID()]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no task');
    expect((await ax(['submit', 'order_ship', '--after', 'nope'])).code).toBe(2);
    expect((await ax(['submit', 'order_ship', '--after', randomUUID(), '--delay', '5s'])).code).toBe(2);
    expect((await ax(['batches', 'show', 'nope'])).code).toBe(2);
    expect((await ax(['batches', 'show', randomUUID()])).code).toBe(3);
    expect([await count('tasks'), await count('task_deps')]).toEqual(before);
  });

  test('batches list and show print the progress', async () => {
    const client = createClient({
      ...testEnv.rt,
      store: await testEnv.store(),
      broker: await testEnv.broker(),
      release: async () => undefined,
    });
    const r = await client.submitBatch([{type: 'mail_send'}, {type: 'mail_send'}], {callback: {type: 'mail_report'}});
    await client.close();
    const list = (await ok(['batches', 'list', '--json'])).json;
    expect(list.batches).toContainEqual(
      expect.objectContaining({id: r.batchId, total: 2, done: 0, callbackState: 'submitted', doneAt: null}),
    );
    const shown = await ok(['batches', 'show', r.batchId!]);
    expect(shown.stdout).toContain('0/2 (succeeded 0, dead 0, cancelled 0)');
    expect(shown.stdout).toContain(`${r.callbackId}  submitted`);
  });
});
