/**
 * The CLI's tables through the built CLI (`node bin/run.js`, run `npm run build` first): a task id
 * is never cut, on a real terminal (tmux) of 80 and 120 columns, and piped output is never cut at
 * all (the whole last error). Needs tmux.
 */
import {execFileSync} from 'node:child_process';
import {existsSync, mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {ROOT, runCli, type CliRun} from '../helpers/spawn.js';
import {createTestEnv, eventually, type TestEnv} from '../helpers/env.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';

let testEnv: TestEnv;
let cwd: string;
let id: string;
const ERROR = 'Error: connect ECONNREFUSED 10.0.0.7:443 while calling the payment API (attempt 2, request 7f3e9a1c) — gave up';

function ax(args: string[]): Promise<CliRun> {
  return runCli(args, {cwd, env: testEnv.env});
}

/** Writes a task straight to the store and runs it to death with ERROR as its last error. */
async function deadTask(type: string): Promise<string> {
  const store = await testEnv.store();
  const t = validateTaskSpec(
    {type, payload: {}},
    {maxRetries: 0, payloadLimitBytes: 65_536, cell: 'default'},
    Date.now(),
    createIdGenerator(Date.now),
  );
  await store.tasksInsert({tasks: [t], actor: 'e2e:1'});
  const c = (await store.tasksClaim({ids: [t.id], worker: 'w:1', leaseMs: 30_000})).claimed[0]!;
  await store.outcomesApply({outcomes: [{kind: 'deadLetter', id: t.id, fence: c.fence, error: ERROR, stack: null}], actor: 'w:1'});
  return t.id;
}

/** Runs `ax <args>` in a tmux terminal of `cols` columns and returns the screen once it has finished. */
async function onTerminal(args: string[], cols: number): Promise<string> {
  const session = `axtables_${process.pid}_${cols}_${args.join('_')}`;
  const vars = Object.entries({...testEnv.env, NODE_ENV: 'production', AX_CONFIG: ''})
    .map(([k, v]) => `${k}='${v}'`)
    .join(' ');
  execFileSync('tmux', [
    'new-session',
    '-d',
    '-s',
    session,
    '-x',
    String(cols),
    '-y',
    '20',
    `cd '${ROOT}' && env ${vars} node bin/run.js ${args.join(' ')}; echo __done__; sleep 60`,
  ]);
  try {
    // -J joins the lines the terminal wrapped, so a wrapped row reads as one line.
    const pane = (): string => execFileSync('tmux', ['capture-pane', '-p', '-J', '-t', session]).toString();
    return await eventually(async () => (pane().includes('__done__') ? pane() : null), 20_000, `ax ${args.join(' ')} on ${cols} columns`);
  } finally {
    execFileSync('tmux', ['kill-session', '-t', session], {stdio: 'ignore'});
  }
}

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist/commands/tasks/list.js'))) throw new Error('the CLI is not built: run `npm run build` first');
  cwd = mkdtempSync(join(tmpdir(), 'ax-e2e-tables-'));
  testEnv = await createTestEnv();
  id = await deadTask('order_notify_with_a_long_type_name');
});

afterAll(async () => {
  await testEnv?.dispose();
  if (cwd) rmSync(cwd, {recursive: true, force: true});
});

describe('tables', () => {
  test.each([
    [['tasks', 'list'], 80],
    [['tasks', 'list'], 120],
    [['dlq', 'list'], 80],
    [['dlq', 'list'], 120],
  ])('ax %j on a terminal of %i columns shows the task id whole and cuts the error', async (args, cols) => {
    const screen = await onTerminal(args, cols);
    const row = screen.split('\n').find((l) => l.includes(id.slice(0, 8)));
    expect(row, screen).toBeDefined();
    expect(row?.startsWith(`${id}  `), screen).toBe(true);
    expect(row).toMatch(/…$/);
    expect(screen).not.toContain(ERROR);
  });

  test.each([[['tasks', 'list']], [['dlq', 'list']], [['dlq', 'stats']]])(
    'ax %j piped: nothing is cut, the last error whole',
    async (args) => {
      const r = await ax(args);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(id);
      if (args[1] === 'list') expect(r.stdout).toContain(ERROR);
      expect(r.stdout).not.toContain('…');
    },
  );
});
