/**
 * The archive at the size, through the built CLI against the real MariaDB: 200,000 finished
 * tasks (one history row each: its attempt) older than the retention window, the archiver (`ax archive run`)
 * killed with SIGKILL mid-run, then run again: every task is in exactly one place afterwards (the
 * hot table or one complete archive part), by count and by a checksum over the rows, with all of
 * its history; pending, running and recently finished tasks are untouched.
 */
import {mkdtempSync, readdirSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {createHash} from 'node:crypto';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {decodeLine} from '../../src/core/archive/format.js';
import {DirectoryArchiveTarget} from '../../src/core/archive/files.js';
import type {AxStore} from '../../src/core/store/types.js';
import {finished} from '../conformance/archive.js';
import {createTestEnv, eventually, type TestEnv} from '../helpers/env.js';
import {runCli, spawnAx} from '../helpers/spawn.js';

const N = 200_000;
const DAY = 86_400_000;

let env: TestEnv;
let store: AxStore;
let cwd: string;
let dir: string;
const vars = () => ({...env.env, AX_ARCHIVE_DIR: dir, AX_ARCHIVE_PAUSE: '0', AX_ARCHIVE_BATCH: '2000'});

beforeAll(async () => {
  env = await createTestEnv();
  store = await env.store();
  cwd = mkdtempSync(join(tmpdir(), 'ax-e2e-archive-full-'));
  dir = join(cwd, 'cold');
});
afterAll(async () => {
  await env?.dispose();
  if (cwd) rmSync(cwd, {recursive: true, force: true});
});

/** Columns of a table, in order (so the copies below follow the schema, whatever its version), generated ones left out. */
async function columns(table: string): Promise<string[]> {
  const rows = await env.sql<{c: string}>(
    "SELECT column_name AS c FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? AND extra NOT LIKE '%GENERATED%' ORDER BY ordinal_position",
    [table],
  );
  return rows.map((r) => r.c);
}

/** The copied tasks still in the hot table, as the checksum reads them. */
async function hotRows(): Promise<Array<{id: string; state: string; updated: string}>> {
  const rows = await env.sql<{id: string; state: string; updated_at: Date}>(
    "SELECT id, state, updated_at FROM tasks WHERE type = 'full_archive'",
  );
  return rows.map((r) => ({id: r.id, state: r.state, updated: r.updated_at.toISOString()}));
}

/** A checksum of rows identified by id: SHA-256 over the sorted "id state updated_at" lines. */
const digest = (rows: Array<{id: string; state: string; updated: string}>): string =>
  createHash('sha256')
    .update(
      rows
        .map((r) => `${r.id} ${r.state} ${r.updated}`)
        .sort()
        .join('\n'),
    )
    .digest('hex');

describe('archive at full size', () => {
  test(
    '200k finished tasks, the archiver killed mid-run and run again: each task in exactly one place, with its history',
    {timeout: 600_000},
    async () => {
      // A template task (succeeded, with its history) copied 200,000 times by SQL with ids of 40 days
      // ago (UUIDv7 layout: the id's time is its creation day, as the archive's days are).
      const [template] = await finished(store, 'full_archive', 1, 'complete');
      const live = await finished(store, 'full_live', 3, 'none');
      const running = await finished(store, 'full_running', 1, 'none');
      await store.tasksClaim({ids: running, worker: 'w:1', leaseMs: 600_000});
      const recent = await finished(store, 'full_recent', 3, 'complete');
      const base = Date.now() - 40 * DAY;
      const taskCols = await columns('tasks');
      const idExpr = `CONCAT(SUBSTR(LPAD(HEX(${base} + s.seq DIV 100), 12, '0'), 1, 8), '-', SUBSTR(LPAD(HEX(${base} + s.seq DIV 100), 12, '0'), 9, 4), '-7000-8000-', LPAD(HEX(s.seq), 12, '0'))`;
      const pick = (c: string) =>
        c === 'id'
          ? `${idExpr}`
          : c === 'finished_at' || c === 'updated_at' || c === 'created_at' || c === 'run_at'
            ? `t.${c} - INTERVAL 40 DAY`
            : c === 'dedup_key'
              ? 'NULL'
              : `t.${c}`;
      await env.sql(
        `INSERT INTO tasks (${taskCols.join(', ')}) SELECT ${taskCols.map(pick).join(', ')} FROM tasks t JOIN seq_1_to_${N} s WHERE t.id = ?`,
        [template],
      );
      const histCols = (await columns('task_history')).filter((c) => c !== 'seq' && c !== 'id');
      const hpick = (c: string) => (c === 'task_id' ? idExpr : c === 'at' ? 'h.at - INTERVAL 40 DAY' : `h.${c}`);
      await env.sql(
        `INSERT INTO task_history (${histCols.join(', ')}) SELECT ${histCols.map(hpick).join(', ')} FROM task_history h JOIN seq_1_to_${N} s WHERE h.task_id = ?`,
        [template],
      );
      await env.sql('DELETE FROM task_history WHERE task_id = ?', [template]);
      await env.sql('DELETE FROM tasks WHERE id = ?', [template]);
      const historyPerTask =
        (
          await env.sql<{n: number}>(
            "SELECT COUNT(*) AS n FROM task_history h JOIN tasks t ON t.id = h.task_id WHERE t.type = 'full_archive' LIMIT 1",
          )
        )[0]!.n / N;
      // Its one attempt's row (the submit is the task row itself).
      expect(historyPerTask).toBe(1);
      const before = await hotRows();
      expect(before).toHaveLength(N);
      const untouched = [...live, ...running, ...recent];
      const untouchedBefore = await env.sql('SELECT id, state, attempt, updated_at FROM tasks WHERE id IN (?) ORDER BY id', [untouched]);

      // The archiver, killed with SIGKILL once it has committed some parts and deleted their rows.
      const first = spawnAx(['archive', 'run'], vars());
      await eventually(
        async () => Number((await env.sql<{n: number}>("SELECT COUNT(*) AS n FROM tasks WHERE type = 'full_archive'"))[0]!.n) < N - 10_000,
        240_000,
        'the archiver to delete some rows',
      );
      first.child.kill('SIGKILL');
      await first.exited;
      const afterKill = Number((await env.sql<{n: number}>("SELECT COUNT(*) AS n FROM tasks WHERE type = 'full_archive'"))[0]!.n);
      expect(afterKill).toBeGreaterThan(0);

      // The re-run finishes the job.
      const again = await runCli(['archive', 'run', '--json'], {cwd, env: vars()});
      expect(again.code, again.stderr).toBe(0);

      // Every task in exactly one place: the archive's complete parts (minus the ids a part excludes).
      const target = new DirectoryArchiveTarget(dir);
      const parts = await target.listParts({cell: 'default'});
      expect(parts.every((p) => p.status === 'complete')).toBe(true);
      const archived: Array<{id: string; state: string; updated: string}> = [];
      let history = 0;
      for (const p of parts) {
        const excluded = new Set(p.excludedIds);
        for (const line of await target.readPart(p)) {
          const t = decodeLine(line, p.part);
          if (excluded.has(String(t.task.id))) continue;
          archived.push({id: String(t.task.id), state: String(t.task.state), updated: new Date(String(t.task.updated_at)).toISOString()});
          history += t.history.length;
        }
      }
      const hot = await hotRows();
      const archivedIds = new Set(archived.map((r) => r.id));
      expect(archivedIds.size).toBe(archived.length); // nothing archived twice
      expect(hot.filter((r) => archivedIds.has(r.id))).toEqual([]); // nothing in both places
      expect(archived.length + hot.length).toBe(N);
      expect(hot).toEqual([]); // all of them were older than the window
      expect(digest([...archived, ...hot])).toBe(digest(before));
      expect(history).toBe(archived.length * historyPerTask);
      expect(
        Number(
          (
            await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM task_history h LEFT JOIN tasks t ON t.id = h.task_id WHERE t.id IS NULL')
          )[0]!.n,
        ),
      ).toBe(0);
      // No temporary file of the killed run is left behind once the re-run cleaned up.
      const leftovers = readdirSync(join(dir, 'default'), {recursive: true, encoding: 'utf8'}).filter((f) => f.endsWith('.tmp'));
      expect(leftovers).toEqual([]);
      // Pending, running and recently finished tasks untouched.
      expect(await env.sql('SELECT id, state, attempt, updated_at FROM tasks WHERE id IN (?) ORDER BY id', [untouched])).toEqual(
        untouchedBefore,
      );
      console.info(
        `[archive-full] ${N} tasks: ${N - afterKill} archived before the kill, ${archived.length} in ${parts.length} parts at the end, ${hot.length} left hot`,
      );
    },
  );
});
