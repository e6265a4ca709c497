/**
 * End-to-end tests of `ax outbox list|retry|stats` (the built CLI, `npm run build` first) against a
 * real MariaDB: the outbox lives in its own business database (AX_OUTBOX_MYSQL_URL), rows are written
 * with plain SQL the way a producer and a relay leave them, and each command is checked with --json,
 * with its human output, and with bad input (exit code, message, nothing changed).
 */
import {existsSync, mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {createTestEnv, type TestEnv} from '../helpers/env.js';
import {createBusinessDb, type BusinessDb} from '../helpers/outbox.js';
import {ROOT, runCli, type CliRun} from '../helpers/spawn.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let testEnv: TestEnv;
let biz: BusinessDb;
let env: Record<string, string>;
let cwd: string;

type Run = CliRun;

function ax(args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
  return runCli(args, {cwd, env: {...env, ...extraEnv}});
}

/** oclif wraps error messages behind " ›   " margins: undo that. */
const flat = (stderr: string): string => stderr.replace(/\s*\n\s*›\s*/g, ' ');

async function sql<T = Record<string, unknown>>(query: string, params: unknown[] = []): Promise<T[]> {
  return biz.sql<T>(query, params);
}

/** Inserts one row; `state` decides the relay columns. Returns its id. */
async function row(
  type: string,
  state: 'pending' | 'failed' | 'sent',
  extra: {ageS?: number; attempts?: number; error?: string} = {},
): Promise<number> {
  const [r] = (await biz.pool.query(
    `INSERT INTO task_outbox (type, payload, created_at, attempts, last_error, failed_at, sent_at)
     VALUES (?, '{"orderId": 1}', NOW(3) - INTERVAL ? SECOND, ?, ?, ${state === 'failed' ? 'NOW(3)' : 'NULL'}, ${state === 'sent' ? 'NOW(3)' : 'NULL'})`,
    [type, extra.ageS ?? 0, extra.attempts ?? 0, extra.error ?? null],
  )) as unknown as [{insertId: number}];
  return r.insertId;
}

/** The relay-owned columns of every row, to prove a refused command changed nothing. */
const snapshot = () => sql('SELECT id, attempts, last_error, failed_at, sent_at FROM task_outbox ORDER BY id');

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist/commands/outbox/list.js'))) throw new Error('the CLI is not built: run `npm run build` first');
  cwd = mkdtempSync(join(tmpdir(), 'ax-e2e-outbox-'));
  testEnv = await createTestEnv();
  biz = await createBusinessDb({migrate: true});
  env = {...testEnv.env, AX_OUTBOX_MYSQL_URL: biz.url};
});

afterAll(async () => {
  await biz?.dispose();
  await testEnv?.dispose();
  if (cwd) rmSync(cwd, {recursive: true, force: true});
});

describe('an empty outbox', () => {
  test('stats, list and list --failed say so', async () => {
    const [stats, statsHuman, list, failed] = await Promise.all([
      ax(['outbox', 'stats', '--json']),
      ax(['outbox', 'stats']),
      ax(['outbox', 'list']),
      ax(['outbox', 'list', '--failed', '--json']),
    ]);
    expect(stats.code, stats.stderr).toBe(0);
    // The business database, not ax's own: the commands open AX_OUTBOX_MYSQL_URL.
    expect(stats.json).toEqual({database: biz.name, unsent: 0, failed: 0, oldestAgeMs: null});
    expect(statsHuman.stdout).toMatch(new RegExp(`task_outbox in database ${biz.name}`));
    expect(statsHuman.stdout).toMatch(/oldest unsent\s+-/);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout.trim()).toBe('no pending outbox rows');
    expect(failed.json).toEqual({kind: 'failed', count: 0, rows: []});
  });
});

describe('with pending, failed and sent rows', () => {
  let pending: number[];
  let failed: number[];
  let sent: number;

  beforeAll(async () => {
    pending = [
      await row('order_notify', 'pending', {ageS: 90}),
      await row('order_notify', 'pending', {ageS: 30, attempts: 2, error: 'relay: RabbitMQ at amqp://x/ is unavailable'}),
      await row('invoice_send', 'pending'),
    ];
    failed = [
      await row('BadType', 'failed', {attempts: 1, error: 'type "BadType" must be domain_action'}),
      await row('order_notify', 'failed', {attempts: 1, error: 'payload is not valid JSON: Unexpected token'}),
    ];
    sent = await row('order_notify', 'sent', {attempts: 1});
  });

  test('stats: unsent, failed and the age of the oldest unsent row (the outbox lag)', async () => {
    const [json, human] = await Promise.all([ax(['outbox', 'stats', '--json']), ax(['outbox', 'stats'])]);
    expect(json.code, json.stderr).toBe(0);
    expect(json.json).toMatchObject({database: biz.name, unsent: 3, failed: 2});
    expect(json.json.oldestAgeMs).toBeGreaterThanOrEqual(90_000);
    expect(json.json.oldestAgeMs).toBeLessThan(150_000);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/unsent\s+3\n/);
    expect(human.stdout).toMatch(/failed\s+2\n/);
    expect(human.stdout).toMatch(/oldest unsent\s+1m3\ds\n/);
  });

  test('list: pending rows oldest first, without sent or failed ones; --limit', async () => {
    const [all, two] = await Promise.all([ax(['outbox', 'list', '--json']), ax(['outbox', 'list', '-n', '2', '--json'])]);
    expect(all.code, all.stderr).toBe(0);
    expect(all.json.kind).toBe('pending');
    expect(all.json.count).toBe(3);
    expect(all.json.rows.map((r: {id: number}) => r.id)).toEqual(pending);
    expect(all.json.rows[1]).toEqual({
      id: pending[1],
      type: 'order_notify',
      taskId: null,
      dedupKey: null,
      createdAt: expect.stringMatching(ISO),
      attempts: 2,
      lastError: 'relay: RabbitMQ at amqp://x/ is unavailable',
      failedAt: null,
    });
    expect(all.json.rows[0]).not.toHaveProperty('payload');
    expect(two.json.rows.map((r: {id: number}) => r.id)).toEqual(pending.slice(0, 2));
  });

  test('list --failed: the rows the relay gave up on, with the reason', async () => {
    const r = await ax(['outbox', 'list', '--failed', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toMatchObject({kind: 'failed', count: 2});
    expect(r.json.rows.map((x: {id: number}) => x.id)).toEqual(failed);
    expect(r.json.rows[0]).toMatchObject({type: 'BadType', attempts: 1, lastError: 'type "BadType" must be domain_action'});
    expect(r.json.rows[0].failedAt).toMatch(ISO);
  });

  test('human output: a table per kind', async () => {
    const [list, failedList] = await Promise.all([ax(['outbox', 'list']), ax(['outbox', 'list', '--failed'])]);
    const lines = list.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^\s*ID\s+TYPE\s+CREATED\s+ATTEMPTS\s+LAST ERROR$/);
    expect(lines).toHaveLength(4);
    expect(lines[2]).toMatch(
      new RegExp(`^\\s*${pending[1]}\\s+order_notify\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\s+2\\s+relay: RabbitMQ`),
    );
    const f = failedList.stdout.trimEnd().split('\n');
    expect(f[0]).toMatch(/^\s*ID\s+TYPE\s+CREATED\s+FAILED\s+ATTEMPTS\s+ERROR$/);
    expect(f).toHaveLength(3);
    expect(f[1]).toContain('type "BadType" must be domain_action');
  });

  describe('bad input: the documented exit code, a clear message, nothing changed', () => {
    const UNREACHABLE = {AX_OUTBOX_MYSQL_URL: 'mysql://root@127.0.0.1:1/ax_unreachable'};
    const cases: Array<[string, () => string[], number, RegExp, Record<string, string>?]> = [
      ['retry without ids or --all', () => ['outbox', 'retry'], 2, /name the failed rows to retry by id.*or give --all/],
      ['retry a word', () => ['outbox', 'retry', 'abc'], 2, /"abc" is not an outbox row id/],
      ['retry 0', () => ['outbox', 'retry', String(failed[0]), '0'], 2, /"0" is not an outbox row id/],
      ['retry a negative id', () => ['outbox', 'retry', '-5'], 2, /"-5" is not an outbox row id/],
      ['retry a fraction', () => ['outbox', 'retry', '1.5'], 2, /"1.5" is not an outbox row id/],
      ['retry ids and --all', () => ['outbox', 'retry', String(failed[0]), '--all'], 2, /either ids or --all, not both/],
      [
        'retry an unknown id',
        () => ['outbox', 'retry', String(failed[0]), '99999999'],
        3,
        /no task_outbox row with id 99999999; nothing was retried/,
      ],
      [
        'retry a pending row',
        () => ['outbox', 'retry', String(failed[0]), String(pending[0])],
        4,
        /not failed, so nothing to retry: \d+ \(pending\); nothing was retried/,
      ],
      ['retry a sent row', () => ['outbox', 'retry', String(sent)], 4, /not failed, so nothing to retry: \d+ \(sent\)/],
      ['list --limit 0', () => ['outbox', 'list', '--limit', '0'], 2, /Parsing --limit[\s\S]*greater than or equal to 1 but received: 0/],
      ['list --limit abc', () => ['outbox', 'list', '--limit', 'abc'], 2, /Parsing --limit[\s\S]*Expected an integer but received: abc/],
      ['list --limit too big', () => ['outbox', 'list', '--limit', '10001'], 2, /Parsing --limit[\s\S]*less than or equal to 10000/],
      ['list: unknown flag', () => ['outbox', 'list', '--bogus'], 2, /Nonexistent flag: --bogus/],
      ['stats: unknown flag', () => ['outbox', 'stats', '--all'], 2, /Nonexistent flag: --all/],
      ['retry: unknown flag', () => ['outbox', 'retry', '--force', String(failed[0])], 2, /Nonexistent flag: --force/],
      [
        'stats: MySQL unreachable',
        () => ['outbox', 'stats'],
        5,
        /MySQL at mysql:\/\/root@127\.0\.0\.1:1\/ax_unreachable is unavailable/,
        UNREACHABLE,
      ],
      ['list: MySQL unreachable', () => ['outbox', 'list', '--failed'], 5, /is unavailable/, UNREACHABLE],
      ['retry: MySQL unreachable', () => ['outbox', 'retry', '--all'], 5, /is unavailable/, UNREACHABLE],
    ];

    test('human and --json', async () => {
      const before = await snapshot();
      const runs = await Promise.all(cases.flatMap(([, args, , , extra]) => [ax(args(), extra), ax([...args(), '--json'], extra)]));
      cases.forEach(([name, args, exit, message], i) => {
        const [human, json] = [runs[2 * i]!, runs[2 * i + 1]!];
        expect(human.code, `${name}: ${args().join(' ')}\n${human.stderr}`).toBe(exit);
        expect(flat(human.stderr), name).toMatch(message);
        expect(json.code, `${name} --json\n${json.stdout}${json.stderr}`).toBe(exit);
        expect(json.json?.error?.message, `${name}: ${json.stdout}`).toMatch(message);
        expect(json.json?.error?.code, name).toBe(
          {2: 'invalid_input', 3: 'not_found', 4: 'conflict', 5: 'unavailable'}[exit as 2 | 3 | 4 | 5],
        );
      });
      expect(await snapshot()).toEqual(before);
    });

    test('an argument to stats is an unknown command (exit 2)', async () => {
      const r = await ax(['outbox', 'stats', 'extra']);
      expect(r.code).toBe(2);
      expect(flat(r.stderr)).toMatch(/outbox:stats:extra not found|Unexpected argument: extra/);
    });
  });

  test('retry <id>: the failure is cleared, the row is pending again; then --all takes the rest', async () => {
    const one = await ax(['outbox', 'retry', String(failed[1]), String(failed[1]), '--json']);
    expect(one.code, one.stderr).toBe(0);
    expect(one.json).toEqual({retried: 1, ids: [failed[1]]});
    const [r] = await sql<{failed_at: Date | null; sent_at: Date | null; last_error: string}>(
      'SELECT failed_at, sent_at, last_error FROM task_outbox WHERE id = ?',
      [failed[1]],
    );
    expect(r).toMatchObject({failed_at: null, sent_at: null});
    const stats = await ax(['outbox', 'stats', '--json']);
    expect(stats.json).toMatchObject({unsent: 4, failed: 1});

    const all = await ax(['outbox', 'retry', '--all']);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout.trim()).toBe('1 outbox row will be relayed again');
    const again = await ax(['outbox', 'retry', '--all', '--json']);
    expect(again.json).toEqual({retried: 0, ids: 'all'});
    expect((await ax(['outbox', 'retry', '--all'])).stdout.trim()).toBe('no failed outbox rows to retry');
    expect(await sql('SELECT id FROM task_outbox WHERE failed_at IS NOT NULL')).toEqual([]);
  });
});

describe('set-up problems', () => {
  test('no task_outbox table: exit 5 naming `ax migrate --outbox`', async () => {
    const r = await ax(['outbox', 'stats', '--json'], {AX_OUTBOX_MYSQL_URL: ''});
    expect(r.code, r.stdout + r.stderr).toBe(5);
    expect(r.json.error.message).toBe(
      `task_outbox does not exist in database ${testEnv.config.amqpPrefix}: create it with \`ax migrate --outbox\``,
    );
  });

  test('migrate --outbox --status reports whether task_outbox exists and creates nothing', async () => {
    // ax's own test database has no task_outbox (the business database here is another one).
    const exists = async () =>
      (await testEnv.sql("SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'task_outbox'")).length;
    const r = await ax(['migrate', '--outbox', '--status', '--json'], {AX_OUTBOX_MYSQL_URL: ''});
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toEqual({outbox: true, database: testEnv.config.amqpPrefix, exists: false});
    expect(await exists()).toBe(0);
    const human = await ax(['migrate', '--outbox', '--status'], {AX_OUTBOX_MYSQL_URL: ''});
    expect(human.stdout).toContain(`task_outbox does not exist in database ${testEnv.config.amqpPrefix}: run \`ax migrate --outbox\``);
    expect(await exists()).toBe(0);
  });

  test.concurrent.each(['outbox list', 'outbox retry', 'outbox stats'])('ax %s --help shows examples', async (cmd) => {
    const r = await ax([...cmd.split(' '), '--help']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('EXAMPLES');
    expect(r.stdout).toContain(`$ ax ${cmd}`);
  });
});
