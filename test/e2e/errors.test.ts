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
