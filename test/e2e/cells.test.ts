/**
 * Cells from the command line, against the real MariaDB and RabbitMQ: `ax submit` routes each task
 * to its type's cell (two databases), `--cell` scopes the inspection commands, `ax cells list`
 * shows each cell's target, backlog, workers and the tasks of types moved elsewhere, and bad
 * configuration or flags (unknown cell, a type in two cells, a malformed prefix, a --cell that is
 * not the types' cell, several cells with a health port, a cell whose database is down) give a
 * clear error, their exit code and change nothing.
 */
import {tmpdir} from 'node:os';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {runCli} from '../helpers/spawn.js';
import {createTestEnv, MYSQL_ROOT, type TestEnv} from '../helpers/env.js';

let env: TestEnv;
const ax = (args: string[], extra: Record<string, string> = {}) => runCli(args, {cwd: tmpdir(), env: {...env.env, ...extra}});
/** AX_CELLS of the environment with `fast`'s types replaced. */
const withFastTypes = (types: string[]): string => {
  const cells = JSON.parse(env.env.AX_CELLS as string) as Record<string, {types: string[]}>;
  return JSON.stringify({...cells, fast: {...cells.fast, types}});
};
/** stderr with oclif's line wrapping undone. */
const oneLine = (stderr: string): string => stderr.replace(/\s*\n ›\s*/g, ' ');
const count = async (cell?: string) => (await (await env.store(cell)).backlog()).rows.reduce((n, r) => n + r.due + r.delayed, 0);

beforeAll(async () => {
  env = await createTestEnv({}, {cells: {fast: ['fast_*']}});
});
afterAll(async () => {
  await env?.dispose();
});

describe('routing and ax cells list', () => {
  test('ax submit sends each task to its type’s cell; --cell scopes the inspection commands', async () => {
    const a = await ax(['submit', 'fast_work', '--json']);
    const b = await ax(['submit', 'other_work', '--json']);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const fast = await ax(['tasks', 'list', '--cell', 'fast', '--json']);
    const dflt = await ax(['tasks', 'list', '--json']);
    expect(fast.json.tasks.map((t: {id: string; type: string}) => [t.id, t.type])).toEqual([[a.json.ids[0], 'fast_work']]);
    expect(dflt.json.tasks.map((t: {id: string; type: string}) => [t.id, t.type])).toEqual([[b.json.ids[0], 'other_work']]);
  });

  test('each cell: where it lives, backlog by state, live workers, tasks of types routed elsewhere', async () => {
    await (await env.store('fast')).workersUpsert({info: {id: 'w-fast', host: 'h', pid: 1, pools: {io: 8}}, inFlight: 0});
    const r = await ax(['cells', 'list', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const db = env.config.mysqlUrl.split('/').pop();
    expect(r.json.cells).toEqual([
      {
        cell: 'default',
        default: true,
        types: [],
        database: `127.0.0.1:3306/${db}`,
        amqp: '127.0.0.1:5672/',
        ownDatabase: false,
        ownAmqp: false,
        backlog: {due: 1, delayed: 0, running: 0, dead: 0},
        workers: {live: 0, stale: 0},
        misplaced: [],
      },
      {
        cell: 'fast',
        default: false,
        types: ['fast_*'],
        database: `127.0.0.1:3306/${db}_fast`,
        amqp: '127.0.0.1:5672/',
        ownDatabase: true,
        ownAmqp: false,
        backlog: {due: 1, delayed: 0, running: 0, dead: 0},
        workers: {live: 1, stale: 0},
        misplaced: [],
      },
    ]);
    const text = await ax(['cells', 'list']);
    expect(text.stdout).toMatch(/^CELL +TYPES +DATABASE +RABBITMQ +DUE +DELAYED +RUNNING +DEAD +WORKERS +MISPLACED$/m);
    expect(text.stdout).toMatch(/^fast +fast_\* +127\.0\.0\.1:3306\/\S+_fast +shared 127\.0\.0\.1:5672\/ +1 +0 +0 +0 +1 +-$/m);
  });

  test('a type moved to another cell while it has tasks: shown as misplaced where they wait', async () => {
    const r = await ax(['cells', 'list', '--cell', 'default', '--json'], {AX_CELLS: withFastTypes(['fast_*', 'other_*'])});
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.cells.map((c: {cell: string; misplaced: unknown}) => [c.cell, c.misplaced])).toEqual([
      ['default', [{type: 'other_work', cell: 'fast', tasks: 1}]],
    ]);
  });

  test('a cell whose database is down is shown with its error, the others still listed: exit 5', async () => {
    const cells = JSON.stringify({fast: {types: ['fast_*'], mysqlUrl: `${MYSQL_ROOT.replace(':3306', ':1')}/nowhere`}});
    const r = await ax(['cells', 'list', '--json'], {AX_CELLS: cells, AX_QUERY_TIMEOUT: '2s'});
    expect(r.code).toBe(5);
    expect(r.json.cells[0]).toMatchObject({cell: 'default', backlog: {due: 1}});
    expect(r.json.cells[1]).toMatchObject({cell: 'fast', backlog: null, error: {code: 'unavailable'}});
  });
});

describe('bad input: a clear error, its exit code, nothing changed', () => {
  test.each<[string, string[], Record<string, string>, RegExp]>([
    ['an unknown cell', ['submit', 'fast_work', '--cell', 'nope'], {}, /unknown cell "nope": the configured cells are default, fast/],
    [
      'a --cell that is not the type’s cell',
      ['submit', 'fast_work', '--cell', 'default'],
      {},
      /task type "fast_work" belongs to cell "fast"/,
    ],
    ['several cells where one is wanted', ['submit', 'fast_work', '--cell', 'default,fast'], {}, /--cell takes one cell here/],
    [
      'a type mapped to two cells',
      ['submit', 'fast_work'],
      {AX_CELLS: JSON.stringify({fast: {types: ['fast_*']}, slow: {types: ['fast_work']}})},
      /"fast_work" \(cell "slow"\) and "fast_\*" \(cell "fast"\) overlap/,
    ],
    [
      'a malformed prefix',
      ['submit', 'fast_work'],
      {AX_CELLS: JSON.stringify({fast: {types: ['fast*']}})},
      /"fast\*" is neither a task type/,
    ],
    ['AX_CELLS that is not JSON', ['cells', 'list'], {AX_CELLS: '{fast'}, /cells \(env AX_CELLS\) is not valid JSON/],
    [
      'an unknown cell for cron add',
      ['cron', 'add', 'x', '--cron', '@daily', '--tz', 'UTC', '--type', 'fast_work', '--cell', 'default'],
      {},
      /belongs to cell "fast"/,
    ],
  ])('%s', async (_what, args, extra, message) => {
    const before = [await count(), await count('fast')];
    const r = await ax(args, extra);
    expect(r.code, r.stdout).toBe(2);
    expect(oneLine(r.stderr)).toMatch(message);
    expect([await count(), await count('fast')]).toEqual(before);
  });

  test('the long-running commands refuse a bad --cell or a type in two cells before connecting', async () => {
    const worker = await ax(['worker', '--handlers', 'test/fixtures/handlers.js', '--cell', 'nope']);
    expect(worker.code).toBe(2);
    expect(oneLine(worker.stderr)).toMatch(/unknown cell "nope"/);
    const twice = JSON.stringify({fast: {types: ['fast_work']}, slow: {types: ['fast_work']}});
    const scheduler = await ax(['scheduler'], {AX_CELLS: twice});
    expect(scheduler.code).toBe(2);
    expect(oneLine(scheduler.stderr)).toMatch(/type "fast_work" is mapped to two cells, "fast" and "slow"/);
    const relay = await ax(['relay', '--cell', 'default,fast', '--health-port', '0']);
    expect(relay.code).toBe(2);
    expect(oneLine(relay.stderr)).toMatch(/a process serving several cells \(default, fast\) has no health endpoint/);
  });
});
