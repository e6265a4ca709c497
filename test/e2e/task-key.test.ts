/**
 * Task keys through the built CLI (`node bin/run.js …`; run `npm run build` first) against the real
 * MariaDB and RabbitMQ: `ax cron add --key` stores the key, `ax cron show|list` print it, and every
 * occurrence (created by a scheduler's load, or `ax cron trigger`) carries it into tasks.task_key;
 * `ax tasks list --key` returns only that key's tasks; a bad key on `cron add`, `submit` or `tasks
 * list` exits 2 with the reason and writes nothing.
 */
import {existsSync, mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {createCronService} from '../../src/core/cron/service.js';
import {ROOT, runCli, type CliRun} from '../helpers/spawn.js';
import {createTestEnv, type TestEnv} from '../helpers/env.js';

let testEnv: TestEnv;
let cwd: string;

const ax = (args: string[]): Promise<CliRun> => runCli(args, {cwd, env: testEnv.env});

async function ok(args: string[]): Promise<CliRun> {
  const r = await ax(args);
  expect(r.code, `${args.join(' ')}\n${r.stdout}\n${r.stderr}`).toBe(0);
  return r;
}

/** oclif wraps error messages to the terminal width behind " ›   " margins: undo that. */
const flat = (stderr: string): string => stderr.replace(/\s*\n\s*›\s*/g, ' ');

async function counts(): Promise<{schedules: number; tasks: number; history: number}> {
  const n = async (table: string): Promise<number> => Number((await testEnv.sql<{n: number}>(`SELECT COUNT(*) AS n FROM ${table}`))[0]?.n);
  return {schedules: await n('cron_schedules'), tasks: await n('tasks'), history: await n('task_history')};
}

/** A command that must fail with exit 2 (invalid_input) and `message`, writing nothing. */
async function refused(args: string[], message: RegExp): Promise<void> {
  const before = await counts();
  const r = await ax(args);
  expect(r.code, `${args.join(' ')}\n${r.stdout}\n${r.stderr}`).toBe(2);
  if (args.includes('--json')) {
    expect(r.json?.error?.code).toBe('invalid_input');
    expect(r.json?.error?.message).toMatch(message);
  } else expect(flat(r.stderr)).toMatch(message);
  expect(await counts()).toEqual(before);
}

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist/commands/cron/add.js')) || !existsSync(join(ROOT, 'dist/commands/tasks/list.js'))) {
    throw new Error('the CLI is not built: run `npm run build` first');
  }
  cwd = mkdtempSync(join(tmpdir(), 'ax-e2e-key-'));
  testEnv = await createTestEnv();
});

afterAll(async () => {
  await testEnv?.dispose();
  if (cwd) rmSync(cwd, {recursive: true, force: true});
});

describe('ax cron add --key', () => {
  test('stores the key, shows it, and every occurrence carries it into tasks.task_key', async () => {
    const add = await ok([
      'cron',
      'add',
      'tenant-report',
      '--cron',
      '0 2 * * *',
      '--tz',
      'UTC',
      '--type',
      'report_daily',
      '--key',
      'tenant:42',
      '--json',
    ]);
    expect(add.json.schedule).toMatchObject({name: 'tenant-report', key: 'tenant:42'});
    expect(await testEnv.sql('SELECT task_key FROM cron_schedules WHERE name = ?', ['tenant-report'])).toEqual([{task_key: 'tenant:42'}]);

    const show = await ok(['cron', 'show', 'tenant-report']);
    expect(show.stdout).toMatch(/^ {2}key {7}tenant:42$/m);
    expect((await ok(['cron', 'show', 'tenant-report', '--json'])).json.schedule.key).toBe('tenant:42');
    await ok(['cron', 'add', 'keyless', '--cron', '@hourly', '--tz', 'UTC', '--type', 'report_daily']);
    expect((await ok(['cron', 'show', 'keyless'])).stdout).not.toMatch(/^ {2}key /m);
    const list = await ok(['cron', 'list', '--json']);
    expect(list.json.schedules.map((s: {name: string; key: string | null}) => [s.name, s.key])).toEqual([
      ['keyless', null],
      ['tenant-report', 'tenant:42'],
    ]);

    // What `ax scheduler` does on every load: create the first occurrence of each schedule.
    const cron = createCronService({...testEnv.rt, store: await testEnv.store()});
    await cron.materialize(testEnv.config.schedulerHorizonMs);
    const trigger = await ok(['cron', 'trigger', 'tenant-report', '--json']);
    const occurrences = await testEnv.sql<{id: string; task_key: string | null}>(
      'SELECT id, task_key FROM tasks WHERE schedule_name = ? ORDER BY run_at',
      ['tenant-report'],
    );
    expect(occurrences.length).toBe(2); // the scheduled one and the triggered one
    expect(occurrences.map((o) => o.task_key)).toEqual(['tenant:42', 'tenant:42']);
    expect(occurrences.map((o) => o.id)).toContain(trigger.json.taskId);
    expect(await testEnv.sql('SELECT DISTINCT task_key FROM tasks WHERE schedule_name = ?', ['keyless'])).toEqual([{task_key: null}]);
  });

  test.each([
    ['a key with a trailing space', 'tenant:42 ', /key must not begin or end with whitespace/],
    ['a key with a control character', 'tenant\u000142', /key must not contain control characters/],
    ['a key longer than 128 characters', 'k'.repeat(129), /key must be a string of 1 to 128 characters/],
    ['an empty key', '', /key must be a string of 1 to 128 characters/],
  ])('refuses %s: exit 2, nothing written', async (_what, key, message) => {
    await refused(['cron', 'add', 'bad-key', '--cron', '@daily', '--tz', 'UTC', '--type', 'report_daily', '--key', key], message);
    await refused(['cron', 'add', 'bad-key', '--cron', '@daily', '--tz', 'UTC', '--type', 'report_daily', '--key', key, '--json'], message);
  });
});

describe('ax submit --key and ax tasks list --key', () => {
  test('a bad key is refused: exit 2, nothing written', async () => {
    await refused(['submit', 'order_notify', '--key', ' tenant:1'], /key must not begin or end with whitespace/);
    await refused(['submit', 'order_notify', '--key', 'k'.repeat(129), '--json'], /key must be a string of 1 to 128 characters/);
  });

  test('tasks list --key returns only the tasks of that key', async () => {
    const submit = async (extra: string[]): Promise<string> =>
      (await ok(['submit', 'order_notify', '--json', ...extra])).json.ids[0] as string;
    const a1 = await submit(['--key', 'tenant:7', '--payload', '{"n": 1}']);
    const a2 = await submit(['--key', 'tenant:7', '--payload', '{"n": 2}']);
    await submit(['--key', 'tenant:8']);
    await submit(['--key', 'tenant:70']);
    await submit([]);
    const list = await ok(['tasks', 'list', '--key', 'tenant:7', '--json']);
    expect(list.json.count).toBe(2);
    expect(list.json.tasks.map((t: {id: string}) => t.id).sort()).toEqual([a1, a2].sort());
    expect(list.json.tasks.map((t: {key: string}) => t.key)).toEqual(['tenant:7', 'tenant:7']);
    // Combined with the other filters (AND).
    expect((await ok(['tasks', 'list', '--key', 'tenant:7', '--state', 'running', '--json'])).json.count).toBe(0);
    expect((await ok(['tasks', 'list', '--key', 'tenant:none', '--json'])).json.count).toBe(0);
    expect((await ok(['tasks', 'list', '--key', 'tenant:7'])).stdout).toContain(a1);
    const bad = await ax(['tasks', 'list', '--key', 'tenant:7 ', '--json']);
    expect(bad.code).toBe(2);
    expect(bad.json.error).toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/key must not begin or end with whitespace/),
    });
  });
});
