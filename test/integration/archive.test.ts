/**
 * The archiver against the real MariaDB and a temporary archive directory: finished tasks older
 * than the window (finish time moved into the past by SQL) are archived with their history and
 * deleted; newer and live ones stay; an interrupted run is finished by the next with nothing lost
 * or doubled; two archivers at once → one works; show and restore round-trip; dry run and bad input
 * change nothing. Also runs the ArchiveStore conformance suite on MySQL.
 */
import {chmod, mkdtemp, rm, writeFile} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {createArchiver, createRuntime, openStore} from '../../src/compose.js';
import {loadConfig} from '../../src/core/config/config.js';
import {createLogger} from '../../src/core/log.js';
import {findArchived, listArchive, restoreArchived, showArchived} from '../../src/core/archive/admin.js';
import {DirectoryArchiveTarget} from '../../src/core/archive/files.js';
import type {ArchiveTarget} from '../../src/core/archive/target.js';
import type {AxStore} from '../../src/core/store/types.js';
import {archiveStoreConformance, finished} from '../conformance/archive.js';
import {createTestEnv, type TestEnv} from '../helpers/env.js';
import {mysqlStoreHarness} from '../helpers/mysql-harness.js';

const ageSql = (days: number) =>
  `UPDATE tasks SET finished_at = finished_at - INTERVAL ${days} DAY, run_at = run_at - INTERVAL ${days} DAY, updated_at = updated_at - INTERVAL ${days} DAY`;

archiveStoreConformance('MySQL', async () => {
  const {env, ...h} = await mysqlStoreHarness();
  return {...h, age: async (ids, days) => void (await env.sql(`${ageSql(days)} WHERE id IN (?)`, [ids]))};
});

describe('archiver', () => {
  let env: TestEnv;
  let store: AxStore;
  let dir: string;
  let target: ArchiveTarget;
  const hot = async () => (await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM tasks'))[0]!.n;
  const archivedIds = async () => {
    const out: string[] = [];
    for (const m of await target.listParts({cell: 'default'}))
      for (const l of await target.readPart(m)) {
        const id = (JSON.parse(l) as {task: {id: string}}).task.id;
        if (!m.excludedIds.includes(id)) out.push(id);
      }
    return out.sort();
  };

  beforeAll(async () => {
    env = await createTestEnv({archiveBatch: 7, archivePauseMs: 0});
    store = await env.store();
    dir = await mkdtemp(join(tmpdir(), 'ax-archive-'));
    target = new DirectoryArchiveTarget(dir);
  });
  afterAll(async () => {
    await env?.dispose();
    if (dir) await rm(dir, {recursive: true, force: true});
  });

  let old: string[] = [];
  let keep: string[] = [];

  it('archives finished tasks older than the window by finish time; newer, live and recently finished old tasks stay', async () => {
    const ok = await finished(store, 'arch_ok', 20, 'complete');
    const dead = await finished(store, 'arch_dead', 5, 'deadLetter');
    const gone = await finished(store, 'arch_cancel', 3, 'cancel');
    const live = await finished(store, 'arch_live', 4, 'none');
    const recent = await finished(store, 'arch_recent', 3, 'complete');
    // Created and due 40 days ago, finished yesterday: stays.
    const lateFinish = await finished(store, 'arch_late', 2, 'complete');
    old = [...ok, ...dead, ...gone];
    await env.sql(`${ageSql(40)} WHERE id IN (?)`, [[...old, ...live]]);
    await env.sql(
      'UPDATE tasks SET run_at = run_at - INTERVAL 40 DAY, created_at = created_at - INTERVAL 40 DAY, finished_at = finished_at - INTERVAL 1 DAY WHERE id IN (?)',
      [lateFinish],
    );
    keep = [...live, ...recent, ...lateFinish];
    const a = createArchiver(env.rt, store, target);

    const dry = await a.run({dryRun: true});
    expect(dry.tasks).toEqual({succeeded: 20, dead: 5, cancelled: 3});
    expect(await hot()).toBe(old.length + keep.length);
    expect(await target.listParts({cell: 'default'})).toEqual([]);

    const progress: number[] = [];
    const r = await a.run({onProgress: (p) => progress.push(p.archived)});
    expect(r).toMatchObject({ran: true, tasks: {succeeded: 20, dead: 5, cancelled: 3}, recovered: 0});
    // One history row per attempt (written with its outcome), a cancel's one; the submit is the task row.
    expect(r.history).toBe(20 + 5 + 3);
    expect(progress.length).toBeGreaterThan(3);
    expect(await archivedIds()).toEqual([...old].sort());
    expect((await env.sql<{id: string}>('SELECT id FROM tasks ORDER BY id')).map((x) => x.id)).toEqual([...keep].sort());
    expect((await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM task_history WHERE task_id IN (?)', [old]))[0]!.n).toBe(0);
    expect((await target.listParts({cell: 'default'})).every((m) => m.status === 'complete')).toBe(true);
    const days = await listArchive(target, 'default');
    expect(days.reduce((n, d) => n + d.tasks, 0)).toBe(old.length);

    // A second run finds nothing more.
    expect((await a.run()).tasks).toEqual({succeeded: 0, dead: 0, cancelled: 0});
  });

  it('walks rows of several types due at the same instant in (run_at, type, id) order: each archived once', async () => {
    const ids = [
      ...(await finished(store, 'arch_tie_b', 9, 'complete')),
      ...(await finished(store, 'arch_tie_a', 9, 'complete')),
      ...(await finished(store, 'arch_tie_c', 9, 'complete')),
    ];
    // One run_at for all 27 (batches of 7 end inside a type and between types), finished long ago.
    await env.sql(`${ageSql(40)} WHERE id IN (?)`, [ids]);
    await env.sql('UPDATE tasks SET run_at = (SELECT MIN(t.run_at) FROM (SELECT run_at FROM tasks WHERE id IN (?)) t) WHERE id IN (?)', [
      ids,
      ids,
    ]);
    const r = await createArchiver(env.rt, store, target).run();
    expect(r.tasks.succeeded).toBe(ids.length);
    const archived = (await archivedIds()).filter((id) => ids.includes(id));
    expect(archived).toEqual([...ids].sort());
    expect((await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM tasks WHERE id IN (?)', [ids]))[0]!.n).toBe(0);
  });

  it('show finds an archived task by id; restore round-trips it byte for byte and refuses a second time', async () => {
    const id = old[0]!;
    const f = await showArchived(target, 'default', id);
    expect(f.archived.task).toMatchObject({id, state: 'succeeded', type: 'arch_ok'});
    await expect(showArchived(target, 'default', '0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d')).rejects.toMatchObject({code: 'not_found'});
    const r = await restoreArchived(target, store, 'default', {ids: [id]});
    expect(r.restored).toEqual([id]);
    const row = (await env.sql<Record<string, unknown>>('SELECT payload, state FROM tasks WHERE id = ?', [id]))[0]!;
    expect(row.payload).toBe(f.archived.task.payload);
    expect(await store.historyList({taskId: id})).toHaveLength(1);
    // Now in the hot table only.
    expect((await findArchived(target, 'default', [id])).size).toBe(0);
    await expect(restoreArchived(target, store, 'default', {ids: [id, old[1]!]})).rejects.toMatchObject({code: 'not_found'});
    expect(await store.tasksGet({id: old[1]!})).toBeNull();
    // Archive it again later: it is in exactly one place.
    await env.sql(`${ageSql(40)} WHERE id = ?`, [id]);
    await createArchiver(env.rt, store, target).run();
    expect((await archivedIds()).filter((x) => x === id)).toHaveLength(1);
  });

  it('an injected failure between write and delete: nothing deleted, the re-run completes without duplicates', async () => {
    const ids = await finished(store, 'arch_crash', 10, 'complete');
    await env.sql(`${ageSql(40)} WHERE id IN (?)`, [ids]);
    const before = await archivedIds();
    // The target fails after the parts were written and verified: the batch rolls back.
    let calls = 0;
    const failing: ArchiveTarget = Object.assign(Object.create(target) as ArchiveTarget, {
      readPart: async (m: Parameters<ArchiveTarget['readPart']>[0]) => {
        if (++calls === 2) throw new Error('injected');
        return target.readPart(m);
      },
    });
    await expect(createArchiver(env.rt, store, failing).run()).rejects.toThrow('injected');
    expect((await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM tasks WHERE id IN (?)', [ids]))[0]!.n).toBeGreaterThan(0);
    await createArchiver(env.rt, store, target).run();
    const after = await archivedIds();
    expect(after).toEqual([...before, ...ids].sort());
    expect(new Set(after).size).toBe(after.length);
  });

  it('a batch whose parts take longer to write than AX_DB_IDLE_TX_TIMEOUT still commits: its transaction waits on its files by design', async () => {
    const config = loadConfig({env: {...env.env, AX_DB_IDLE_TX_TIMEOUT: '1s'}, cwd: '/nonexistent'});
    const slow = await openStore(createRuntime(config, createLogger('error')));
    try {
      const ids = await finished(slow, 'arch_slow', 3, 'complete');
      await env.sql(`${ageSql(40)} WHERE id IN (?)`, [ids]);
      const res = await slow.archiveBatch({
        state: 'succeeded',
        finishedBefore: new Date(Date.now() - 30 * 86_400_000),
        after: null,
        limit: 100,
        // A slow target: the session is idle in its transaction for longer than its timeout.
        write: () => new Promise((r) => setTimeout(r, 2500)),
      });
      expect([...res.deleted].sort()).toEqual([...ids].sort());
      expect(await env.sql('SELECT id FROM tasks WHERE id IN (?)', [ids])).toEqual([]);
    } finally {
      await slow.close();
    }
  });

  it('a crash after the part was committed but before the delete: the next run deletes the rows once', async () => {
    const ids = await finished(store, 'arch_kill', 4, 'deadLetter');
    await env.sql(`${ageSql(40)} WHERE id IN (?)`, [ids]);
    // What a run killed between the manifest rename and the DELETE leaves: a pending part, rows in MySQL.
    const rows = (await env.sql<Record<string, unknown>>('SELECT id FROM tasks WHERE id IN (?)', [ids])).length;
    expect(rows).toBe(4);
    const lines: string[] = [];
    await store
      .archiveBatch({
        state: 'dead',
        finishedBefore: new Date(Date.now() - 30 * 86_400_000),
        after: null,
        limit: 100,
        write: async (tasks) => {
          const {encodeLine, dayOf} = await import('../../src/core/archive/format.js');
          const sorted = tasks.map((t) => String(t.task.id)).sort();
          await target.writePart({
            cell: 'default',
            day: dayOf(tasks[0]!),
            lines: tasks.map(encodeLine),
            meta: {
              tasks: tasks.length,
              history: tasks.reduce((n, t) => n + t.history.length, 0),
              minId: sorted[0]!,
              maxId: sorted.at(-1)!,
              createdAt: new Date().toISOString(),
            },
          });
          lines.push(...tasks.map(encodeLine));
          throw new Error('killed');
        },
      })
      .catch(() => undefined);
    // A stray temp file of the dead process too.
    const day = (await target.listParts({cell: 'default'})).find((m) => m.status === 'pending')!.day;
    await writeFile(join(dir, 'default', day, 'part-x.ndjson.gz.tmp'), 'half');
    expect((await env.sql('SELECT id FROM tasks WHERE id IN (?)', [ids])).length).toBe(4);
    const before = await archivedIds();
    const r = await createArchiver(env.rt, store, target).run();
    expect(r.recovered).toBe(4);
    expect(r.cleaned).toBe(1);
    expect((await env.sql('SELECT id FROM tasks WHERE id IN (?)', [ids])).length).toBe(0);
    const after = await archivedIds();
    expect(after.length).toBe(new Set(after).size);
    expect(after.filter((x) => ids.includes(x)).sort()).toEqual([...ids].sort());
    expect(before.filter((x) => ids.includes(x))).toHaveLength(4); // the pending part already held them
  });

  it('two archivers at once: one works, the other does nothing', async () => {
    const ids = await finished(store, 'arch_two', 10, 'complete');
    await env.sql(`${ageSql(40)} WHERE id IN (?)`, [ids]);
    const other = await env.store();
    const [a, b] = await Promise.all([createArchiver(env.rt, store, target).run(), createArchiver(env.rt, other, target).run()]);
    expect([a.ran, b.ran].sort()).toEqual([false, true]);
    expect((a.ran ? a : b).tasks.succeeded).toBe(10);
    const all = await archivedIds();
    expect(all.length).toBe(new Set(all).size);
  });

  it('bad input changes nothing: a short window, an unusable directory, unknown ids, a corrupt file', async () => {
    const ids = await finished(store, 'arch_bad', 2, 'complete');
    await env.sql(`${ageSql(40)} WHERE id IN (?)`, [ids]);
    const a = createArchiver(env.rt, store, target);
    await expect(a.run({olderThanMs: 60_000})).rejects.toMatchObject({code: 'invalid_input'});
    const file = join(dir, 'not-a-dir');
    await writeFile(file, 'x');
    await expect(createArchiver(env.rt, store, new DirectoryArchiveTarget(join(file, 'sub'))).run()).rejects.toMatchObject({
      code: 'invalid_input',
    });
    if (process.getuid?.() !== 0) {
      const ro = await mkdtemp(join(tmpdir(), 'ax-ro-'));
      await chmod(ro, 0o500);
      await expect(createArchiver(env.rt, store, new DirectoryArchiveTarget(ro)).run()).rejects.toMatchObject({code: 'invalid_input'});
    }
    expect((await env.sql('SELECT id FROM tasks WHERE id IN (?)', [ids])).length).toBe(2);
    // A corrupt part: show and restore name the file and refuse.
    const m = (await target.listParts({cell: 'default'}))[0]!;
    const victim = (await target.readPart(m))
      .map((l) => (JSON.parse(l) as {task: {id: string}}).task.id)
      .find((x) => !m.excludedIds.includes(x))!;
    await writeFile(join(dir, 'default', m.day, `${m.part}.ndjson.gz`), 'garbage');
    await expect(showArchived(target, 'default', victim)).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringContaining(m.part),
    });
    await expect(restoreArchived(target, store, 'default', {day: m.day})).rejects.toMatchObject({code: 'conflict'});
    expect(await store.tasksGet({id: victim})).toBeNull();
  });
});
