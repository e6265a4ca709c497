/**
 * End-to-end tests of `ax archive run | list | show | restore` through the built CLI (run
 * `npx tsc -p tsconfig.build.json` first) against the real MariaDB, and of the archive loop of
 * `ax scheduler`: success paths checked against the database and the archive directory, bad input
 * refused with its exit code and nothing changed.
 */
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import type {AxStore} from '../../src/core/store/types.js';
import {finished} from '../conformance/archive.js';
import {createTestEnv, eventually, type TestEnv} from '../helpers/env.js';
import {runCli, spawnAx, type CliRun} from '../helpers/spawn.js';

let env: TestEnv;
let store: AxStore;
let cwd: string;
let dir: string;
const ax = (args: string[], extra: Record<string, string> = {}): Promise<CliRun> =>
  runCli(args, {cwd, env: {...env.env, AX_ARCHIVE_DIR: dir, AX_ARCHIVE_PAUSE: '0', ...extra}});
const hot = async (ids: string[]) => (await env.sql('SELECT id FROM tasks WHERE id IN (?)', [ids])).length;
const age = (ids: string[], days: number) =>
  env.sql(`UPDATE tasks SET finished_at = finished_at - INTERVAL ${days} DAY, run_at = run_at - INTERVAL ${days} DAY WHERE id IN (?)`, [
    ids,
  ]);

beforeAll(async () => {
  env = await createTestEnv();
  store = await env.store();
  cwd = mkdtempSync(join(tmpdir(), 'ax-e2e-archive-'));
  dir = join(cwd, 'cold');
});
afterAll(async () => {
  await env?.dispose();
  if (cwd) rmSync(cwd, {recursive: true, force: true});
});

describe('ax archive', () => {
  let old: string[];
  let young: string[];

  test('run --dry-run counts and changes nothing; run archives; list, show and restore round-trip', async () => {
    old = [...(await finished(store, 'e2e_ok', 5, 'complete')), ...(await finished(store, 'e2e_dead', 2, 'deadLetter'))];
    young = await finished(store, 'e2e_young', 2, 'complete');
    await age(old, 31);
    const dry = await ax(['archive', 'run', '--dry-run', '--json']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.json).toMatchObject({ran: true, dryRun: true, tasks: {succeeded: 5, dead: 2, cancelled: 0}});
    expect(await hot(old)).toBe(7);
    const run = await ax(['archive', 'run', '--json']);
    expect(run.code, run.stderr).toBe(0);
    // Per task: its one attempt (the submit is the task row; the claim wrote no row).
    expect(run.json).toMatchObject({ran: true, tasks: {succeeded: 5, dead: 2}, history: 5 + 2});
    expect(await hot(old)).toBe(0);
    expect(await hot(young)).toBe(2);

    const list = await ax(['archive', 'list', '--json']);
    expect(list.code, list.stderr).toBe(0);
    expect(list.json.days.reduce((n: number, d: {tasks: number}) => n + d.tasks, 0)).toBe(7);
    const human = await ax(['archive', 'list']);
    expect(human.stdout).toMatch(/DAY\s+PARTS\s+TASKS/);

    const show = await ax(['archive', 'show', old[5]!, '--json']);
    expect(show.code, show.stderr).toBe(0);
    expect(show.json.task).toMatchObject({id: old[5], state: 'dead', type: 'e2e_dead'});
    // As archived: the task row (its submit: created_at, submitted_by) and the stored rows, one per
    // attempt (its start on it, like on the task row).
    expect(show.json.task).toMatchObject({submitted_by: 'test:1', created_at: expect.any(String)});
    expect(show.json.history.map((h: {to_state: string}) => h.to_state)).toEqual(['dead']);
    expect(show.json.history[0].started_at).toBe(show.json.task.started_at);

    const restore = await ax(['archive', 'restore', old[5]!, '--json']);
    expect(restore.code, restore.stderr).toBe(0);
    expect(restore.json.restored).toEqual([old[5]]);
    const audit = await env.sql<{command: string; task_ids: string}>('SELECT command, task_ids FROM admin_audit');
    expect(audit).toEqual([{command: 'archive restore', task_ids: JSON.stringify([old[5]])}]);
    expect(await store.tasksGet({id: old[5]!})).toMatchObject({state: 'dead', lastError: 'boom'});
    // Now in the hot table: a second restore is refused, and show no longer finds it archived.
    expect((await ax(['archive', 'restore', old[5]!])).code).toBe(3);
    expect((await ax(['archive', 'show', old[5]!])).code).toBe(3);
  });

  test('tasks show of an archived id points to ax archive show (still exit 3); an unknown id does not exist', async () => {
    const id = old[0]!;
    expect(await hot([id])).toBe(0);
    const human = await ax(['tasks', 'show', id]);
    expect(human.code).toBe(3);
    const said = human.stderr.replace(/\s*\n\s*›\s*/g, ' ');
    expect(said).toMatch(
      new RegExp(
        `task ${id} is no longer in the live tables: it was archived \\(\\d{4}-\\d{2}-\\d{2}/[^)]+\\); \`ax archive show ${id}\` shows it`,
      ),
    );
    const json = await ax(['tasks', 'show', id, '--json']);
    expect(json.code).toBe(3);
    expect(json.json.error).toMatchObject({code: 'not_found', details: {archived: expect.stringMatching(/^\d{4}-\d{2}-\d{2}\//)}});
    const unknown = await ax(['tasks', 'show', '0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d', '--json']);
    expect(unknown.code).toBe(3);
    expect(unknown.json.error.message).toBe('task 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d does not exist');
    // No archive there at all: still a plain not found.
    const noArchive = await ax(['tasks', 'show', id, '--json'], {AX_ARCHIVE_DIR: join(cwd, 'nowhere')});
    expect(noArchive.code).toBe(3);
    expect(noArchive.json.error.message).toBe(`task ${id} does not exist`);
    // ax dlq show says the same of an archived id.
    const dlq = await ax(['dlq', 'show', id, '--json']);
    expect(dlq.code).toBe(3);
    expect(dlq.json.error).toMatchObject({code: 'not_found', message: expect.stringContaining(`\`ax archive show ${id}\` shows it`)});
  });

  test('bad input: exit 2 (nothing changed), 3 unknown id', async () => {
    const ids = await finished(store, 'e2e_bad', 2, 'complete');
    await age(ids, 31);
    for (const args of [
      ['archive', 'run', '--older-than', '5x'],
      ['archive', 'run', '--older-than', '10m'],
      ['archive', 'show', 'nope'],
      ['archive', 'restore'],
      ['archive', 'restore', '--day', '2026-13-40'],
    ]) {
      const r = await ax(args);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
    }
    const file = join(cwd, 'a-file');
    writeFileSync(file, 'x');
    const unusable = await ax(['archive', 'run', '--json'], {AX_ARCHIVE_DIR: join(file, 'sub')});
    expect(unusable.code).toBe(2);
    expect(unusable.json.error.message).toContain('cannot be used');
    expect(await hot(ids)).toBe(2);
    expect((await ax(['archive', 'show', '0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d'])).code).toBe(3);
    const help = await ax(['archive', 'run', '--help']);
    expect(help.stdout).toContain('EXAMPLES');
  });

  test('ax scheduler archives on its loop (AX_ARCHIVE_EVERY)', async () => {
    const ids = await finished(store, 'e2e_loop', 3, 'cancel');
    await age(ids, 31);
    const s = spawnAx(['scheduler'], {...env.env, AX_ARCHIVE_DIR: dir, AX_ARCHIVE_EVERY: '200ms', AX_ARCHIVE_PAUSE: '0'});
    try {
      await eventually(async () => (await hot(ids)) === 0, 20_000, 'the scheduler archived the cancelled tasks');
    } finally {
      s.child.kill('SIGTERM');
      await s.exited;
    }
    const show = await ax(['archive', 'show', ids[0]!, '--json']);
    expect(show.json.task).toMatchObject({state: 'cancelled'});
  });
});
