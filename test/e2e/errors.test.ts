/**
 * End-to-end tests of `ax errors` and the search flags of `ax tasks list` through the built CLI
 * (`node bin/run.js`, run `npm run build` first) against the real MariaDB: failed attempts of every
 * task counted per type × signature in the window; tasks found by payload field, dedup key and
 * error; bad input refused with exit 2.
 */
import {existsSync, mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {ROOT, runCli, type CliRun} from '../helpers/spawn.js';
import {createTestEnv, type TestEnv} from '../helpers/env.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';

let testEnv: TestEnv;
let cwd: string;

function ax(args: string[]): Promise<CliRun> {
  return runCli(args, {cwd, env: testEnv.env});
}

const newId = createIdGenerator(Date.now);

/** Writes a task of `type` straight to the store and runs one attempt per error: failed, …, then dead when `die`. */
async function failing(type: string, errors: string[], die: boolean): Promise<string> {
  const store = await testEnv.store();
  const t = validateTaskSpec({type, payload: {errors}}, {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'}, Date.now(), newId);
  await store.tasksInsert({tasks: [t], actor: 'e2e:1'});
  for (const [i, error] of errors.entries()) {
    const c = (await store.tasksClaim({ids: [t.id], worker: 'w:1', leaseMs: 30_000})).claimed[0]!;
    const last = die && i === errors.length - 1;
    const outcome = last
      ? {kind: 'deadLetter' as const, id: t.id, fence: c.fence, error}
      : {kind: 'fail' as const, id: t.id, fence: c.fence, retryDelayMs: 0, error};
    await store.outcomesApply({outcomes: [outcome], actor: 'w:1'});
  }
  return t.id;
}

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist/commands/errors.js'))) throw new Error('the CLI is not built: run `npm run build` first');
  cwd = mkdtempSync(join(tmpdir(), 'ax-e2e-errors-'));
  testEnv = await createTestEnv();
});

afterAll(async () => {
  await testEnv?.dispose();
  if (cwd) rmSync(cwd, {recursive: true, force: true});
});

describe('ax errors', () => {
  test('counts failed attempts of every task per type × signature, largest first, with a sample', async () => {
    const a = await failing('err_notify', ['order 41 not found', 'order 41 not found', 'smtp 10001 refused'], true);
    await failing('err_notify', ['order 42 not found'], false);
    const c = await failing('err_report', ['disk full'], false);
    // An hour and a half ago: outside the default window.
    const old = await failing('err_old', ['gone'], false);
    await testEnv.sql("UPDATE task_history SET at = NOW(3) - INTERVAL 90 MINUTE WHERE task_id = ? AND to_state = 'failed'", [old]);

    const r = await ax(['errors', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const rows = (r.json.groups as Array<Record<string, unknown>>).map((g) => [g.type, g.signature, g.count]);
    expect(rows).toEqual([
      ['err_notify', 'order <n> not found', 3],
      ['err_notify', 'smtp <n> refused', 1],
      ['err_report', 'disk full', 1],
    ]);
    expect(r.json.total).toBe(5);
    expect(r.json.more).toBe(0);
    const top = r.json.groups[0] as Record<string, string>;
    expect(top.sampleId).toBe(a);
    expect(top.sampleError).toBe('order 41 not found');
    expect(Date.parse(String(top.firstSeen))).toBeLessThanOrEqual(Date.parse(String(top.lastSeen)));
    expect((r.json.groups[2] as Record<string, string>).sampleId).toBe(c);

    const wide = await ax(['errors', '--since', '2h', '--type', 'err_old', '--json']);
    expect(wide.code, wide.stderr).toBe(0);
    expect(wide.json.groups.map((g: {sampleId: string}) => g.sampleId)).toEqual([old]);

    const one = await ax(['errors', '--limit', '1']);
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toMatch(/err_notify\s+3 .*order <n> not found/);
    expect(one.stdout).toMatch(/5 failed attempts in 3 groups since .* \(2 more: raise --limit\)/);

    const none = await ax(['errors', '--type', 'err_nothing']);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toMatch(/no failed attempts since/);
  });

  test('bad input: exit 2 naming the flag', async () => {
    for (const [args, msg] of [
      [['--since', 'yesterday'], /since "yesterday"/],
      [['--since', '1h', '--until', '2h'], /must be before until/],
      [['--type', 'Bad Type'], /type/i],
      [['--limit', '0'], /limit/i],
    ] as Array<[string[], RegExp]>) {
      const r = await ax(['errors', ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(msg);
    }
  });
});

describe('ax tasks list: search', () => {
  test('by a payload field, the dedup key and the last error', async () => {
    const store = await testEnv.store();
    const spec = (payload: Record<string, unknown>, dedupKey?: string) =>
      validateTaskSpec(
        {type: 'search_order', payload, ...(dedupKey === undefined ? {} : {dedupKey})},
        {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'},
        Date.now(),
        newId,
      );
    const a = spec({orderId: 42}, 'order-42');
    const b = spec({orderId: 43});
    await store.tasksInsert({tasks: [a, b], actor: 'e2e:1'});
    const failed = await failing('search_order', ['gateway 100% down'], false);
    const ids = async (args: string[]) => {
      const r = await ax(['tasks', 'list', ...args, '--json']);
      expect(r.code, r.stderr).toBe(0);
      return (r.json.tasks as Array<{id: string}>).map((t) => t.id);
    };
    expect(await ids(['--payload', 'orderId=42', '--since', '1h'])).toEqual([a.id]);
    expect(await ids(['--dedup-key', 'order-42'])).toEqual([a.id]);
    expect(await ids(['--error', '100% down', '--type', 'search_order'])).toEqual([failed]);
    expect(await ids(['--payload', 'orderId=44', '--since', '1h'])).toEqual([]);
  });

  test('bad input: exit 2 naming the flag, nothing read', async () => {
    for (const [args, msg] of [
      [['--payload', 'orderId=42'], /payload needs since/],
      [['--payload', 'orderId', '--since', '1h'], /field=value/],
      [['--payload', "x') OR 1=1 --=1", '--since', '1h'], /field=value/],
      [['--payload', 'orderId=', '--since', '1h'], /payload value/],
      [['--error', ' '], /error must not be empty/],
      [['--dedup-key', 'k'.repeat(192)], /dedup-key/],
    ] as Array<[string[], RegExp]>) {
      const r = await ax(['tasks', 'list', ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(msg);
    }
  });
});

describe('ax tasks cancel --type --state', () => {
  test('dry-run counts and changes nothing; --yes cancels in bulk, audited; the by-id form still works', async () => {
    const submit = async (type: string) => {
      const r = await ax(['submit', type, '--delay', '1h', '--json']);
      expect(r.code, r.stderr).toBe(0);
      return r.json.ids[0] as string;
    };
    const ids = [await submit('bulk_cancel'), await submit('bulk_cancel'), await submit('bulk_cancel')];
    const other = await submit('bulk_keep');
    const states = async () =>
      (await testEnv.sql<{id: string; state: string}>('SELECT id, state FROM tasks WHERE id IN (?) ORDER BY id', [[...ids, other]])).map(
        (r) => r.state,
      );
    const audits = async () => Number((await testEnv.sql<{n: number}>('SELECT COUNT(*) AS n FROM admin_audit'))[0]?.n);
    const a0 = await audits();

    const dry = await ax(['tasks', 'cancel', '--type', 'bulk_cancel', '--state', 'submitted,failed', '--dry-run', '--json']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.json).toMatchObject({type: 'bulk_cancel', dryRun: true, total: 3, tasks: {submitted: 3}});
    expect(await states()).toEqual(['submitted', 'submitted', 'submitted', 'submitted']);
    expect(await audits()).toBe(a0);

    const byId = await ax(['tasks', 'cancel', ids[0]!, '--json']);
    expect(byId.code, byId.stderr).toBe(0);
    const r = await ax(['tasks', 'cancel', '--type', 'bulk_cancel', '--state', 'submitted', '--reason', 'retired', '--yes', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toMatchObject({dryRun: false, total: 2, tasks: {submitted: 2}});
    const after = await testEnv.sql<{state: string; n: number}>(
      "SELECT state, COUNT(*) AS n FROM tasks WHERE type IN ('bulk_cancel', 'bulk_keep') GROUP BY state ORDER BY state",
    );
    expect(after.map((x) => [x.state, Number(x.n)])).toEqual([
      ['submitted', 1],
      ['cancelled', 3],
    ]);
    expect(await audits()).toBe(a0 + 2);
    const [row] = await testEnv.sql<{command: string; reason: string; task_count: number}>(
      'SELECT command, reason, task_count FROM admin_audit ORDER BY id DESC LIMIT 1',
    );
    expect(row).toMatchObject({command: 'tasks cancel --type', reason: 'retired', task_count: 2});
  });

  test('bad input: a clear error, the right exit code, nothing changed', async () => {
    const r0 = await ax(['submit', 'bulk_bad', '--delay', '1h', '--json']);
    const id = r0.json.ids[0] as string;
    const a0 = Number((await testEnv.sql<{n: number}>('SELECT COUNT(*) AS n FROM admin_audit'))[0]?.n);
    for (const [args, code, msg] of [
      [[id, '--type', 'bulk_bad'], 2, /not both/],
      [['--type', 'bulk_bad', '--state', 'submitted'], 2, /needs --yes/],
      [['--type', 'bulk_bad', '--state', 'sleeping', '--yes'], 2, /state "sleeping" is not one of/],
      [['--type', 'bulk_bad', '--state', 'succeeded', '--yes'], 2, /only submitted, failed, running tasks can be cancelled/],
      [['--type', 'bulk_bad', '--state', 'submitted', '--reason', 'x'.repeat(1001), '--yes'], 2, /--reason is longer than 1000/],
      [['--type', 'bulk_bad', '--yes'], 2, /needs --state/],
      [['--state', 'submitted', '--yes'], 2, /needs --type/],
      [['--type', "bulk_bad'; DROP TABLE tasks; --", '--state', 'submitted', '--yes'], 2, /type/],
      [['--type', 'bulk_nothing', '--state', 'submitted,failed', '--yes'], 3, /nothing to cancel/],
      [[], 2, /give a task id/],
    ] as Array<[string[], number, RegExp]>) {
      const r = await ax(['tasks', 'cancel', ...args]);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(code);
      expect(r.stderr.replace(/\s*\n\s*›\s*/g, ' ')).toMatch(msg);
    }
    expect((await testEnv.sql<{state: string}>('SELECT state FROM tasks WHERE id = ?', [id]))[0]?.state).toBe('submitted');
    expect(Number((await testEnv.sql<{n: number}>('SELECT COUNT(*) AS n FROM admin_audit'))[0]?.n)).toBe(a0);
  });
});
