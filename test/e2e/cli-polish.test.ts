/**
 * End-to-end tests of the CLI's set-up errors and polish (`node bin/run.js …`, run `npm run build`
 * first): each MySQL set-up problem (wrong password, unknown user, missing database, schema not
 * migrated, missing business database, missing task_outbox) has its own message, hint and exit
 * code, and so has a RabbitMQ login refused or virtual host missing (also through a cluster's list of URLs, whose bad
 * entry is refused before anything starts); read-only commands never create a database; `-h`, `-v`, `version`, did-you-mean for
 * commands and flags, autocomplete, the EXIT CODES section of every command's help.
 */
import {randomBytes} from 'node:crypto';
import {mkdtempSync, readFileSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {ROOT, runCli, spawnAx, type CliRun} from '../helpers/spawn.js';
import {AMQP_URL, createTestEnv, eventually, MYSQL_ROOT, type TestEnv} from '../helpers/env.js';

let testEnv: TestEnv;
let cwd: string;
// One user per run: suites running at once (parallel files, other checkouts) never drop each other's.
const PW_USER = `ax_test_pw_${randomBytes(4).toString('hex')}`;
const PASSWORD = `pw_${randomBytes(6).toString('hex')}`;
const host = new URL(MYSQL_ROOT).host;

function ax(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return runCli(args, {cwd, env: {...testEnv.env, ...env}});
}

/** oclif wraps error messages to the terminal width behind " ›   " margins: undo that. */
const flat = (stderr: string): string => stderr.replace(/\s*\n\s*›\s*/g, ' ');

async function databaseExists(name: string): Promise<boolean> {
  return (await testEnv.sql('SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?', [name])).length > 0;
}

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), 'ax-e2e-polish-'));
  testEnv = await createTestEnv();
  // A real user with a password, so that a wrong password is refused as such.
  await testEnv.sql(`CREATE USER IF NOT EXISTS '${PW_USER}'@'%' IDENTIFIED BY '${PASSWORD}'`);
  await testEnv.sql(`GRANT ALL ON \`${testEnv.config.amqpPrefix}\`.* TO '${PW_USER}'@'%'`);
});

afterAll(async () => {
  await testEnv?.sql(`DROP USER IF EXISTS '${PW_USER}'@'%'`).catch(() => undefined);
  await testEnv?.dispose();
  if (cwd) rmSync(cwd, {recursive: true, force: true});
});

describe('MySQL set-up problems: a message and a hint each, exit 5, nothing created', () => {
  const db = (): string => testEnv.config.amqpPrefix;
  const missing = `axt_missing_${randomBytes(3).toString('hex')}`;
  const unmigrated = `axt_empty_${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    await testEnv.sql(`CREATE DATABASE \`${unmigrated}\``);
  });
  afterAll(async () => {
    await testEnv.sql(`DROP DATABASE IF EXISTS \`${unmigrated}\``);
    await testEnv.sql(`DROP DATABASE IF EXISTS \`${missing}\``);
  });

  // [name, env, message, reason, hint]
  const cases: Array<[string, () => Record<string, string>, RegExp, string, RegExp]> = [
    ['the right password works', () => ({AX_MYSQL_URL: `mysql://${PW_USER}:${PASSWORD}@${host}/${db()}`}), /^$/, '', /^$/],
    [
      'a wrong password',
      () => ({AX_MYSQL_URL: `mysql://${PW_USER}:wrong@${host}/${db()}`}),
      new RegExp(`mysql://${PW_USER}:\\*\\*\\*@.* refused the login of user "${PW_USER}" \\(with a password\\)`),
      'access_denied',
      /Check the user and password in AX_MYSQL_URL/,
    ],
    [
      'an unknown user',
      () => ({AX_MYSQL_URL: `mysql://ax_no_such_user@${host}/${db()}`}),
      /refused the login of user "ax_no_such_user" \(without a password\): the user does not exist, the password is wrong/,
      'access_denied',
      /Check the user and password in AX_MYSQL_URL/,
    ],
    [
      'a missing database',
      () => ({AX_MYSQL_URL: `${MYSQL_ROOT}/${missing}`}),
      new RegExp(`database "${missing}" does not exist`),
      'unknown_database',
      /`ax migrate` creates the database and its tables/,
    ],
    [
      'a schema not migrated',
      () => ({AX_MYSQL_URL: `${MYSQL_ROOT}/${unmigrated}`}),
      new RegExp(`database ${unmigrated} is at schema version 0, ax needs \\d+: run \`ax migrate\``),
      'not_migrated',
      /Run `ax migrate` with the same AX_MYSQL_URL/,
    ],
    [
      'nothing listening',
      () => ({AX_MYSQL_URL: 'mysql://root@127.0.0.1:1/ax_unreachable'}),
      /MySQL at mysql:\/\/root@127\.0\.0\.1:1\/ax_unreachable is unavailable: .*ECONNREFUSED/,
      'unreachable',
      /Is the server running\?/,
    ],
  ];

  test.concurrent.each(cases)('%s', async (name, env, message, reason, hint) => {
    const human = await ax(['tasks', 'stats'], env());
    const json = await ax(['tasks', 'stats', '--json'], env());
    if (reason === '') {
      expect(human.code, human.stderr).toBe(0);
      expect(json.json.types).toEqual([]);
      return;
    }
    expect(human.code, `${name}\n${human.stderr}`).toBe(5);
    expect(flat(human.stderr)).toMatch(message);
    expect(flat(human.stderr)).toMatch(hint);
    if (reason !== 'unreachable') expect(flat(human.stderr)).not.toMatch(/Is the server running/);
    expect(json.code).toBe(5);
    expect(json.json.error).toMatchObject({code: 'unavailable', details: {reason}});
    expect(json.json.error.message).toMatch(message);
  });

  test.concurrent.each([
    ['tasks', 'stats'],
    ['tasks', 'list'],
    ['tasks', 'show', '01900000-0000-7000-8000-00000000abcd'],
    ['cron', 'list'],
    ['cron', 'show', 'nightly'],
    ['migrate', '--status'],
  ])('read-only: ax %s %s does not create a missing database', async (...args) => {
    const r = await ax(args, {AX_MYSQL_URL: `${MYSQL_ROOT}/${missing}`});
    expect(r.code, r.stderr).toBe(5);
    expect(flat(r.stderr)).toMatch(new RegExp(`database "${missing}" does not exist`));
    expect(await databaseExists(missing)).toBe(false);
  });

  test('the business database: missing, then without task_outbox, each with its own hint', async () => {
    for (const cmd of [
      ['outbox', 'stats'],
      ['outbox', 'list'],
    ]) {
      const gone = await ax([...cmd, '--json'], {AX_OUTBOX_MYSQL_URL: `${MYSQL_ROOT}/${missing}`});
      expect(gone.code).toBe(5);
      expect(gone.json.error).toMatchObject({code: 'unavailable', details: {reason: 'unknown_database', scope: 'outbox'}});
      expect(gone.json.error.message).toMatch(/business database named in AX_OUTBOX_MYSQL_URL .* does not exist: ax never creates it/);
      const human = await ax(cmd, {AX_OUTBOX_MYSQL_URL: `${MYSQL_ROOT}/${missing}`});
      expect(flat(human.stderr)).toMatch(/Point AX_OUTBOX_MYSQL_URL at the business database that holds task_outbox/);
      expect(await databaseExists(missing)).toBe(false);

      const noTable = await ax(cmd, {AX_OUTBOX_MYSQL_URL: `${MYSQL_ROOT}/${unmigrated}`});
      expect(noTable.code).toBe(5);
      expect(flat(noTable.stderr)).toMatch(new RegExp(`task_outbox does not exist in database ${unmigrated}`));
      expect(flat(noTable.stderr)).toMatch(/Run `ax migrate --outbox` to create task_outbox in the business database/);
    }
  });

  test('a wrong password for the business database names AX_OUTBOX_MYSQL_URL', async () => {
    const r = await ax(['outbox', 'stats', '--json'], {AX_OUTBOX_MYSQL_URL: `mysql://${PW_USER}:wrong@${host}/${db()}`});
    expect(r.code).toBe(5);
    expect(r.json.error.details).toEqual({reason: 'access_denied', scope: 'outbox'});
    const human = await ax(['outbox', 'stats'], {AX_OUTBOX_MYSQL_URL: `mysql://${PW_USER}:wrong@${host}/${db()}`});
    expect(flat(human.stderr)).toMatch(/Check the user and password in AX_OUTBOX_MYSQL_URL/);
  });
});

describe('RabbitMQ set-up problems: a refused login is said as such, exit 5, nothing retried', () => {
  const amqp = new URL(AMQP_URL);
  const wrong = `amqp://${amqp.username || 'guest'}:wrong_${randomBytes(3).toString('hex')}@${amqp.host}`;

  test('a wrong password: "refused the login", the AX_AMQP_URL hint, not "Is the server running?"', async () => {
    for (const cmd of [['queues'], ['submit', 'order_notify', '--payload', '{}']]) {
      const human = await ax(cmd, {AX_AMQP_URL: wrong});
      expect(human.code, `${cmd.join(' ')}: ${human.stderr}`).toBe(5);
      expect(flat(human.stderr)).toMatch(
        /RabbitMQ at amqp:\/\/[^:]+:\*\*\*@.* refused the login of user "[^"]+": the user does not exist, the password is wrong/,
      );
      expect(flat(human.stderr)).toMatch(/Check the user and password in AX_AMQP_URL/);
      expect(flat(human.stderr)).not.toMatch(/Is the server running|is unavailable/);
      expect(human.stderr).not.toContain('wrong_');
      const json = await ax([...cmd, '--json'], {AX_AMQP_URL: wrong});
      expect(json.code).toBe(5);
      expect(json.json.error).toMatchObject({code: 'unavailable', details: {reason: 'access_denied', scope: 'amqp'}});
    }
  });

  test('a missing virtual host is named, with its own hint', async () => {
    const r = await ax(['queues'], {AX_AMQP_URL: `${AMQP_URL.replace(/\/+$/, '')}/ax_no_such_vhost`});
    expect(r.code).toBe(5);
    expect(flat(r.stderr)).toMatch(/refused to open virtual host "ax_no_such_vhost" for user "[^"]+": the virtual host does not exist/);
    expect(flat(r.stderr)).toMatch(/Check the virtual host in AX_AMQP_URL/);
  });

  test('AX_AMQP_URL listing a cluster: a bad entry exits 2 before anything starts, naming it without its password', async () => {
    const r = await ax(['worker', '--handlers', join(ROOT, 'test/fixtures/handlers.js'), '--pools', 'io'], {
      AX_AMQP_URL: `${AMQP_URL},amqp//guest:hunter2_pw@mq2:5672`,
    });
    expect(r.code, r.stderr).toBe(2);
    expect(flat(r.stderr)).toMatch(/amqpUrl \(AX_AMQP_URL\) \(entry 2 of 2\) must start with amqp:\/\/ or amqps:\/\//);
    expect(r.stderr).not.toContain('hunter2_pw');
    expect(r.stderr).not.toMatch(/connect|retrying/i);
  });

  test('AX_AMQP_URL listing a cluster: a dead node is skipped; all of them failing, a refused login is what is said', async () => {
    const dead = 'amqp://guest:guest@127.0.0.1:1';
    expect((await ax(['queues', '--json'], {AX_AMQP_URL: `${dead},${AMQP_URL}`})).code).toBe(0);
    const r = await ax(['queues', '--json'], {AX_AMQP_URL: `${dead},${wrong}`});
    expect(r.code, r.stderr).toBe(5);
    expect(r.json.error).toMatchObject({code: 'unavailable', details: {reason: 'access_denied', scope: 'amqp'}});
    expect(r.stdout + r.stderr).not.toContain('wrong_');
  });

  test('a worker with a wrong password exits 5 at once instead of waiting for the server', async () => {
    const r = await ax(['worker', '--handlers', join(ROOT, 'test/fixtures/handlers.js'), '--pools', 'io'], {AX_AMQP_URL: wrong});
    expect(r.code, r.stderr).toBe(5);
    expect(flat(r.stderr)).toMatch(/refused the login of user/);
    expect(r.stderr).not.toMatch(/retrying/);
  });
});

describe('logs of one-shot commands', () => {
  // The operator's default: no AX_LOG_LEVEL (the test environment sets warn for every other test).
  const plain = (args: string[], extra: Record<string, string> = {}): Promise<CliRun> =>
    runCli(args, {cwd, env: {...testEnv.env, AX_LOG_LEVEL: undefined, ...extra}});

  test('types pause and resume print their sentence, no JSON log line; AX_LOG_LEVEL=info brings the log back', async () => {
    const type = 'quiet_pause';
    expect((await ax(['submit', type, '--delay', '1h'])).code).toBe(0);
    const pause = await plain(['types', 'pause', type, '--reason', 'deploy']);
    expect(pause.code, pause.stderr).toBe(0);
    expect(pause.stdout).toMatch(/^paused quiet_pause/);
    expect(pause.stderr).toBe('');
    const resume = await plain(['types', 'resume', type]);
    expect(resume.code, resume.stderr).toBe(0);
    expect(resume.stdout).toMatch(/^resumed quiet_pause/);
    expect(resume.stderr).toBe('');
    const loud = await plain(['types', 'pause', type, '--reason', 'deploy'], {AX_LOG_LEVEL: 'info'});
    expect(loud.code, loud.stderr).toBe(0);
    expect(loud.stderr).toMatch(/"msg":"type paused"/);
    expect((await plain(['types', 'resume', type])).code).toBe(0);
    // Other tests here check that bad input wrote no task at all.
    await testEnv.sql('DELETE FROM tasks WHERE type = ?', [type]);
  });

  test('a daemon (ax worker) still logs at info by default', async () => {
    const {AX_LOG_LEVEL: _level, ...env} = testEnv.env;
    const w = spawnAx(['worker', '--handlers', 'test/fixtures/handlers.js', '--pools', 'io'], {...env, AX_CONFIG: ''});
    try {
      await eventually(async () => /"level":"info"/.test(w.stderr()), 20_000, 'an info line from the worker');
    } finally {
      w.child.kill('SIGTERM');
      await w.exited;
    }
  });
});

describe('help, version, did-you-mean, autocomplete', () => {
  test('ax -h and ax --help list the topics and commands', async () => {
    for (const flag of ['-h', '--help']) {
      const r = await ax([flag]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^USAGE\n {2}\$ ax \[COMMAND\]/m);
      expect(r.stdout).toMatch(/^ {2}submit\s+Submit one task/m);
      expect(r.stdout).toMatch(/^ {2}autocomplete\s/m);
    }
  });

  test('every command listed by ax --help has a description, version too', async () => {
    const r = await ax(['--help']);
    expect(r.stdout).toMatch(/^ {2}version\s+Print the version of ax/m);
    const commands = r.stdout.slice(r.stdout.indexOf('\nCOMMANDS\n'));
    for (const line of commands.split('\n').filter((l) => /^ {2}\S/.test(l))) expect(line, line).toMatch(/^ {2}\S+\s{2,}\S/);
    const own = await ax(['version', '--help']);
    expect(own.code).toBe(0);
    expect(own.stdout).toMatch(/^Print the version of ax/);
  });

  test('ax -v, ax --version and ax version print the version', async () => {
    const {version} = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {version: string};
    for (const args of [['-v'], ['--version'], ['version']]) {
      const r = await ax(args);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      expect(r.stdout).toContain(`ax-executor/${version}`);
    }
    const json = await ax(['version', '--json']);
    expect(json.json).toMatchObject({cliVersion: `ax-executor/${version}`});
  });

  test('a mistyped command names the nearest one (exit 127)', async () => {
    const r = await ax(['submti']);
    expect(r.code).toBe(127);
    expect(flat(r.stderr)).toMatch(/submti is not an ax command\. Did you mean `ax submit`\?/);
    const topic = await ax(['tasks', 'lsit']);
    expect(topic.code).toBe(127);
    expect(flat(topic.stderr)).toMatch(/Did you mean `ax tasks list`\?/);
    const far = await ax(['xyzzy']);
    expect(far.code).toBe(127);
    expect(flat(far.stderr)).toMatch(/xyzzy is not an ax command\. Run `ax help` for the list/);
  });

  test('a mistyped command with arguments names the nearest one with its arguments, runs nothing (exit 127)', async () => {
    const id = '0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d';
    const replay = await ax(['dlq', 'replya', id, '--force']);
    expect(replay.code).toBe(127);
    expect(flat(replay.stderr)).toMatch(new RegExp(`dlq replya is not an ax command\\. Did you mean \`ax dlq replay ${id} --force\`\\?`));
    const submit = await ax(['submti', 'order_notify', '--payload', '{}']);
    expect(submit.code).toBe(127);
    expect(flat(submit.stderr)).toMatch(/submti is not an ax command\. Did you mean `ax submit order_notify --payload \{\}`\?/);
    const far = await ax(['xyzzy', 'foo']);
    expect(far.code).toBe(127);
    expect(flat(far.stderr)).toMatch(/xyzzy foo is not an ax command\. Run `ax help` for the list/);
    expect(await testEnv.sql("SELECT id FROM tasks WHERE type = 'order_notify'")).toEqual([]);
    expect(await testEnv.sql("SELECT id FROM admin_audit WHERE command LIKE 'dlq%'")).toEqual([]);
  });

  test('a mistyped flag names the nearest one (exit 2, nothing written)', async () => {
    const r = await ax(['submit', 'order_notify', '--dealy', '5s']);
    expect(r.code).toBe(2);
    expect(flat(r.stderr)).toMatch(/Nonexistent flag: --dealy \(did you mean --delay\?\)/);
    const json = await ax(['tasks', 'list', '--stat', 'dead', '--json']);
    expect(json.code).toBe(2);
    expect(json.json.error).toMatchObject({code: 'invalid_input', message: expect.stringMatching(/--stat \(did you mean --state\?\)/)});
    const far = await ax(['reconcile', '--force']);
    expect(far.code).toBe(2);
    expect(flat(far.stderr)).toMatch(/Nonexistent flag: --force/);
    expect(flat(far.stderr)).not.toMatch(/did you mean/);
    expect(await testEnv.sql('SELECT id FROM tasks')).toEqual([]);
  });

  test('ax autocomplete prints the set-up steps for bash', async () => {
    const r = await ax(['autocomplete', 'bash'], {XDG_CACHE_HOME: join(cwd, 'cache'), HOME: cwd});
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/autocomplete/i);
    expect(r.stdout).toMatch(/bashrc/);
  });

  test.concurrent.each([
    'submit',
    'reconcile',
    'migrate',
    'worker',
    'scheduler',
    'relay',
    'tasks list',
    'tasks show',
    'tasks stats',
    'tasks cancel',
    'queues',
    'cron add',
    'cron list',
    'cron show',
    'cron pause',
    'cron resume',
    'cron rm',
    'cron trigger',
    'outbox list',
    'outbox retry',
    'outbox stats',
  ])('ax %s --help ends with the EXIT CODES section', async (cmd) => {
    const r = await ax([...cmd.split(' '), '--help']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/\nEXIT CODES\n/);
    expect(r.stdout.replace(/\s+/g, ' ')).toMatch(
      / EXIT CODES 0 done, 1 internal error, 2 bad input or usage \(nothing changed\), 3 not found, 4 conflict, 5 MySQL or RabbitMQ unavailable, login refused or not migrated, 6 timeout, 7 worker stopped after an uncaught exception in handler code, 127 unknown command\. $/,
    );
  });
});

describe('the package', () => {
  test('ships LICENSE and self-contained source maps, and no src/', async () => {
    const {execFileSync} = await import('node:child_process');
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {cwd: ROOT, encoding: 'utf8'});
    const files = (JSON.parse(out) as Array<{files: Array<{path: string}>}>)[0]?.files.map((f) => f.path) ?? [];
    expect(files).toContain('LICENSE');
    expect(files.some((f) => f.startsWith('src/'))).toBe(false);
    const maps = files.filter((f) => f.endsWith('.js.map'));
    expect(maps.length).toBeGreaterThan(10);
    for (const m of maps) {
      const map = JSON.parse(readFileSync(join(ROOT, m), 'utf8')) as {sources: string[]; sourcesContent?: string[]};
      expect(map.sourcesContent?.length, `${m} carries its sources`).toBe(map.sources.length);
    }
  });
});
