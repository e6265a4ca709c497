/**
 * End-to-end tests of the built CLI (`node bin/run.js …`, run `npm run build` first) against the
 * real MariaDB and RabbitMQ: submit, reconcile and `tasks list|show|stats|cancel`, each with its
 * success path (--json, checked against the database and the queues) and its bad input (clear
 * error, the documented exit code, nothing written).
 */
import {existsSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join, resolve} from 'node:path';
import {fileURLToPath} from 'node:url';
import {runCli, type CliRun} from '../helpers/spawn.js';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {decodeMessage} from '../../src/core/broker/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import {createTestEnv, eventually, type TestEnv} from '../helpers/env.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const UNREACHABLE = {AX_MYSQL_URL: 'mysql://root@127.0.0.1:1/ax_unreachable'};
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UNKNOWN_ID = '01900000-0000-7000-8000-00000000abcd';

let testEnv: TestEnv;
let cwd: string;

type Run = CliRun;

/** Runs the built CLI in the test environment; stdin is closed unless `stdin` is given. */
function ax(args: string[], opts: {stdin?: string; env?: Record<string, string>} = {}): Promise<Run> {
  return runCli(args, {cwd, env: {...testEnv.env, ...opts.env}, ...(opts.stdin === undefined ? {} : {stdin: opts.stdin})});
}

/** oclif wraps error messages to the terminal width behind " ›   " margins: undo that. */
function flat(stderr: string): string {
  return stderr.replace(/\s*\n\s*›\s*/g, ' ');
}

async function count(where = '1 = 1', params: unknown[] = []): Promise<number> {
  const rows = await testEnv.sql<{n: number}>(`SELECT COUNT(*) AS n FROM tasks WHERE ${where}`, params);
  return Number(rows[0]?.n);
}

async function historyCount(): Promise<number> {
  const rows = await testEnv.sql<{n: number}>('SELECT COUNT(*) AS n FROM task_history');
  return Number(rows[0]?.n);
}

/** Runs a command that must fail: checks the exit code, the message, and that nothing was written. */
async function refused(
  args: string[],
  exit: number,
  message: RegExp,
  opts: {stdin?: string; env?: Record<string, string>} = {},
): Promise<Run> {
  const [tasks, history] = [await count(), await historyCount()];
  const r = await ax(args, opts);
  expect(r.code, `${args.join(' ')}\n${r.stdout}\n${r.stderr}`).toBe(exit);
  if (args.includes('--json')) expect(r.json?.error?.message).toMatch(message);
  else expect(flat(r.stderr)).toMatch(message);
  expect(await count()).toBe(tasks);
  expect(await historyCount()).toBe(history);
  return r;
}

async function submitOne(type: string, payload: object, extra: string[] = []): Promise<string> {
  const r = await ax(['submit', type, '--payload', JSON.stringify(payload), '--json', ...extra]);
  expect(r.code, r.stderr).toBe(0);
  return r.json.ids[0] as string;
}

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist/commands/submit.js')) || !existsSync(join(ROOT, 'dist/commands/tasks/list.js'))) {
    throw new Error('the CLI is not built: run `npm run build` first');
  }
  cwd = mkdtempSync(join(tmpdir(), 'ax-e2e-'));
  testEnv = await createTestEnv();
});

afterAll(async () => {
  await testEnv?.dispose();
  if (cwd) rmSync(cwd, {recursive: true, force: true});
});

describe('--help', () => {
  test.concurrent.each(['submit', 'reconcile', 'tasks list', 'tasks show', 'tasks stats', 'tasks cancel'])(
    'ax %s --help shows examples',
    async (cmd) => {
      const r = await ax([...cmd.split(' '), '--help']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('EXAMPLES');
      expect(r.stdout).toContain(`$ ax ${cmd}`);
    },
  );
});

describe('ax submit', () => {
  test('one task: the row is written, published, and its id printed', async () => {
    const r = await ax(['submit', 'order_notify', '--payload', '{"orderId": 42}', '--max-retries', '3', '--timeout', '30s', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toMatchObject({inserted: 1, existing: 0, unpublished: 0});
    expect(r.json.ids).toHaveLength(1);
    const id = r.json.ids[0] as string;
    expect(id).toMatch(UUID);
    const [row] = await testEnv.sql<Record<string, unknown>>('SELECT * FROM tasks WHERE id = ?', [id]);
    expect(row).toMatchObject({type: 'order_notify', state: 'submitted', pool: 'io', max_retries: 3, timeout_ms: 30_000});
    expect(JSON.parse(row?.payload as string)).toEqual({orderId: 42});
    expect(row?.published_at).not.toBeNull();
  });

  test('human output is the ids, one per line; --delay makes a future task that is not rung yet', async () => {
    const r = await ax(['submit', 'order_notify', '--delay', '1h']);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(UUID);
    const [row] = await testEnv.sql<{delta: number; published_at: Date | null; payload: string}>(
      'SELECT TIMESTAMPDIFF(SECOND, NOW(3), run_at) AS delta, published_at, payload FROM tasks WHERE id = ?',
      [lines[0]],
    );
    expect(Number(row?.delta)).toBeGreaterThan(3500);
    expect(row?.published_at).toBeNull();
    expect(row?.payload).toBe('{}');
  });

  test('durations follow one rule: units in any case, fractions rounded to the ms (--delay 1.5s, 5S, 1H30M)', async () => {
    for (const [delay, ms] of [
      ['1.5s', 1500],
      ['5S', 5000],
      ['1H30M', 5_400_000],
    ] as const) {
      const r = await ax(['submit', 'order_notify', '--delay', delay, '--timeout', '2.5S', '--json']);
      expect(r.code, r.stderr).toBe(0);
      const [row] = await testEnv.sql<{delta: number; timeout_ms: number}>(
        'SELECT TIMESTAMPDIFF(MICROSECOND, created_at, run_at) / 1000 AS delta, timeout_ms FROM tasks WHERE id = ?',
        [r.json.ids[0]],
      );
      expect(Math.abs(Number(row?.delta) - ms), delay).toBeLessThan(1000);
      expect(row?.timeout_ms).toBe(2500);
    }
    await refused(['submit', 'order_notify', '--delay', '1h 30m'], 2, /delay "1h 30m" is not a duration/);
    await refused(['submit', 'order_notify', '--delay', '1.5'], 2, /delay "1.5" is not a duration/);
  });

  test('--priority: stored on the row and rung on its level; a --stdin line may set its own, and a bad one refuses them all', async () => {
    const r = await ax(['submit', 'order_notify', '--priority', 'high', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const stdin = '{"type": "order_notify"}\n{"type": "order_notify", "priority": "normal"}\n';
    const many = await ax(['submit', '--stdin', '--priority', 'low', '--json'], {stdin});
    expect(many.code, many.stderr).toBe(0);
    const ids = [r.json.ids[0], ...many.json.ids];
    const rows = await testEnv.sql<{id: string; priority: string; published_at: Date | null}>(
      `SELECT id, priority, published_at FROM tasks WHERE id IN (?, ?, ?)`,
      ids,
    );
    const byId = new Map(rows.map((x) => [x.id, x]));
    expect(ids.map((id) => byId.get(id)?.priority)).toEqual(['high', 'low', 'normal']);
    expect(rows.every((x) => x.published_at instanceof Date)).toBe(true);
    await refused(['submit', '--stdin'], 2, /line 2: priority "top" is not a level: use one of high, normal, low/, {
      stdin: '{"type": "order_notify"}\n{"type": "order_notify", "priority": "top"}\n',
    });
  });

  test('--at and --payload-file', async () => {
    const file = join(cwd, 'payload.json');
    writeFileSync(file, '{"report": "daily", "n": [1, 2]}');
    const at = new Date(Date.now() + 2 * 86_400_000).toISOString().replace('Z', '+00:00');
    const r = await ax(['submit', 'report_build', '--payload-file', file, '--at', at, '--pool', 'cpu', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const [row] = await testEnv.sql<{run_at: Date; pool: string; payload: string}>('SELECT run_at, pool, payload FROM tasks WHERE id = ?', [
      r.json.ids[0],
    ]);
    expect(row?.run_at.getTime()).toBe(Date.parse(at));
    expect(row?.pool).toBe('cpu');
    expect(JSON.parse(row?.payload ?? '')).toEqual({report: 'daily', n: [1, 2]});
  });

  test('--stdin: 3 NDJSON task specs become 3 rows (blank lines skipped, flags fill the gaps)', async () => {
    const before = await count();
    const stdin = [
      JSON.stringify({type: 'user_register', payload: {user: 1}}),
      '',
      JSON.stringify({type: 'user_register', payload: {user: 2}, delay: '10m'}),
      JSON.stringify({type: 'invoice_send', payload: {invoice: 'A-1'}, maxRetries: 1}),
      '',
    ].join('\n');
    const r = await ax(['submit', '--stdin', '--timeout', '5s', '--json'], {stdin});
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toMatchObject({inserted: 3, existing: 0, unpublished: 0});
    expect(await count()).toBe(before + 3);
    const rows = await testEnv.sql<{id: string; type: string; max_retries: number; timeout_ms: number; published_at: Date | null}>(
      `SELECT id, type, max_retries, timeout_ms, published_at FROM tasks WHERE id IN (?, ?, ?) ORDER BY id`,
      r.json.ids,
    );
    expect(rows.map((x) => x.type).sort()).toEqual(['invoice_send', 'user_register', 'user_register']);
    expect(rows.every((x) => x.timeout_ms === 5000)).toBe(true);
    expect(rows.find((x) => x.type === 'invoice_send')?.max_retries).toBe(1);
    expect(rows.filter((x) => x.published_at === null)).toHaveLength(1); // the delayed one
  });

  test('--stdin with a type: each line is a payload', async () => {
    const r = await ax(['submit', 'order_notify', '--stdin', '--json'], {stdin: '{"orderId": 1}\n{"orderId": 2}\n'});
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.inserted).toBe(2);
    const rows = await testEnv.sql<{payload: string}>('SELECT payload FROM tasks WHERE id IN (?, ?) ORDER BY id', r.json.ids);
    expect(rows.map((x) => JSON.parse(x.payload))).toEqual(expect.arrayContaining([{orderId: 1}, {orderId: 2}]));
  });

  test('idempotent: the same dedup key and content returns the same task; other content is a conflict (exit 4)', async () => {
    const args = ['submit', 'credit_grant', '--payload', '{"user": 7}', '--dedup-key', 'user-7:signup', '--json'];
    const first = await ax(args);
    expect(first.code, first.stderr).toBe(0);
    const again = await ax(args);
    expect(again.code, again.stderr).toBe(0);
    expect(again.json).toMatchObject({ids: first.json.ids, inserted: 0, existing: 1});
    expect(await count('dedup_key = ?', ['user-7:signup'])).toBe(1);

    const r = await refused(
      ['submit', 'credit_grant', '--payload', '{"user": 8}', '--dedup-key', 'user-7:signup'],
      4,
      /refused|conflict|different/i,
    );
    expect(r.stdout).toBe('');
    const [row] = await testEnv.sql<{payload: string}>('SELECT payload FROM tasks WHERE dedup_key = ?', ['user-7:signup']);
    expect(JSON.parse(row?.payload ?? '')).toEqual({user: 7});
  });

  test('the same --id with other content is a conflict (exit 4, --json error)', async () => {
    const id = '01a00000-0000-7000-8000-0000000000aa';
    await submitOne('order_notify', {a: 1}, ['--id', id]);
    const r = await refused(['submit', 'order_notify', '--payload', '{"a": 2}', '--id', id, '--json'], 4, /refused/);
    expect(r.json.error.code).toBe('conflict');
  });

  const big = JSON.stringify({blob: 'x'.repeat(70_000)});
  test.concurrent.each<[string, string[], RegExp, string?]>([
    ['no type', ['submit'], /task type/],
    ['bad type name', ['submit', 'OrderNotify'], /not domain_action/],
    ['SQL in the type', ['submit', "a_b'; DROP TABLE tasks; --"], /not domain_action/],
    ['payload not JSON', ['submit', 'order_notify', '--payload', '{oops'], /--payload is not valid JSON/],
    ['payload not an object', ['submit', 'order_notify', '--payload', '[1, 2]'], /must be a JSON object/],
    ['__proto__ key', ['submit', 'order_notify', '--payload', '{"__proto__": {"admin": true}}'], /forbidden key "__proto__"/],
    ['nested constructor key', ['submit', 'order_notify', '--payload', '{"a": {"constructor": 1}}'], /forbidden key "constructor"/],
    ['payload over the limit', ['submit', 'order_notify', '--payload', big], /over the limit of 65536 bytes/],
    ['payload file missing', ['submit', 'order_notify', '--payload-file', '/nonexistent/p.json'], /cannot be read/],
    [
      '--payload and --payload-file',
      ['submit', 'order_notify', '--payload', '{}', '--payload-file', 'x.json'],
      /either --payload or --payload-file/,
    ],
    ['negative delay', ['submit', 'order_notify', '--delay=-5s'], /delay "-5s" is negative/],
    [
      'a date that does not exist',
      ['submit', 'order_notify', '--at', '2027-02-30T02:00:00Z'],
      /runAt "2027-02-30T02:00:00Z" is not a valid time/,
    ],
    ['hour 24', ['submit', 'order_notify', '--at', '2027-03-01T24:00:00Z'], /is not a valid time/],
    ['NaN delay', ['submit', 'order_notify', '--delay', 'NaN'], /delay "NaN" is not a duration/],
    ['huge delay', ['submit', 'order_notify', '--delay', '400d'], /too large: the maximum is 366d/],
    ['malformed --at', ['submit', 'order_notify', '--at', 'tomorrow'], /not an ISO-8601 time with a zone/],
    ['--at without an offset', ['submit', 'order_notify', '--at', '2030-01-01T00:00:00'], /not an ISO-8601 time with a zone/],
    ['--at impossible date', ['submit', 'order_notify', '--at', '2030-13-45T00:00:00Z'], /not a valid time|not an ISO/],
    ['--at too far away', ['submit', 'order_notify', '--at', '2099-01-01T00:00:00Z'], /more than 366 days/],
    ['--delay and --at', ['submit', 'order_notify', '--delay', '5s', '--at', '2030-01-01T00:00:00Z'], /either --delay or --at/],
    ['unknown pool', ['submit', 'order_notify', '--pool', 'gpu'], /Expected --pool=gpu to be one of: io, cpu/],
    ['unknown priority', ['submit', 'order_notify', '--priority', 'urgent'], /Expected --priority=urgent to be one of: high, normal, low/],
    ['negative max retries', ['submit', 'order_notify', '--max-retries=-1'], /Parsing --max-retries[\s\S]*greater than or equal to 0/],
    ['too many max retries', ['submit', 'order_notify', '--max-retries', '101'], /Parsing --max-retries[\s\S]*less than or equal to 100/],
    ['fractional max retries', ['submit', 'order_notify', '--max-retries', '1.5'], /Parsing --max-retries[\s\S]*Expected an integer/],
    ['zero timeout', ['submit', 'order_notify', '--timeout', '0'], /timeout must be at least 1ms/],
    ['malformed id', ['submit', 'order_notify', '--id', 'abc'], /not a lower-case UUID/],
    ['--json error document', ['submit', 'Bad', '--json'], /not domain_action/],
  ])('refuses %s (exit 2, nothing written)', async (_name, args, message) => {
    const r = await refused(args, 2, message);
    if (args.includes('--json')) expect(r.json.error.code).toBe('invalid_input');
  });

  test('--stdin: one bad line among good ones writes nothing and names every bad line', async () => {
    const stdin = [
      JSON.stringify({type: 'order_notify', payload: {ok: 1}}),
      JSON.stringify({type: 'Order', payload: {}}),
      JSON.stringify({type: 'order_notify', payload: {ok: 3}}),
      '{not json',
      JSON.stringify({type: 'order_notify', dealy: '5s'}),
      JSON.stringify({type: 'order_notify', payload: {__proto__: null, x: 1}}).replace('"x"', '"__proto__"'),
      '[1]',
    ].join('\n');
    const r = await refused(['submit', '--stdin'], 2, /line 2: task type "Order"/, {stdin});
    expect(flat(r.stderr)).toMatch(/line 4: not valid JSON/);
    expect(flat(r.stderr)).toMatch(/line 5: unknown task field "dealy"/);
    expect(flat(r.stderr)).toMatch(/line 6: payload has a forbidden key "__proto__"/);
    expect(flat(r.stderr)).toMatch(/line 7: a task spec must be a JSON object/);
    expect(flat(r.stderr)).toMatch(/nothing was submitted/);
  });

  test('--stdin with a type: a payload over the limit or a top-level __proto__ line is refused', async () => {
    await refused(['submit', 'order_notify', '--stdin'], 2, /line 2: payload is \d+ bytes, over the limit/, {stdin: `{"a": 1}\n${big}\n`});
    await refused(['submit', 'order_notify', '--stdin'], 2, /line 1: payload has a forbidden key "__proto__"/, {
      stdin: '{"__proto__": {"x": 1}}\n',
    });
    await refused(['submit', 'order_notify', '--stdin'], 2, /line 1: payload must be a JSON object/, {stdin: '42\n'});
  });

  test('--stdin: empty input, blank-only input, and conflicting flags are clear errors', async () => {
    await refused(['submit', '--stdin'], 2, /stdin held no tasks/);
    await refused(['submit', '--stdin', '--json'], 2, /stdin held no tasks/, {stdin: '\n  \n'});
    await refused(['submit', 'order_notify', '--stdin', '--payload', '{}'], 2, /cannot be used with --stdin/, {stdin: '{}\n'});
  });

  test('a payload limit from the environment is honoured', async () => {
    await refused(['submit', 'order_notify', '--payload', JSON.stringify({s: 'y'.repeat(200)})], 2, /over the limit of 100 bytes/, {
      env: {AX_PAYLOAD_LIMIT: '100'},
    });
  });

  test('MySQL unreachable: exit 5, nothing written', async () => {
    await refused(['submit', 'order_notify', '--payload', '{}'], 5, /MySQL .* is unavailable/, {env: UNREACHABLE});
  });
});

describe('ax tasks list', () => {
  test('filters by type and state, newest first, with ISO dates', async () => {
    const a = await submitOne('list_alpha', {n: 1});
    const b = await submitOne('list_alpha', {n: 2});
    await submitOne('list_beta', {n: 3});
    const r = await ax(['tasks', 'list', '--type', 'list_alpha', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.count).toBe(2);
    expect(r.json.tasks.map((t: {id: string}) => t.id)).toEqual([b, a]);
    expect(r.json.tasks[0]).toMatchObject({type: 'list_alpha', state: 'submitted', attempt: 0, maxRetries: 5});
    expect(r.json.tasks[0].createdAt).toMatch(ISO);
    expect(r.json.tasks[0].runAt).toMatch(ISO);

    const cancel = await ax(['tasks', 'cancel', a, '--json']);
    expect(cancel.code, cancel.stderr).toBe(0);
    const cancelled = await ax(['tasks', 'list', '--state', 'cancelled', '--type', 'list_alpha', '--json']);
    expect(cancelled.json.tasks.map((t: {id: string}) => t.id)).toEqual([a]);

    const limited = await ax(['tasks', 'list', '--limit', '1', '--since', '15m', '--json']);
    expect(limited.json.count).toBe(1);
    const future = await ax(['tasks', 'list', '--since', '2099-01-01T00:00:00Z', '--json']);
    expect(future.json).toEqual({count: 0, tasks: []});
  });

  test('human table', async () => {
    const r = await ax(['tasks', 'list', '--type', 'list_alpha']);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+TYPE\s+STATE\s+ATTEMPT\s+RUN AT\s+UPDATED\s+LAST ERROR$/);
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/list_alpha\s+submitted\s+0\/6/);
  });

  test.concurrent.each<[string, string[], RegExp]>([
    ['unknown state', ['--state', 'done'], /state "done" is not one of submitted, running/],
    ['SQL in the type', ['--type', "a_b' OR 1=1 --"], /not domain_action/],
    ['SQL in the state', ['--state', "submitted' OR '1'='1"], /is not one of/],
    ['bad since', ['--since', 'yesterday'], /since "yesterday" is neither a duration back from now .* nor an ISO time/],
    ['since a date that does not exist', ['--since', '2027-02-30T00:00:00Z'], /not a valid time/],
    ['bad since time', ['--since', '2026-02-31T99:00:00Z'], /not a valid time/],
    ['limit 0', ['--limit', '0'], /Parsing --limit[\s\S]*greater than or equal to 1 but received: 0/],
    ['limit too big', ['--limit', '1001'], /Parsing --limit[\s\S]*less than or equal to 1000 but received: 1001/],
    [
      'limit not a number',
      ['--limit', '10; DROP TABLE tasks'],
      /Parsing --limit[\s\S]*Expected an integer but received: 10; DROP TABLE tasks/,
    ],
    ['--json error document', ['--state', 'nope', '--json'], /is not one of/],
  ])('refuses %s (exit 2)', async (_n, args, message) => {
    await refused(['tasks', 'list', ...args], 2, message);
  });

  test('MySQL unreachable: exit 5', async () => {
    await refused(['tasks', 'list'], 5, /unavailable/, {env: UNREACHABLE});
  });
});

describe('ax tasks show', () => {
  test('the row and its history, dates as ISO strings', async () => {
    const id = await submitOne('show_me', {k: 'v'}, ['--dedup-key', 'show-1']);
    const r = await ax(['tasks', 'show', id, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.task).toMatchObject({id, type: 'show_me', state: 'submitted', dedupKey: 'show-1', payload: {k: 'v'}});
    expect(r.json.task.updatedAt).toMatch(ISO);
    expect(r.json.history).toHaveLength(1);
    expect(r.json.history[0]).toMatchObject({taskId: id, from: null, to: 'submitted', attempt: 0});
    expect(r.json.history[0].at).toMatch(ISO);
    expect(r.json.history[0].worker).toMatch(/:\d+$/);

    const human = await ax(['tasks', 'show', id]);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(`${id}  show_me  SUBMITTED`);
    expect(human.stdout).toMatch(/history/);
    expect(human.stdout).toMatch(/· → submitted/);
  });

  test("a failed attempt's stack: stored with its history row, printed under the history", async () => {
    const store = await testEnv.store();
    const t = validateTaskSpec(
      {type: 'show_stack', payload: {}},
      {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'},
      Date.now(),
      createIdGenerator(Date.now),
    );
    await store.tasksInsert({tasks: [t], actor: 'e2e:1'});
    const [c] = (await store.tasksClaim({ids: [t.id], worker: 'e2e:w', leaseMs: 60_000})).claimed;
    const stack = 'Error: payment gateway said no\n    at capture (handlers.js:12:9)\n    at run (worker.js:3:1)';
    await store.outcomesApply({
      outcomes: [{kind: 'fail', id: t.id, fence: c!.fence, retryDelayMs: 3_600_000, error: 'Error: payment gateway said no', stack}],
      actor: 'e2e:w',
    });
    const r = await ax(['tasks', 'show', t.id, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.history.map((h: {to: string; stack: string | null}) => [h.to, h.stack])).toEqual([
      ['submitted', null],
      ['running', null],
      ['failed', stack],
    ]);
    const human = await ax(['tasks', 'show', t.id]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/stack of attempt 1\n {2}Error: payment gateway said no\n {6}at capture \(handlers\.js:12:9\)/);
  });

  test('each attempt, from its one history row: its start on its worker, then its end (a failure, a rescued crash, a success)', async () => {
    const store = await testEnv.store();
    const t = validateTaskSpec(
      {type: 'show_attempts', payload: {}},
      {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'},
      Date.now(),
      createIdGenerator(Date.now),
    );
    await store.tasksInsert({tasks: [t], actor: 'e2e:1'});
    const attempt = async (worker: string, leaseMs = 60_000) => {
      const [c] = (await store.tasksClaim({ids: [t.id], worker, leaseMs})).claimed;
      return {c: c!, startedAt: (await store.tasksGet({id: t.id}))!.startedAt!.toISOString()};
    };
    const a1 = await attempt('e2e:w1');
    await store.outcomesApply({
      outcomes: [{kind: 'fail', id: t.id, fence: a1.c.fence, retryDelayMs: 0, error: 'first try'}],
      actor: 'e2e:w1',
    });
    // The second attempt's worker dies: the rescuer ends it, and the row keeps its start and worker.
    const a2 = await attempt('e2e:w2', 1);
    await new Promise((r) => setTimeout(r, 20));
    const rescued = await store.outcomesApply({
      outcomes: [{kind: 'rescue', id: t.id, fence: a2.c.fence, retryDelayMs: 0, error: 'lease expired: worker e2e:w2 stopped renewing it'}],
      actor: 'scheduler:9',
    });
    expect(rescued.applied).toEqual([t.id]);
    const a3 = await attempt('e2e:w3');
    // Running now: its start is on the task row only.
    const running = await ax(['tasks', 'show', t.id, '--json']);
    expect(running.json.task).toMatchObject({state: 'running', worker: 'e2e:w3', startedAt: a3.startedAt});
    expect(running.json.history.at(-1)).toMatchObject({from: 'failed', to: 'running', attempt: 3, worker: 'e2e:w3', at: a3.startedAt});
    await store.outcomesApply({outcomes: [{kind: 'complete', id: t.id, fence: a3.c.fence}], actor: 'e2e:w3'});

    const r = await ax(['tasks', 'show', t.id, '--json']);
    expect(r.code, r.stderr).toBe(0);
    type H = {from: string | null; to: string; attempt: number; worker: string; at: string; startedAt: string | null};
    expect(r.json.history.map((h: H) => [h.from, h.to, h.attempt, h.worker])).toEqual([
      [null, 'submitted', 0, 'e2e:1'],
      ['submitted', 'running', 1, 'e2e:w1'],
      ['running', 'failed', 1, 'e2e:w1'],
      ['failed', 'running', 2, 'e2e:w2'],
      ['running', 'failed', 2, 'e2e:w2'],
      ['failed', 'running', 3, 'e2e:w3'],
      ['running', 'succeeded', 3, 'e2e:w3'],
    ]);
    const h: H[] = r.json.history;
    for (const [i, a] of [a1, a2, a3].entries()) {
      expect(h[2 * i + 1]!.at).toBe(a.startedAt);
      expect(h[2 * i + 2]!.startedAt).toBe(a.startedAt);
    }
    expect(h[4]).toMatchObject({error: 'lease expired: worker e2e:w2 stopped renewing it'});
    // Stored: one row per attempt; the submit is the task row.
    expect(r.json.task).toMatchObject({submittedBy: 'e2e:1', createdAt: h[0]!.at});
    const stored = await testEnv.sql<{n: number}>('SELECT COUNT(*) AS n FROM task_history WHERE task_id = ?', [t.id]);
    expect(Number(stored[0]!.n)).toBe(3);
    const human = await ax(['tasks', 'show', t.id]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/failed → running +2 +e2e:w2/);
    expect(human.stdout).toMatch(/running → failed +2 +e2e:w2 +lease expired/);
    expect(human.stdout).toMatch(/worker +e2e:w3 +started +\d{4}-/);
  });

  test.concurrent.each<[string, string[], number, RegExp]>([
    ['malformed id', ['not-an-id'], 2, /"not-an-id" is not a task id/],
    ['SQL in the id', ["x' OR '1'='1"], 2, /is not a task id/],
    ['missing id', [], 2, /Missing 1 required arg/],
    ['unknown id', [UNKNOWN_ID], 3, /does not exist/],
    ['unknown id, --json', [UNKNOWN_ID, '--json'], 3, /does not exist/],
  ])('refuses %s', async (_n, args, exit, message) => {
    await refused(['tasks', 'show', ...args], exit, message);
  });

  test('MySQL unreachable: exit 5', async () => {
    await refused(['tasks', 'show', UNKNOWN_ID], 5, /unavailable/, {env: UNREACHABLE});
  });
});

describe('ax tasks stats', () => {
  test('due, delayed, running, dead and the oldest due age per type, and what finished since --since', async () => {
    const type = 'stats_only';
    const [due1, , run, ok, died] = await Promise.all([1, 2, 3, 4, 5].map((i) => submitOne(type, {i})));
    await submitOne(type, {i: 6}, ['--delay', '1h']);
    const gone = await submitOne(type, {i: 7});
    expect((await ax(['tasks', 'cancel', gone!, '--json'])).code).toBe(0);
    // Age the two due tasks: the oldest has waited ~2 minutes on the database clock.
    await testEnv.sql('UPDATE tasks SET run_at = NOW(3) - INTERVAL 120 SECOND WHERE id = ?', [due1]);
    const store = await testEnv.store();
    const claimed = (await store.tasksClaim({ids: [run!, ok!, died!], worker: 'w1', leaseMs: 60_000})).claimed;
    const fence = (id: string) => claimed.find((c) => c.id === id)!.fence;
    await store.outcomesApply({
      outcomes: [
        {kind: 'complete', id: ok!, fence: fence(ok!)},
        {kind: 'deadLetter', id: died!, fence: fence(died!), error: 'boom'},
      ],
      actor: 'w1',
    });

    const r = await ax(['tasks', 'stats', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const row = r.json.types.find((t: {type: string}) => t.type === type);
    expect(row).toMatchObject({due: 2, delayed: 1, running: 1, dead: 1, finished: {succeeded: 1, dead: 1, cancelled: 1}});
    expect(row.oldestDueAgeMs).toBeGreaterThanOrEqual(119_000);
    expect(row.oldestDueAgeMs).toBeLessThan(180_000);
    expect(row.oldestDueAt).toMatch(ISO);
    expect(r.json.totals.due).toBe(await count("state IN ('submitted', 'failed') AND run_at <= NOW(3)"));
    expect(Date.parse(r.json.at) - Date.parse(r.json.since)).toBeGreaterThanOrEqual(3_599_000);

    // A window that starts after they finished counts none of them; the backlog is the same.
    const later = await ax(['tasks', 'stats', '--since', new Date(Date.now() - 1).toISOString(), '--json']);
    expect(later.code, later.stderr).toBe(0);
    expect(later.json.types.find((t: {type: string}) => t.type === type)).toMatchObject({
      due: 2,
      finished: {succeeded: 0, dead: 0, cancelled: 0},
    });

    const human = await ax(['tasks', 'stats']);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^TYPE\s+DUE\s+DELAYED\s+RUNNING\s+OLDEST\s+DEAD\s+SUCCEEDED\s+DIED\s+CANCELLED$/m);
    expect(human.stdout).toMatch(/^stats_only\s+2\s+1\s+1\s+2m\d*s?\s+1\s+1\s+1\s+1$/m);
    expect(human.stdout).toMatch(/^finished since \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/m);
  });

  test('refuses a bad --since, an unexpected argument, a missing config file; exit 5 when MySQL is unreachable', async () => {
    await refused(['tasks', 'stats', '--since', 'soon'], 2, /since "soon" is neither a duration/);
    await refused(['tasks', 'stats', '--since', '8d', '--json'], 2, /more than 7d/);
    await refused(['tasks', 'stats', '--since', '2999-01-01T00:00:00Z'], 2, /must be in the past/);
    await refused(['tasks', 'stats', 'extra'], 2, /tasks:stats:extra not found|Unexpected argument: extra/);
    await refused(['tasks', 'stats', '--config', '/nonexistent/ax.json'], 2, /config file .* does not exist/);
    await refused(['tasks', 'stats', '--json'], 5, /unavailable/, {env: UNREACHABLE});
  });
});

describe('ax tasks cancel', () => {
  test('cancels a submitted task once; a second cancel is a conflict (exit 4)', async () => {
    const id = await submitOne('cancel_me', {}, ['--delay', '1h']);
    const r = await ax(['tasks', 'cancel', id, '--reason', 'order refunded', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toEqual({id, from: 'submitted', to: 'cancelled'});
    const [row] = await testEnv.sql<{state: string; finished_at: Date | null}>('SELECT state, finished_at FROM tasks WHERE id = ?', [id]);
    expect(row?.state).toBe('cancelled');
    expect(row?.finished_at).not.toBeNull();
    const hist = await testEnv.sql<{from_state: string; to_state: string; error: string}>(
      'SELECT from_state, to_state, error FROM task_history WHERE task_id = ? ORDER BY seq',
      [id],
    );
    expect(hist.at(-1)).toMatchObject({from_state: 'submitted', to_state: 'cancelled', error: 'order refunded'});

    const again = await refused(
      ['tasks', 'cancel', id],
      4,
      /is cancelled: it has finished; only submitted, failed or running tasks can be cancelled/,
    );
    expect(again.stdout).toBe('');
    const againJson = await refused(['tasks', 'cancel', id, '--json'], 4, /is cancelled/);
    expect(againJson.json.error.code).toBe('conflict');
  });

  test('human output', async () => {
    const id = await submitOne('cancel_me', {n: 2});
    const r = await ax(['tasks', 'cancel', id]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(`cancelled ${id} (was submitted)`);
  });

  test.concurrent.each<[string, string[], number, RegExp, Record<string, string>?]>([
    ['malformed id', ['12345'], 2, /"12345" is not a task id/],
    ['SQL in the id', ["'; UPDATE tasks SET state='cancelled'; --"], 2, /is not a task id/],
    // The id is optional since --type/--state: still exit 2, naming both forms.
    ['missing id', [], 2, /give a task id, or --type and --state/],
    ['a reason too long', [UNKNOWN_ID, '--reason', 'r'.repeat(1001)], 2, /--reason is longer than 1000/],
    ['unknown id', [UNKNOWN_ID], 3, /does not exist/],
    ['MySQL unreachable', [UNKNOWN_ID], 5, /unavailable/, UNREACHABLE],
  ])('refuses %s', async (_n, args, exit, message, env) => {
    await refused(['tasks', 'cancel', ...args], exit, message, env ? {env} : {});
  });
});

describe('ax reconcile', () => {
  test('--dry-run reports a due unpublished task and changes nothing; a real run rings for it', async () => {
    // A task written straight to the store, as if the producer died before publishing it.
    const store = await testEnv.store();
    const task = validateTaskSpec(
      {type: 'reconcile_me', payload: {r: 1}, pool: 'cpu'},
      {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'},
      Date.now(),
      createIdGenerator(Date.now),
    );
    await store.tasksInsert({tasks: [task], actor: 'e2e:1'});
    const broker = await testEnv.broker();
    const cpuQueue = `${testEnv.env.AX_AMQP_PREFIX}.default.cpu`;
    expect((await broker.queueDepths())[cpuQueue]).toBe(0);

    const dry = await ax(['reconcile', '--dry-run', '--json']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.json.dryRun).toBe(true);
    expect(dry.json.undispatched.found).toBeGreaterThanOrEqual(1);
    expect(dry.json.undispatched.ids).toContain(task.id);
    expect(dry.json.undispatched.republished).toBe(0);
    const [afterDry] = await testEnv.sql<{published_at: Date | null; state: string}>('SELECT published_at, state FROM tasks WHERE id = ?', [
      task.id,
    ]);
    expect(afterDry).toEqual({published_at: null, state: 'submitted'});
    expect((await broker.queueDepths())[cpuQueue]).toBe(0);

    const human = await ax(['reconcile', '--dry-run']);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/dry run: nothing was changed/);
    expect(human.stdout).toContain(task.id);

    const real = await ax(['reconcile', '--json']);
    expect(real.code, real.stderr).toBe(0);
    expect(real.json.dryRun).toBe(false);
    expect(real.json.undispatched.ids).toContain(task.id);
    expect(real.json.undispatched.republished).toBe(real.json.undispatched.found);
    const [afterReal] = await testEnv.sql<{published_at: Date | null}>('SELECT published_at FROM tasks WHERE id = ?', [task.id]);
    expect(afterReal?.published_at).not.toBeNull();

    const seen: string[] = [];
    const sub = await broker.consume('cpu', 10, (d) => {
      for (const m of decodeMessage(d.body) ?? []) seen.push(m.id);
      d.ack();
    });
    await eventually(async () => seen.includes(task.id), 10_000, 'the re-published message');
    await sub.cancel();

    const again = await ax(['reconcile', '--json']);
    expect(again.json.undispatched.ids).not.toContain(task.id);
  });

  test.concurrent.each<[string, string[], RegExp]>([
    ['limit 0', ['--limit', '0'], /Parsing --limit[\s\S]*greater than or equal to 1 but received: 0/],
    ['limit too big', ['--limit', '1000001'], /Parsing --limit[\s\S]*less than or equal to 1000000/],
    ['limit not a number', ['--limit', 'lots'], /Parsing --limit[\s\S]*Expected an integer but received: lots/],
    ['unknown flag', ['--force'], /Nonexistent flag: --force/],
  ])('refuses %s (exit 2)', async (_n, args, message) => {
    await refused(['reconcile', ...args], 2, message);
  });

  test('MySQL unreachable: exit 5', async () => {
    await refused(['reconcile', '--dry-run'], 5, /unavailable/, {env: UNREACHABLE});
  });
});

describe('parse errors', () => {
  test('a missing argument or an unknown flag exits 2, with or without --json', async () => {
    for (const args of [
      ['tasks', 'show'],
      ['migrate', '--bogus'],
      ['tasks', 'list', '--state'],
    ]) {
      const human = await ax(args);
      expect(human.code, args.join(' ')).toBe(2);
      const json = await ax([...args, '--json']);
      expect(json.code, `${args.join(' ')} --json`).toBe(2);
      expect(json.json?.error?.code).toBe('invalid_input');
    }
  });
});
