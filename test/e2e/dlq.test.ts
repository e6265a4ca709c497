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
import {createTestEnv, takeRung, type TestEnv} from '../helpers/env.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';

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

const newId = createIdGenerator(Date.now);

/**
 * Writes a task of `type` straight to the store and runs it to death: one failed attempt with a
 * stack (`first` error), then a dead one with `error`. Returns its id.
 */
async function deadTask(type: string, error: string, first = 'warming up'): Promise<string> {
  const store = await testEnv.store();
  const t = validateTaskSpec({type, payload: {error}}, {maxRetries: 1, payloadLimitBytes: 65_536, cell: 'default'}, Date.now(), newId);
  await store.tasksInsert({tasks: [t], actor: 'e2e:1'});
  const c1 = (await store.tasksClaim({ids: [t.id], worker: 'w:1', leaseMs: 30_000})).claimed[0]!;
  const stack = `Error: ${first}\n    at handler (h.js:1:1)`;
  await store.outcomesApply({outcomes: [{kind: 'fail', id: t.id, fence: c1.fence, retryDelayMs: 0, error: first, stack}], actor: 'w:1'});
  const c2 = (await store.tasksClaim({ids: [t.id], worker: 'w:2', leaseMs: 30_000})).claimed[0]!;
  await store.outcomesApply({
    outcomes: [{kind: 'deadLetter', id: t.id, fence: c2.fence, error, stack: `Error: ${error}\n    at final (h.js:2:2)`}],
    actor: 'w:2',
  });
  return t.id;
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

describe('ax dlq list, show, stats', () => {
  let ids: string[] = [];
  const long = `upstream said: ${'x'.repeat(120)} THE END`;
  beforeAll(async () => {
    ids = [];
    for (const e of ['order 41 not found', 'order 42 not found', long, "card 'visa-77' declined 100%"])
      ids.push(await deadTask('dlq_order', e));
    ids.push(await deadTask('dlq_user', 'order 43 not found'));
  });

  test('list: newest death first, filters, --wide, cursor pages', async () => {
    const r = await ax(['dlq', 'list', '--type', 'dlq_order', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.tasks.map((t: {id: string}) => t.id)).toEqual(ids.slice(0, 4).reverse());
    expect(r.json.tasks[0]).toMatchObject({type: 'dlq_order', attempt: 2, maxRetries: 1, lastError: "card 'visa-77' declined 100%"});
    expect(r.json.next).toBeNull();

    const byError = await ax(['dlq', 'list', '--error', 'not found', '--json']);
    expect(byError.json.tasks.map((t: {id: string}) => t.id).sort()).toEqual([ids[0], ids[1], ids[4]].sort());
    const literal = await ax(['dlq', 'list', '--error', '100%', '--json']);
    expect(literal.json.tasks.map((t: {id: string}) => t.id)).toEqual([ids[3]]);
    const none = await ax(['dlq', 'list', '--since', '2000-01-01T00:00:00Z', '--until', '2000-01-02T00:00:00Z']);
    expect(none.stdout.trim()).toBe('no dead tasks match');

    const p1 = await ax(['dlq', 'list', '--limit', '2', '--json']);
    expect(p1.json.next).toBe(p1.json.tasks[1].id);
    const p2 = await ax(['dlq', 'list', '--limit', '2', '--after', p1.json.next, '--json']);
    const p3 = await ax(['dlq', 'list', '--limit', '2', '--after', p2.json.next, '--json']);
    expect([...p1.json.tasks, ...p2.json.tasks, ...p3.json.tasks].map((t: {id: string}) => t.id)).toEqual([...ids].reverse());
    expect(p3.json.next).toBeNull();

    const human = await ax(['dlq', 'list', '--limit', '2']);
    expect(human.stdout).toMatch(/ID\s+TYPE\s+ATTEMPTS\s+DIED \(UTC\)\s+LAST ERROR/);
    expect(human.stdout).toContain(`more: --after ${p1.json.next}`);
    // Piped output is never cut (test/e2e/tables.test.ts: cut to fit on a terminal, ids whole).
    const piped = await ax(['dlq', 'list', '--type', 'dlq_order']);
    expect(piped.stdout).toContain(long);
    const wide = await ax(['dlq', 'list', '--type', 'dlq_order', '--wide']);
    expect(wide.stdout).toContain(long);
  });

  test('show: each attempt with its error and stack, and the timeline', async () => {
    const r = await ax(['dlq', 'show', ids[0]!, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.task).toMatchObject({id: ids[0], state: 'dead', lastError: 'order 41 not found'});
    expect(r.json.attempts).toEqual([
      expect.objectContaining({
        attempt: 1,
        to: 'failed',
        worker: 'w:1',
        error: 'warming up',
        stack: 'Error: warming up\n    at handler (h.js:1:1)',
      }),
      expect.objectContaining({attempt: 2, to: 'dead', worker: 'w:2', error: 'order 41 not found'}),
    ]);
    expect(r.json.history.map((h: {to: string}) => h.to)).toEqual(['submitted', 'running', 'failed', 'running', 'dead']);
    const human = await ax(['dlq', 'show', ids[0]!]);
    expect(human.stdout).toMatch(/failed attempts \(2\)/);
    expect(human.stdout).toContain('at handler (h.js:1:1)');
    expect(human.stdout).toContain('at final (h.js:2:2)');
    expect(human.stdout).toMatch(/history \(UTC\)/);
  });

  test('stats: per type × signature, with count, first/last seen and a sample', async () => {
    const r = await ax(['dlq', 'stats', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.total).toBe(5);
    const byKey = Object.fromEntries(r.json.groups.map((g: {type: string; signature: string}) => [`${g.type} ${g.signature}`, g]));
    expect(byKey['dlq_order order <n> not found']).toMatchObject({count: 2, sampleId: ids[0]});
    expect(byKey['dlq_user order <n> not found']).toMatchObject({count: 1, sampleId: ids[4]});
    expect(byKey["dlq_order card '<s>' declined <n>%"]).toMatchObject({count: 1});
    expect(r.json.groups[0].count).toBe(2);
    const g = byKey['dlq_order order <n> not found'];
    expect(Date.parse(g.firstSeen)).toBeLessThanOrEqual(Date.parse(g.lastSeen));
    const one = await ax(['dlq', 'stats', '--type', 'dlq_user', '--json']);
    expect(one.json.groups).toHaveLength(1);
    const human = await ax(['dlq', 'stats']);
    expect(human.stdout).toMatch(/TYPE\s+DEAD\s+FIRST \(UTC\)\s+LAST \(UTC\)\s+SAMPLE\s+SIGNATURE/);
    expect(human.stdout).toContain('5 dead in 4 groups');
  });

  test.concurrent.each<[string, string[], number, RegExp]>([
    ['list: a bad type', ['dlq', 'list', '--type', 'Order-Notify'], 2, /domain_action|type/],
    ['list: a bad since', ['dlq', 'list', '--since', 'yesterday'], 2, /since "yesterday" is neither/],
    ['list: since after until', ['dlq', 'list', '--since', '1h', '--until', '2h'], 2, /must be before until/],
    ['list: an empty error', ['dlq', 'list', '--error', ' '], 2, /error must not be empty/],
    ['list: limit 0', ['dlq', 'list', '--limit', '0'], 2, /greater than or equal to 1/],
    ['list: limit 1001', ['dlq', 'list', '--limit', '1001'], 2, /less than or equal to 1000/],
    ['list: a malformed cursor', ['dlq', 'list', '--after', "x' OR 1=1 --"], 2, /is not a task id/],
    ['list: an unknown cursor', ['dlq', 'list', '--after', '01900000-0000-7000-8000-00000000abcd'], 3, /does not exist/],
    ['show: a malformed id', ['dlq', 'show', '42'], 2, /"42" is not a task id/],
    ['show: an unknown id', ['dlq', 'show', '01900000-0000-7000-8000-00000000abcd'], 3, /does not exist/],
    ['stats: a bad until', ['dlq', 'stats', '--until', '2026-13-01'], 2, /until "2026-13-01" is not a valid time/],
  ])('refuses %s', async (_n, args, exit, message) => {
    const r = await ax(args);
    expect(r.code, r.stderr).toBe(exit);
    expect(flat(r.stderr)).toMatch(message);
  });

  test('show refuses a task that is not dead (exit 4, naming ax tasks show)', async () => {
    const id = await submitDelayed('dlq_alive');
    const r = await ax(['dlq', 'show', id]);
    expect(r.code).toBe(4);
    expect(flat(r.stderr)).toMatch(/is submitted, not dead: `ax tasks show/);
  });
});

describe('ax dlq replay', () => {
  async function state(id: string): Promise<{state: string; attempt: number; retry_base: number; published_at: Date | null}> {
    const [row] = await testEnv.sql<{state: string; attempt: number; retry_base: number; published_at: Date | null}>(
      'SELECT state, attempt, retry_base, published_at FROM tasks WHERE id = ?',
      [id],
    );
    return row!;
  }
  async function snapshot(): Promise<string> {
    const rows = await testEnv.sql('SELECT id, state, attempt, retry_base, published_at, payload, replay FROM tasks ORDER BY id');
    const [h] = await testEnv.sql<{n: number}>('SELECT COUNT(*) AS n FROM task_history');
    return JSON.stringify({rows, history: h?.n, audit: await auditCount()});
  }
  async function refused(args: string[], exit: number, message: RegExp): Promise<void> {
    const before = await snapshot();
    const r = await ax(['dlq', 'replay', ...args]);
    expect(r.code, `${args.join(' ')}\n${r.stderr}`).toBe(exit);
    expect(flat(r.stderr)).toMatch(message);
    expect(await snapshot()).toBe(before);
  }

  test('by ids: dead → submitted with a fresh budget, rung, history and audit; running ones skipped', async () => {
    const a = await deadTask('replay_ids', 'boom a');
    const b = await deadTask('replay_ids', 'boom b');
    await testEnv.broker(); // declares the queues
    await takeRung(testEnv, 'io');
    const store = await testEnv.store();
    const run = await submitDelayed('replay_ids');
    await testEnv.sql('UPDATE tasks SET run_at = NOW(3) WHERE id = ?', [run]);
    expect((await store.tasksClaim({ids: [run], worker: 'w:9', leaseMs: 60_000})).claimed).toHaveLength(1);

    const r = await ax(['dlq', 'replay', a, b, run, '--reason', 'smtp fixed', '--json'], {AX_OPERATOR: 'carol'});
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toMatchObject({dryRun: false, replayed: 2, unrung: 0, skipped: [{id: run, state: 'running'}]});
    expect(r.json.ids.sort()).toEqual([a, b].sort());
    for (const id of [a, b]) {
      expect(await state(id)).toMatchObject({state: 'submitted', attempt: 2, retry_base: 2});
      expect((await state(id)).published_at).not.toBeNull();
    }
    expect((await takeRung(testEnv, 'io')).ids.sort()).toEqual([a, b].sort());
    const hist = await store.historyList({taskId: a});
    expect(hist.at(-1)).toMatchObject({from: 'dead', to: 'submitted', error: 'replayed by carol: smtp fixed'});
    const audit = await ax(['audit', 'list', '--limit', '1', '--json']);
    expect(audit.json.entries[0]).toMatchObject({operator: 'carol', command: 'dlq replay', reason: 'smtp fixed', taskCount: 2});
    expect(audit.json.entries[0].taskIds.sort()).toEqual([a, b].sort());
    // The replayed task is claimable with its whole budget again: attempt 3 is the first of it.
    const [c] = (await store.tasksClaim({ids: [a], worker: 'w:1', leaseMs: 30_000})).claimed;
    expect(c).toMatchObject({attempt: 3, retryBase: 2});
    // tasks show counts it within the replay's budget, not "attempt 3 of 2".
    const shown = await ax(['tasks', 'show', a]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/ · attempt 3 \(1 of 2 since the replay\) · /);
    expect(shown.stdout).not.toMatch(/attempt 3 of 2/);
    const fresh = await ax(['tasks', 'show', run]);
    expect(fresh.stdout).toMatch(/ · attempt 1 of 6 · /);
    const list = await ax(['tasks', 'list', '--type', 'replay_ids']);
    expect(list.stdout.split('\n').find((l) => l.startsWith(a))).toMatch(/ running {2,}1\/2 \(3 in all\) /);
    expect(list.stdout.split('\n').find((l) => l.startsWith(run))).toMatch(/ running {2,}1\/6 /);
    expect((await ax(['tasks', 'list', '--type', 'replay_ids', '--json'])).json.tasks.find((t: {id: string}) => t.id === a)).toMatchObject({
      attempt: 3,
      maxRetries: 1,
      retryBase: 2,
    });
  });

  test('--dry-run counts per type with a sample and changes nothing; the filter needs --yes off a terminal', async () => {
    const ids = [await deadTask('replay_dry', 'xdry 1'), await deadTask('replay_dry', 'xdry 2'), await deadTask('replay_dry_other', 'y')];
    const before = await snapshot();
    const dry = await ax(['dlq', 'replay', '--error', 'xdry', '--dry-run', '--json']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.json).toMatchObject({dryRun: true, total: 2, byType: {replay_dry: 2}});
    expect(dry.json.sample.sort()).toEqual(ids.slice(0, 2).sort());
    const human = await ax(['dlq', 'replay', '--type', 'replay_dry', '--dry-run']);
    expect(human.stdout).toMatch(/would replay 2 dead tasks\n {2}replay_dry {2}2/);
    expect(await snapshot()).toBe(before);
    await refused(['--error', 'xdry'], 2, /add --yes to confirm/);
    const yes = await ax(['dlq', 'replay', '--error', 'xdry', '--yes', '--json']);
    expect(yes.code, yes.stderr).toBe(0);
    expect(yes.json.replayed).toBe(2);
    expect((await state(ids[2]!)).state).toBe('dead');
  });

  test('two replays of one filter at once replay each task exactly once', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push(await deadTask('replay_race', `race ${i}`));
    const [p, q] = await Promise.all([
      ax(['dlq', 'replay', '--type', 'replay_race', '--json']),
      ax(['dlq', 'replay', '--type', 'replay_race', '--json']),
    ]);
    // The loser may find nothing left to replay (exit 3) when the winner finished first.
    const done = [p, q].filter((r) => r.code === 0);
    expect(done.length).toBeGreaterThanOrEqual(1);
    for (const r of [p, q]) expect([0, 3], r.stderr).toContain(r.code);
    expect(done.reduce((n, r) => n + r.json.replayed, 0)).toBe(ids.length);
    const [row] = await testEnv.sql<{n: number}>(
      "SELECT COUNT(*) AS n FROM task_history h JOIN tasks t ON t.id = h.task_id WHERE t.type = 'replay_race' AND h.from_state = 'dead' AND h.to_state = 'submitted'",
    );
    expect(Number(row?.n)).toBe(ids.length);
  });

  test('--force --dry-run names the real states of what it would replay, and changes nothing', async () => {
    const dead = await deadTask('replay_force_dry', 'gone');
    const store = await testEnv.store();
    const ok = await submitDelayed('replay_force_dry');
    await testEnv.sql('UPDATE tasks SET run_at = NOW(3) WHERE id = ?', [ok]);
    const [c] = (await store.tasksClaim({ids: [ok], worker: 'w:1', leaseMs: 30_000})).claimed;
    await store.outcomesApply({outcomes: [{kind: 'complete', id: ok, fence: c!.fence}], actor: 'w:1'});
    const before = await snapshot();
    const one = await ax(['dlq', 'replay', '--force', '--dry-run', '--reason', 'resend', ok]);
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toMatch(/^would replay 1 task \(1 succeeded\)\n/);
    expect(one.stdout).not.toMatch(/dead/);
    const both = await ax(['dlq', 'replay', '--force', '--dry-run', '--reason', 'resend', dead, ok]);
    expect(both.stdout).toMatch(/^would replay 2 tasks \(1 dead, 1 succeeded\)\n/);
    const json = await ax(['dlq', 'replay', '--force', '--dry-run', '--reason', 'resend', ok, '--json']);
    expect(json.json).toMatchObject({dryRun: true, total: 1, byState: {succeeded: 1}});
    const plain = await ax(['dlq', 'replay', '--dry-run', dead]);
    expect(plain.stdout).toMatch(/^would replay 1 dead task\n/);
    expect(await snapshot()).toBe(before);
  });

  test('--force --patch replays a succeeded and a dead task: patched payloads, stamped for ctx.replay, history and one audit row', async () => {
    const dead = await deadTask('replay_force', 'gone');
    const store = await testEnv.store();
    const ok = await submitDelayed('replay_force');
    await testEnv.sql('UPDATE tasks SET run_at = NOW(3), payload = ? WHERE id = ?', [JSON.stringify({order: 1, keep: true}), ok]);
    const [c] = (await store.tasksClaim({ids: [ok], worker: 'w:1', leaseMs: 30_000})).claimed;
    expect(c?.replay).toBeNull();
    await store.outcomesApply({outcomes: [{kind: 'complete', id: ok, fence: c!.fence}], actor: 'w:1'});
    await testEnv.broker();
    await takeRung(testEnv, 'io');
    const audits = await auditCount();

    const r = await ax(
      ['dlq', 'replay', dead, ok, '--force', '--reason', 'receipt lost', '--patch', '{"order": 2, "error": null}', '--json'],
      {
        AX_OPERATOR: 'dave',
      },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toMatchObject({replayed: 2, skipped: [], unrung: 0});
    expect((await takeRung(testEnv, 'io')).ids.sort()).toEqual([dead, ok].sort());
    const rows = await testEnv.sql<{id: string; state: string; payload: string; replay: string | null}>(
      'SELECT id, state, payload, replay FROM tasks WHERE id IN (?, ?)',
      [dead, ok],
    );
    const byId = new Map(rows.map((x) => [x.id, x]));
    expect(JSON.parse(byId.get(ok)!.payload)).toEqual({order: 2, keep: true});
    expect(JSON.parse(byId.get(dead)!.payload)).toEqual({order: 2});
    for (const x of rows) {
      expect(x.state).toBe('submitted');
      expect(JSON.parse(x.replay!)).toMatchObject({by: 'dave', reason: 'receipt lost'});
    }
    expect((await store.historyList({taskId: ok})).at(-1)).toMatchObject({
      from: 'succeeded',
      to: 'submitted',
      error: 'force-replayed by dave: receipt lost; patch {"order":2,"error":null}',
    });
    expect(await auditCount()).toBe(audits + 1);
    const audit = await ax(['audit', 'list', '--limit', '1', '--json']);
    expect(audit.json.entries[0]).toMatchObject({
      operator: 'dave',
      command: 'dlq replay --force',
      reason: 'receipt lost',
      taskCount: 2,
      filter: {ids: [dead, ok], force: true, patch: '{"order":2,"error":null}'},
    });
    // The claim carries the stamp to the worker (ctx.replay) in the same statement.
    const [again] = (await store.tasksClaim({ids: [ok], worker: 'w:2', leaseMs: 30_000})).claimed;
    expect(again?.replay).toMatchObject({by: 'dave', reason: 'receipt lost'});
    expect(again?.replay?.at).toBeInstanceOf(Date);
  });

  test('--patch with a filter patches every selected payload; one result that would be invalid refuses the whole replay', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await deadTask('replay_patchf', `smtp ${i}`));
    const other = await deadTask('replay_patchf_other', 'smtp x');
    // One payload already near the 64 KiB limit: a patch adding 10 kB makes it too big.
    const near = {error: 'smtp 2', blob: 'x'.repeat(60_000)};
    await testEnv.sql('UPDATE tasks SET payload = ? WHERE id = ?', [JSON.stringify(near), ids[2]]);
    await refused(
      ['--type', 'replay_patchf', '--patch', JSON.stringify({note: 'y'.repeat(10_000)}), '--yes'],
      2,
      new RegExp(
        `--patch makes the payload of task ${ids[2]} invalid: payload is \\d+ bytes, over the limit of 65536 bytes; nothing replayed`,
      ),
    );
    // The dry run checks the patch too, and changes nothing.
    const patch = JSON.stringify({smtp: {host: 'mx2'}, error: null});
    const before = await snapshot();
    const dry = await ax(['dlq', 'replay', '--type', 'replay_patchf', '--patch', patch, '--dry-run', '--json']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.json).toMatchObject({dryRun: true, total: 3, byType: {replay_patchf: 3}});
    expect(await snapshot()).toBe(before);

    const r = await ax(['dlq', 'replay', '--type', 'replay_patchf', '--patch', patch, '--reason', 'mx1 retired', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toMatchObject({replayed: 3, skipped: []});
    // The payload near the limit is over AX_PAYLOAD_INLINE: stored apart, read back from task_payloads.
    const rows = await testEnv.sql<{id: string; state: string; payload: string}>(
      `SELECT t.id, t.state, IF(t.payload = '', CONVERT(UNCOMPRESS(p.body) USING utf8mb4), t.payload) AS payload
         FROM tasks t LEFT JOIN task_payloads p ON p.task_id = t.id WHERE t.id IN (?, ?, ?, ?)`,
      [...ids, other],
    );
    const byId = new Map(rows.map((x) => [x.id, x]));
    expect(JSON.parse(byId.get(ids[0]!)!.payload)).toEqual({smtp: {host: 'mx2'}});
    expect(JSON.parse(byId.get(ids[1]!)!.payload)).toEqual({smtp: {host: 'mx2'}});
    expect(JSON.parse(byId.get(ids[2]!)!.payload)).toEqual({blob: near.blob, smtp: {host: 'mx2'}});
    for (const id of ids) expect(byId.get(id)?.state).toBe('submitted');
    expect(byId.get(other)).toMatchObject({state: 'dead', payload: JSON.stringify({error: 'smtp x'})});
    // The patch is recorded in each replayed task's history and in the audit row (defect 7).
    const notes = await testEnv.sql<{error: string}>(
      `SELECT error FROM task_history WHERE task_id IN (?, ?, ?) AND from_state = 'dead' AND to_state = 'submitted'`,
      ids,
    );
    expect(notes.map((n) => n.error)).toEqual(Array(3).fill(expect.stringMatching(/^replayed by .+: mx1 retired; patch /)));
    for (const n of notes) expect(n.error.endsWith(`; patch ${JSON.stringify(JSON.parse(patch))}`)).toBe(true);
    const audit = await ax(['audit', 'list', '--limit', '1', '--json']);
    expect(audit.json.entries[0]).toMatchObject({
      command: 'dlq replay',
      filter: {type: 'replay_patchf', patch: JSON.stringify(JSON.parse(patch))},
    });
  });

  test('--rate spreads the replay over time', async () => {
    for (let i = 0; i < 6; i++) await deadTask('replay_rate', `slow ${i}`);
    const t0 = Date.now();
    const r = await ax(['dlq', 'replay', '--type', 'replay_rate', '--rate', '3', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.replayed).toBe(6);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1900);
  });

  test('refuses bad input with its exit code, nothing changed', async () => {
    const dead = await deadTask('replay_bad', 'bad');
    const store = await testEnv.store();
    const ok = await submitDelayed('replay_bad');
    await testEnv.sql('UPDATE tasks SET run_at = NOW(3) WHERE id = ?', [ok]);
    const [c] = (await store.tasksClaim({ids: [ok], worker: 'w:1', leaseMs: 30_000})).claimed;
    await store.outcomesApply({outcomes: [{kind: 'complete', id: ok, fence: c!.fence}], actor: 'w:1'});
    await refused([], 2, /name the tasks to replay/);
    await refused(['12345'], 2, /not task ids/);
    await refused([dead, '--type', 'replay_bad'], 2, /either ids or a filter/);
    await refused(['--all', '--type', 'replay_bad'], 2, /does not combine with a filter/);
    await refused(['--type', 'replay_bad', '--rate', '0'], 2, /--rate must be a positive number of tasks per second/);
    await refused([dead, '--reason', 'r'.repeat(1001)], 2, /--reason is longer than 1000/);
    await refused(['01900000-0000-7000-8000-00000000abcd'], 3, /unknown tasks/);
    await refused(['--type', 'replay_nothing_here'], 3, /no dead task matches/);
    await refused([dead, ok], 4, /is succeeded: only dead tasks are replayed; add --force with --reason to run a finished task again/);
    await refused([ok, '--force'], 2, /--force needs --reason/);
    await refused([ok, '--force', '--reason', '  '], 2, /--force needs --reason/);
    await refused([dead, '--patch', '[1]'], 2, /--patch must be a JSON object/);
    await refused([dead, '--patch', '{oops'], 2, /--patch is not valid JSON/);
    await refused(['--type', 'replay_bad', '--patch', '[1]'], 2, /--patch must be a JSON object/);
    await refused([dead, ok, '--force', '--reason', 'r', '--patch', '{"__proto__": {"x": 1}}'], 2, /forbidden key "__proto__"/);
    await refused(
      [dead, '--patch', `{"big": "${'x'.repeat(70_000)}"}`],
      2,
      new RegExp(`--patch makes the payload of task ${dead} invalid`),
    );
    const r = await ax(['dlq', 'replay', dead], {AX_MYSQL_URL: 'mysql://root@127.0.0.1:1/ax_unreachable'});
    expect(r.code).toBe(5);
  });
});
