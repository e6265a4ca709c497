/**
 * End-to-end tests of `ax cron add|list|show|pause|resume|rm|trigger`, spawning the built CLI
 * (`node bin/run.js …`; run `npm run build` first) against the real MariaDB and RabbitMQ. The
 * success path is checked against the database and the queues; every command's bad input must exit
 * with the documented code and a clear message, and write nothing. The occurrences a scheduler
 * would create are made in-process with the cron service's materialize() (what `ax scheduler` runs
 * on every load), so that pause and rm have a pending occurrence to cancel.
 */
import {existsSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join, resolve} from 'node:path';
import {fileURLToPath} from 'node:url';
import {runCli, type CliRun} from '../helpers/spawn.js';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {decodeMessage} from '../../src/core/broker/types.js';
import {createCronService, occurrenceKey} from '../../src/core/cron/service.js';
import {createTestEnv, eventually, type TestEnv} from '../helpers/env.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const MINUTE = 60_000;
const DAY = 86_400_000;
const ERROR_CODES: Record<number, string> = {2: 'invalid_input', 3: 'not_found', 4: 'conflict', 5: 'unavailable'};

let testEnv: TestEnv;
let cwd: string;

type Run = CliRun;

function ax(args: string[], opts: {env?: Record<string, string>} = {}): Promise<Run> {
  return runCli(args, {cwd, env: {...testEnv.env, ...opts.env}});
}

/** Runs a command that must succeed. */
async function ok(args: string[]): Promise<Run> {
  const r = await ax(args);
  expect(r.code, `${args.join(' ')}\n${r.stdout}\n${r.stderr}`).toBe(0);
  return r;
}

/** oclif wraps error messages to the terminal width behind " ›   " margins: undo that. */
function flat(stderr: string): string {
  return stderr.replace(/\s*\n\s*›\s*/g, ' ');
}

/** Rows in the tables a cron command may write. */
async function counts(): Promise<{schedules: number; tasks: number; history: number}> {
  const n = async (table: string): Promise<number> => Number((await testEnv.sql<{n: number}>(`SELECT COUNT(*) AS n FROM ${table}`))[0]?.n);
  return {schedules: await n('cron_schedules'), tasks: await n('tasks'), history: await n('task_history')};
}

/** Runs a command that must fail: the exit code, the message, and nothing written. */
async function refused(args: string[], exit: number, message: RegExp, opts: {env?: Record<string, string>} = {}): Promise<Run> {
  const before = await counts();
  const r = await ax(args, opts);
  expect(r.code, `${args.join(' ')}\n${r.stdout}\n${r.stderr}`).toBe(exit);
  if (args.includes('--json')) {
    expect(r.json?.error?.message).toMatch(message);
    expect(r.json?.error?.code).toBe(ERROR_CODES[exit]);
  } else expect(flat(r.stderr)).toMatch(message);
  expect(await counts()).toEqual(before);
  return r;
}

interface Wall {
  minute: number;
  hour: number;
  weekday: string;
}

/** Every whole minute in (afterMs, toMs] whose wall-clock time in `tz` satisfies `match`. */
function matchingMinutes(afterMs: number, toMs: number, tz: string, match: (w: Wall) => boolean): number[] {
  const fmt = new Intl.DateTimeFormat('en-US', {timeZone: tz, hourCycle: 'h23', hour: 'numeric', minute: 'numeric', weekday: 'short'});
  const out: number[] = [];
  for (let t = Math.floor(afterMs / MINUTE) * MINUTE + MINUTE; t <= toMs; t += MINUTE) {
    const p = Object.fromEntries(fmt.formatToParts(t).map((x) => [x.type, x.value]));
    if (match({minute: Number(p.minute), hour: Number(p.hour), weekday: String(p.weekday)})) out.push(t);
  }
  return out;
}

/**
 * The fire times printed by show/add: strictly increasing, in the future, `local` the same instant
 * as `utc`, and exactly the minutes matching the expression in the zone (none skipped). `t0`/`t1`:
 * local clock before and after the command ran.
 */
function checkFireTimes(
  times: Array<{utc: string; local: string}>,
  n: number,
  tz: string,
  t0: number,
  t1: number,
  match: (w: Wall) => boolean,
): number[] {
  expect(times).toHaveLength(n);
  const ms = times.map((t) => Date.parse(t.utc));
  for (const t of times) {
    expect(t.utc).toMatch(ISO);
    expect(t.local).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$/);
    expect(Date.parse(t.local)).toBe(Date.parse(t.utc));
  }
  for (let i = 1; i < ms.length; i++) expect(ms[i]!).toBeGreaterThan(ms[i - 1]!);
  expect(ms[0]!).toBeGreaterThan(t0 - 1000);
  // A fire time may fall between t0 and the moment the command read the clock: compare after t1.
  expect(ms.filter((t) => t > t1)).toEqual(matchingMinutes(t1, ms[ms.length - 1]!, tz, match));
  return ms;
}

const shanghai2am = (w: Wall): boolean => w.hour === 2 && w.minute === 0;
const officeQuarters = (w: Wall): boolean => w.minute % 15 === 0 && w.hour >= 9 && w.hour <= 17 && !['Sat', 'Sun'].includes(w.weekday);

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist/commands/cron/add.js')) || !existsSync(join(ROOT, 'dist/commands/cron/trigger.js'))) {
    throw new Error('the CLI is not built: run `npm run build` first');
  }
  cwd = mkdtempSync(join(tmpdir(), 'ax-e2e-cron-'));
  testEnv = await createTestEnv();
});

afterAll(async () => {
  await testEnv?.dispose();
  if (cwd) rmSync(cwd, {recursive: true, force: true});
});

/** What `ax scheduler` does on every load: create the occurrences that are due to exist. */
async function materialize(): Promise<void> {
  const cron = createCronService({...testEnv.rt, store: await testEnv.store()});
  await cron.materialize(testEnv.config.schedulerHorizonMs);
}

async function tasksOf(schedule: string) {
  return testEnv.sql<{id: string; state: string; run_at: Date; dedup_key: string; published_at: Date | null}>(
    'SELECT id, state, run_at, dedup_key, published_at FROM tasks WHERE schedule_name = ? ORDER BY run_at',
    [schedule],
  );
}

describe('--help', () => {
  test.concurrent.each(['add', 'list', 'show', 'pause', 'resume', 'rm', 'trigger'])('ax cron %s --help shows examples', async (cmd) => {
    const r = await ax(['cron', cmd, '--help']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('EXAMPLES');
    expect(r.stdout).toContain(`$ ax cron ${cmd}`);
  });
});

describe('a schedule from add to rm', () => {
  let firstFire: string;

  test('add prints the schedule and its next 5 fire times (UTC and local); the row is stored, no task yet', async () => {
    const t0 = Date.now();
    const r = await ok([
      'cron', 'add', 'report-daily', '--cron', '0 2 * * *', '--tz', 'Asia/Shanghai', '--type', 'report_daily', '--payload', '{"k": 1}',
      '--pool', 'cpu', '--overlap', 'skip', '--misfire', 'skip', '--max-retries', '2', '--timeout', '30s', '--json',
    ]); // prettier-ignore
    const s = r.json.schedule;
    expect(s).toMatchObject({
      name: 'report-daily',
      cron: '0 2 * * *',
      tz: 'Asia/Shanghai',
      type: 'report_daily',
      payload: {k: 1},
      pool: 'cpu',
      maxRetries: 2,
      timeoutMs: 30_000,
      overlap: 'skip',
      misfire: 'skip',
      paused: false,
      nextFireAt: null,
    });
    expect(s.createdAt).toMatch(ISO);
    const ms = checkFireTimes(r.json.nextFireTimes, 5, 'Asia/Shanghai', t0, Date.now(), shanghai2am);
    for (let i = 1; i < ms.length; i++) expect(ms[i]! - ms[i - 1]!).toBe(DAY);
    for (const t of r.json.nextFireTimes) expect(t.local).toMatch(/T02:00:00\+08:00$/);
    expect(r.json.policies.misfire).toMatch(/^skip: /);
    expect(r.json.policies.overlap).toMatch(/^skip: /);
    firstFire = r.json.nextFireTimes[0].utc;

    const [row] = await testEnv.sql<Record<string, unknown>>('SELECT * FROM cron_schedules WHERE name = ?', ['report-daily']);
    expect(row).toMatchObject({
      cron: '0 2 * * *',
      tz: 'Asia/Shanghai',
      type: 'report_daily',
      pool: 'cpu',
      max_retries: 2,
      timeout_ms: 30_000,
      overlap: 'skip',
      misfire: 'skip',
      paused: 0,
      next_fire_at: null,
    });
    expect(JSON.parse(row?.payload as string)).toEqual({k: 1});
    expect(await tasksOf('report-daily')).toEqual([]);
  });

  test('add, human output: the schedule, its policies and a table of fire times', async () => {
    const r = await ok(['cron', 'add', 'office-sync', '--cron', '*/15 9-17 * * MON-FRI', '--tz', 'America/New_York', '--type', 'crm_sync']);
    const out = r.stdout;
    expect(out).toMatch(/^office-sync {2}\*\/15 9-17 \* \* MON-FRI {2}America\/New_York {2}→ {2}crm_sync {2}ACTIVE/);
    expect(out).toMatch(/misfire {3}fire-once: /);
    expect(out).toMatch(/overlap {3}allow: /);
    expect(out).toMatch(/DST {7}America\/New_York changes its UTC offset/);
    expect(out).toMatch(/its next occurrence is not created yet: a running `ax scheduler` creates it/);
    expect(out).toMatch(/next 5 fire times\n {2}UTC {2,}America\/New_York\n/);
    const rows = out.trim().split('\n').slice(-5);
    for (const line of rows)
      expect(line).toMatch(/^ {2}\d{4}-\d{2}-\d{2} \d{2}:\d{2}:00 {2}\d{4}-\d{2}-\d{2} \d{2}:\d{2}:00 -0[45]:00 (Mon|Tue|Wed|Thu|Fri)$/);
  });

  test('add: a nickname, a zone in any case, the defaults, --payload-file', async () => {
    const file = join(cwd, 'payload.json');
    writeFileSync(file, '{"report": "ping", "to": ["ops"]}');
    const r = await ok([
      'cron',
      'add',
      'hourly-ping',
      '--cron',
      '@hourly',
      '--tz',
      'utc',
      '--type',
      'ping_send',
      '--payload-file',
      file,
      '--json',
    ]);
    expect(r.json.schedule).toMatchObject({
      cron: '0 * * * *',
      tz: 'UTC',
      pool: 'io',
      overlap: 'allow',
      misfire: 'fire-once',
      maxRetries: null,
      timeoutMs: null,
      payload: {report: 'ping', to: ['ops']},
    });
    for (const t of r.json.nextFireTimes) expect(t.utc).toMatch(/T\d{2}:00:00\.000Z$/);
    const [row] = await testEnv.sql<{payload: string}>('SELECT payload FROM cron_schedules WHERE name = ?', ['hourly-ping']);
    expect(JSON.parse(row?.payload ?? '')).toEqual({report: 'ping', to: ['ops']});
  });

  test('a second add of the same name exits 4 and changes nothing', async () => {
    await refused(
      ['cron', 'add', 'report-daily', '--cron', '0 3 * * *', '--tz', 'UTC', '--type', 'report_daily', '--json'],
      4,
      /a schedule named "report-daily" already exists/,
    );
    const [row] = await testEnv.sql<{cron: string; tz: string}>('SELECT cron, tz FROM cron_schedules WHERE name = ?', ['report-daily']);
    expect(row).toEqual({cron: '0 2 * * *', tz: 'Asia/Shanghai'});
  });

  test('list: a table, and --json with the next occurrence of each', async () => {
    const r = await ok(['cron', 'list', '--json']);
    expect(r.json.count).toBe(3);
    expect(r.json.schedules.map((s: {name: string}) => s.name)).toEqual(['hourly-ping', 'office-sync', 'report-daily']);
    const daily = r.json.schedules[2];
    expect(daily).toMatchObject({
      name: 'report-daily',
      cron: '0 2 * * *',
      tz: 'Asia/Shanghai',
      type: 'report_daily',
      paused: false,
      lastOccurrence: null,
    });
    expect(daily.nextOccurrence).toBe(firstFire);

    const human = await ok(['cron', 'list']);
    const lines = human.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+CRON\s+TZ\s+TYPE\s+PAUSED\s+NEXT \(UTC\)\s+LAST FIRE \(UTC\)$/);
    expect(lines).toHaveLength(4);
    expect(lines[3]).toMatch(
      new RegExp(`^report-daily\\s+0 2 \\* \\* \\*\\s+Asia/Shanghai\\s+report_daily\\s+no\\s+${firstFire.slice(0, 10)} 18:00:00\\s+-$`),
    );
  });

  test('show --next 10: fire times strictly increasing, in the future, matching the expression in the zone', async () => {
    const t0 = Date.now();
    const r = await ok(['cron', 'show', 'office-sync', '--next', '10', '--json']);
    checkFireTimes(r.json.nextFireTimes, 10, 'America/New_York', t0, Date.now(), officeQuarters);
    expect(r.json.schedule).toMatchObject({name: 'office-sync', cron: '*/15 9-17 * * MON-FRI', paused: false});
    expect(Object.keys(r.json.policies).sort()).toEqual(['dst', 'misfire', 'overlap']);

    const t2 = Date.now();
    const human = await ok(['cron', 'show', 'report-daily', '-n', '3']);
    expect(human.stdout).toMatch(/^report-daily {2}0 2 \* \* \* {2}Asia\/Shanghai/);
    expect(human.stdout).toMatch(/pool cpu · priority normal · max retries 2 · timeout 30000 ms/);
    expect(human.stdout).toMatch(/misfire {3}skip: .*dropped/);
    expect(human.stdout).toMatch(/overlap {3}skip: .*cancelled/);
    expect(human.stdout).toMatch(/DST {7}Asia\/Shanghai keeps one UTC offset/);
    const table = /next 3 fire times\n {2}UTC {2,}Asia\/Shanghai\n((?: {2}\S+ 18:00:00 {2}\S+ 02:00:00 \+08:00 \w{3}\n){3})$/.exec(
      human.stdout,
    );
    expect(table, human.stdout).not.toBeNull();
    const printed = table![1]!
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .map(([d, t, ld, lt, off]) => ({utc: `${d}T${t}.000Z`, local: `${ld}T${lt}${off}`}));
    checkFireTimes(printed, 3, 'Asia/Shanghai', t2, Date.now(), shanghai2am);
  });

  test('pause keeps the pending occurrence (skipped at its fire time if still paused) and says which', async () => {
    await materialize(); // what a scheduler's load does: the first occurrence of each schedule
    const [pending] = await tasksOf('report-daily');
    expect(pending).toMatchObject({state: 'submitted', dedup_key: occurrenceKey('report-daily', Date.parse(firstFire))});
    expect(pending?.run_at.toISOString()).toBe(firstFire);

    const r = await ok(['cron', 'pause', 'report-daily', '--json']);
    expect(r.json.schedule).toMatchObject({name: 'report-daily', paused: true, nextFireAt: firstFire});
    expect(r.json.pending).toEqual({taskId: pending!.id, fireAt: firstFire});
    expect((await tasksOf('report-daily')).map((t) => t.state)).toEqual(['submitted']);
    const [row] = await testEnv.sql<{paused: number}>('SELECT paused FROM cron_schedules WHERE name = ?', ['report-daily']);
    expect(row?.paused).toBe(1);
  });

  test('resume plans from now: the next fire time is in the future', async () => {
    const t0 = Date.now();
    const r = await ok(['cron', 'resume', 'report-daily', '--json']);
    expect(r.json.schedule.paused).toBe(false);
    expect(Date.parse(r.json.nextFireTime.utc)).toBeGreaterThan(t0);
    expect(r.json.nextFireTime.local).toMatch(/T02:00:00\+08:00$/);
    // Resumed before its fire time: the pending occurrence stays the next run.
    expect(r.json.schedule.nextFireAt).toBe(firstFire);

    const human = await ok(['cron', 'pause', 'office-sync']);
    expect(human.stdout.trim()).toMatch(
      /^paused office-sync; (its occurrence due \S+ \([0-9a-f-]{36}\) is skipped unless it is resumed before then|no occurrence pending)$/,
    );
    const resumed = await ok(['cron', 'resume', 'office-sync']);
    expect(resumed.stdout).toMatch(/^resumed office-sync: .*next fire \S+ \S+ UTC \(\S+ \S+ -0[45]:00 America\/New_York\)$/m);
  });

  test('trigger runs one occurrence now: a task with the schedule and its dedup key, rung on the pool queue', async () => {
    const t0 = Date.now();
    const r = await ok(['cron', 'trigger', 'report-daily', '--json']);
    expect(r.json.name).toBe('report-daily');
    expect(r.json.taskId).toMatch(UUID);
    expect(r.json.fireAt).toMatch(ISO);
    expect(Date.parse(r.json.fireAt)).toBeGreaterThan(t0 - 5000);
    const [row] = await testEnv.sql<Record<string, unknown>>('SELECT * FROM tasks WHERE id = ?', [r.json.taskId]);
    expect(row).toMatchObject({
      schedule_name: 'report-daily',
      dedup_key: `cron:report-daily@${r.json.fireAt}`,
      type: 'report_daily',
      state: 'submitted',
      pool: 'cpu',
      max_retries: 2,
      timeout_ms: 30_000,
    });
    expect((row?.run_at as Date).toISOString()).toBe(r.json.fireAt);
    expect(JSON.parse(row?.payload as string)).toEqual({k: 1});
    expect(row?.published_at).not.toBeNull();

    const human = await ok(['cron', 'trigger', 'report-daily']);
    const id = human.stdout.trim();
    expect(id).toMatch(UUID);
    expect(id).not.toBe(r.json.taskId);

    const broker = await testEnv.broker();
    const seen = new Set<string>();
    const sub = await broker.consume('cpu', 10, (d) => {
      for (const m of decodeMessage(d.body) ?? []) seen.add(m.id);
      d.ack();
    });
    await eventually(async () => seen.has(r.json.taskId) && seen.has(id), 10_000, 'both occurrences on the cpu queue');
    await sub.cancel();

    const list = await ok(['cron', 'list', '--json']);
    const daily = list.json.schedules.find((s: {name: string}) => s.name === 'report-daily');
    expect(daily.lastOccurrence).toEqual({taskId: id, fireAt: expect.stringMatching(ISO), state: 'submitted'});
    expect(Date.parse(daily.lastOccurrence.fireAt)).toBeGreaterThan(Date.parse(r.json.fireAt));
  });

  test('rm deletes the schedule and cancels its pending occurrence; then it is unknown (exit 3)', async () => {
    // hourly-ping's first occurrence was created by the materialize() of the pause test.
    const [pending] = await tasksOf('hourly-ping');
    expect(pending?.state).toBe('submitted');
    const r = await ok(['cron', 'rm', 'hourly-ping', '--json']);
    expect(r.json).toEqual({name: 'hourly-ping', removed: true, cancelled: [{taskId: pending!.id, fireAt: pending!.run_at.toISOString()}]});
    expect(await testEnv.sql('SELECT name FROM cron_schedules WHERE name = ?', ['hourly-ping'])).toEqual([]);
    expect((await tasksOf('hourly-ping')).map((t) => t.state)).toEqual(['cancelled']);
    const [h] = await testEnv.sql<{error: string}>("SELECT error FROM task_history WHERE task_id = ? AND to_state = 'cancelled'", [
      pending!.id,
    ]);
    expect(h?.error).toMatch(/removed/);

    // report-daily was resumed before its pending occurrence was due: that one is cancelled now;
    // its triggered runs stay.
    const daily = await ok(['cron', 'rm', 'report-daily']);
    expect(daily.stdout.trim()).toMatch(/^removed report-daily; cancelled its pending occurrence [0-9a-f-]{36}/);
    expect((await tasksOf('report-daily')).map((t) => t.state).sort()).toEqual(['cancelled', 'submitted', 'submitted']);

    await refused(['cron', 'show', 'report-daily'], 3, /schedule "report-daily" does not exist/);
  });
});

describe('bad input: exit 2, a clear message, nothing written', () => {
  const add = (over: Record<string, string | null>, extra: string[] = []): string[] => {
    const flags: Record<string, string | null> = {cron: '0 2 * * *', tz: 'UTC', type: 'report_daily', ...over};
    const args = ['cron', 'add', over.name ?? 'bad-one'];
    for (const [k, v] of Object.entries(flags)) if (k !== 'name' && v !== null) args.push(`--${k}=${v}`);
    return [...args, ...extra];
  };

  // With --json the message is read from {error: {code: 'invalid_input', message}} (see refused()).
  test.concurrent.each<[string, string[], RegExp]>([
    ['a malformed expression', add({cron: '* * *'}), /has 3 fields; expected 5/],
    ['a seconds field', add({cron: '0 0 2 * * *'}, ['--json']), /has 6 fields/],
    ['minute 61', add({cron: '61 * * * *'}), /minute/],
    ['31 February', add({cron: '0 0 31 2 *'}, ['--json']), /never fires/],
    ['an unknown zone', add({tz: 'Mars/Olympus'}, ['--json']), /time zone "Mars\/Olympus" is not a known IANA time zone/],
    ['SQL in the zone', add({tz: "UTC'; DROP TABLE cron_schedules; --"}), /is not a known IANA time zone/],
    ['no zone (no implicit UTC)', add({tz: null}), /Missing required flag tz/],
    ['SQL in the name', add({name: "x'; DROP TABLE cron_schedules; --"}), /schedule name .* is not valid/],
    ['an upper-case name', add({name: 'Report-Daily'}, ['--json']), /schedule name "Report-Daily" is not valid/],
    ['a one-word type', add({type: 'report'}), /task type "report" is not domain_action/],
    ['a payload array', add({payload: '[1, 2]'}, ['--json']), /payload must be a JSON object/],
    ['a payload that is not JSON', add({payload: '{orderId: 1}'}), /--payload is not valid JSON/],
    ['a missing payload file', add({'payload-file': '/nonexistent/p.json'}), /--payload-file \/nonexistent\/p.json cannot be read: ENOENT/],
    ['an unknown pool', add({pool: 'gpu'}), /Expected --pool=gpu to be one of: io, cpu/],
    ['an unknown overlap policy', add({overlap: 'never'}, ['--json']), /Expected --overlap=never to be one of: allow, skip/],
    ['an unknown misfire policy', add({misfire: 'catch-up'}), /Expected --misfire=catch-up to be one of: skip, fire-once/],
    ['negative retries', add({'max-retries': '-1'}), /Parsing --max-retries[\s\S]*greater than or equal to 0 but received: -1/],
    ['a timeout that is not a duration', add({timeout: 'soon'}), /timeout "soon" is not a duration/],
    ['show: SQL in the name', ['cron', 'show', "a' OR '1'='1", '--json'], /schedule name .* is not valid/],
    ['show: --next 0', ['cron', 'show', 'anything', '--next', '0'], /Parsing --next[\s\S]*greater than or equal to 1 but received: 0/],
    ['show: --next 101', ['cron', 'show', 'anything', '--next', '101'], /Parsing --next[\s\S]*less than or equal to 100/],
    ['pause: a bad name', ['cron', 'pause', 'UPPER; --'], /is not valid/],
    ['resume: a bad name', ['cron', 'resume', "'; --"], /is not valid/],
    ['rm: a bad name', ['cron', 'rm', '../etc'], /is not valid/],
    ['trigger: a bad name', ['cron', 'trigger', '*', '--json'], /is not valid/],
    ['list: an unknown flag', ['cron', 'list', '--all'], /Nonexistent flag: --all/],
  ])('refuses %s', async (_n, args, message) => {
    await refused(args, 2, message);
  });
});

describe('unknown schedule: exit 3', () => {
  test.concurrent.each<[string, string[]]>([
    ['show', []],
    ['pause', []],
    ['resume', ['--json']],
    ['rm', []],
    ['trigger', ['--json']],
  ])('ax cron %s', async (cmd, extra) => {
    await refused(['cron', cmd, 'no-such-schedule', ...extra], 3, /schedule "no-such-schedule" does not exist/);
  });
});

describe('servers unavailable: exit 5', () => {
  test.concurrent.each<[string, string[], Record<string, string>]>([
    ['list without MySQL', ['cron', 'list'], {AX_MYSQL_URL: 'mysql://root@127.0.0.1:1/ax_unreachable'}],
    ['trigger without RabbitMQ', ['cron', 'trigger', 'office-sync'], {AX_AMQP_URL: 'amqp://guest:guest@127.0.0.1:1'}],
  ])('%s', async (_n, args, env) => {
    await refused(args, 5, /unavailable/i, {env});
  });
});
