/**
 * Debounce and throttle through the built CLI (`node bin/run.js …`; run `npm run build` first)
 * against the real MariaDB and RabbitMQ: `ax submit --debounce/--throttle`, the replaced task as
 * `ax tasks show` prints it, the kept id printed for a throttled submit, and bad input (exit 2,
 * nothing written).
 */
import {existsSync, mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {ROOT, runCli, type CliRun} from '../helpers/spawn.js';
import {createTestEnv, type TestEnv} from '../helpers/env.js';

let testEnv: TestEnv;
let cwd: string;

const ax = (args: string[], stdin?: string): Promise<CliRun> =>
  runCli(args, {cwd, env: testEnv.env, ...(stdin === undefined ? {} : {stdin})});

async function ok(args: string[], stdin?: string): Promise<CliRun> {
  const r = await ax(args, stdin);
  expect(r.code, `${args.join(' ')}\n${r.stdout}\n${r.stderr}`).toBe(0);
  return r;
}

/** oclif wraps error messages to the terminal width behind " ›   " margins: undo that. */
const flat = (stderr: string): string => stderr.replace(/\s*\n\s*›\s*/g, ' ');

const counts = async (): Promise<{tasks: number; gates: number}> => {
  const n = async (table: string): Promise<number> => Number((await testEnv.sql<{n: number}>(`SELECT COUNT(*) AS n FROM ${table}`))[0]?.n);
  return {tasks: await n('tasks'), gates: await n('task_gates')};
};

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist/commands/submit.js'))) throw new Error('the CLI is not built: run `npm run build` first');
  cwd = mkdtempSync(join(tmpdir(), 'ax-e2e-gate-'));
  testEnv = await createTestEnv();
});

afterAll(async () => {
  await testEnv?.dispose();
  if (cwd) rmSync(cwd, {recursive: true, force: true});
});

describe('ax submit --debounce / --throttle', () => {
  test('a second debounced submit replaces the first, and `ax tasks show` says by which', async () => {
    const first = (
      await ok(['submit', 'search_reindex', '--payload', '{"doc": 7}', '--debounce', '1h', '--debounce-key', 'doc:7'])
    ).stdout.trim();
    const second = (
      await ok(['submit', 'search_reindex', '--payload', '{"doc": 7}', '--debounce', '1h', '--debounce-key', 'doc:7'])
    ).stdout.trim();
    expect(second).not.toBe(first);
    const shown = await ok(['tasks', 'show', first]);
    expect(shown.stdout).toContain('CANCELLED');
    expect(shown.stdout).toContain(`replaced by ${second} (debounce doc:7)`);
    expect((await ok(['tasks', 'show', second, '--json'])).json.task.state).toBe('submitted');
  });

  test('with --stdin, of the lines of one key only the last is kept', async () => {
    const r = await ok(
      ['submit', 'search_reindex', '--stdin', '--debounce', '1h', '--debounce-key', 'doc:8', '--json'],
      '{"n": 1}\n{"n": 2}\n{"n": 3}\n',
    );
    expect(r.json.inserted).toBe(3);
    const states = await testEnv.sql<{id: string; state: string}>('SELECT id, state FROM tasks WHERE id IN (?) ORDER BY id', [r.json.ids]);
    expect(states.map((s) => s.state)).toEqual(['cancelled', 'cancelled', 'submitted']);
    expect(states[2]!.id).toBe(r.json.ids[2]);
  });

  test('a throttled submit writes nothing and prints the kept task', async () => {
    const kept = (await ok(['submit', 'report_build', '--throttle', '1h', '--throttle-key', 'tenant:3'])).stdout.trim();
    const before = await counts();
    const again = await ok(['submit', 'report_build', '--throttle', '1h', '--throttle-key', 'tenant:3']);
    expect(again.stdout.trim()).toBe(kept);
    expect(again.stderr).toMatch(/1 task\(s\) throttled/);
    expect(await counts()).toEqual(before);
    const json = await ok(['submit', 'report_build', '--throttle', '1h', '--throttle-key', 'tenant:3', '--json']);
    expect(json.json).toMatchObject({ids: [kept], inserted: 0, throttled: [{keptId: kept, key: 'tenant:3'}]});
  });

  test.each<[string, string[], RegExp]>([
    ['a window over a day', ['--debounce', '25h', '--debounce-key', 'k'], /debounce window 25h is over a day/],
    ['a window of 0', ['--throttle', '0', '--throttle-key', 'k'], /throttle window must be at least 1ms/],
    [
      'debounce with a dedup key',
      ['--debounce', '5s', '--debounce-key', 'k', '--dedup-key', 'd'],
      /cannot also be provided when using --(debounce|dedup-key)/,
    ],
    [
      'debounce with throttle',
      ['--debounce', '5s', '--debounce-key', 'k', '--throttle', '5s', '--throttle-key', 'k'],
      /cannot also be provided when using --(debounce|throttle)/,
    ],
    ['debounce without a key', ['--debounce', '5s'], /debounce-key/],
    ['a bad key', ['--debounce', '5s', '--debounce-key', 'k\tx'], /debounce key must not contain control characters/],
  ])('refuses %s: exit 2, nothing written', async (_what, flags, message) => {
    const before = await counts();
    const r = await ax(['submit', 'report_build', ...flags]);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(2);
    expect(flat(r.stderr)).toMatch(message);
    expect(await counts()).toEqual(before);
  });

  test('a stdin line with debounce and a delay is refused with its line number, nothing written', async () => {
    const before = await counts();
    const r = await ax(
      ['submit', '--stdin', '--json'],
      '{"type": "report_build"}\n{"type": "report_build", "debounce": {"key": "k", "window": "5s"}, "delay": "1s"}\n',
    );
    expect(r.code).toBe(2);
    expect(r.json?.error?.message).toMatch(/line 2: debounce sets the due time/);
    expect(await counts()).toEqual(before);
  });
});
