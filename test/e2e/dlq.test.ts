/**
 * End-to-end tests of the dead-letter and audit commands (`ax audit list`, `ax dlq …`) through the
 * built CLI (`node bin/run.js`, run `npm run build` first) against the real MariaDB and RabbitMQ:
 * each success path checked against the database, each bad input refused with its exit code and
 * nothing changed.
 */
import {existsSync, mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {ROOT, runCli, type CliRun} from '../helpers/spawn.js';
import {createTestEnv, type TestEnv} from '../helpers/env.js';

let testEnv: TestEnv;
let cwd: string;

function ax(args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  return runCli(args, {cwd, env: {...testEnv.env, ...env}});
}

/** oclif wraps error messages to the terminal width behind " ›   " margins: undo that. */
const flat = (stderr: string): string => stderr.replace(/\s*\n\s*›\s*/g, ' ');

async function auditCount(): Promise<number> {
  const [row] = await testEnv.sql<{n: number}>('SELECT COUNT(*) AS n FROM admin_audit');
  return Number(row?.n);
}

async function submitDelayed(type: string): Promise<string> {
  const r = await ax(['submit', type, '--delay', '1h', '--json']);
  expect(r.code, r.stderr).toBe(0);
  return r.json.ids[0] as string;
}

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist/commands/audit/list.js'))) throw new Error('the CLI is not built: run `npm run build` first');
  cwd = mkdtempSync(join(tmpdir(), 'ax-e2e-dlq-'));
  testEnv = await createTestEnv();
});

afterAll(async () => {
  await testEnv?.dispose();
  if (cwd) rmSync(cwd, {recursive: true, force: true});
});

describe('ax audit list', () => {
  test('a cancel is audited with AX_OPERATOR, else user@host; a refused cancel is not', async () => {
    const a = await submitDelayed('audit_cancel');
    const b = await submitDelayed('audit_cancel');
    expect((await ax(['tasks', 'cancel', a, '--reason', 'order 42 refunded'], {AX_OPERATOR: 'alice'})).code).toBe(0);
    expect((await ax(['tasks', 'cancel', b], {AX_OPERATOR: ''})).code).toBe(0);
    const n = await auditCount();
    expect((await ax(['tasks', 'cancel', a], {AX_OPERATOR: 'bob'})).code).toBe(4);
    expect(await auditCount()).toBe(n);

    const r = await ax(['audit', 'list', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.count).toBe(2);
    expect(r.json.next).toBeNull();
    const [newest, older] = r.json.entries;
    expect(newest).toMatchObject({command: 'tasks cancel', filter: {ids: [b]}, reason: null, taskCount: 1, taskIds: [b]});
    expect(newest.operator).toMatch(/^[^@\s]+@[^@\s]+$/);
    expect(older).toMatchObject({operator: 'alice', command: 'tasks cancel', reason: 'order 42 refunded', taskCount: 1, taskIds: [a]});
    expect(older.at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

    const page = await ax(['audit', 'list', '--limit', '1', '--json']);
    expect(page.json.entries.map((e: {id: number}) => e.id)).toEqual([newest.id]);
    expect(page.json.next).toBe(newest.id);
    const rest = await ax(['audit', 'list', '--after', String(page.json.next), '--json']);
    expect(rest.json.entries.map((e: {id: number}) => e.id)).toEqual([older.id]);

    const human = await ax(['audit', 'list']);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/ID\s+AT\s+OPERATOR\s+COMMAND\s+TASKS\s+SELECTION\s+REASON/);
    expect(human.stdout).toMatch(/alice\s+tasks cancel\s+1\s+.*order 42 refunded/);
  });

  test('a bad AX_OPERATOR refuses the cancel, nothing changed', async () => {
    const id = await submitDelayed('audit_cancel');
    const n = await auditCount();
    const r = await ax(['tasks', 'cancel', id], {AX_OPERATOR: 'eve\u001b[2J'});
    expect(r.code).toBe(2);
    expect(flat(r.stderr)).toMatch(/AX_OPERATOR holds control characters/);
    const [row] = await testEnv.sql<{state: string}>('SELECT state FROM tasks WHERE id = ?', [id]);
    expect(row?.state).toBe('submitted');
    expect(await auditCount()).toBe(n);
  });

  test.concurrent.each<[string, string[], RegExp]>([
    ['limit 0', ['--limit', '0'], /greater than or equal to 1/],
    ['limit too big', ['--limit', '1001'], /less than or equal to 1000/],
    ['after not a number', ['--after', "1' OR '1'='1"], /Expected an integer/],
    ['after 0', ['--after', '0'], /greater than or equal to 1/],
  ])('refuses %s (exit 2)', async (_n, args, message) => {
    const r = await ax(['audit', 'list', ...args]);
    expect(r.code).toBe(2);
    expect(flat(r.stderr)).toMatch(message);
  });

  test('MySQL unreachable: exit 5', async () => {
    const r = await ax(['audit', 'list'], {AX_MYSQL_URL: 'mysql://root@127.0.0.1:1/ax_unreachable'});
    expect(r.code).toBe(5);
  });
});
