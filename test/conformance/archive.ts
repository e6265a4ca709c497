/**
 * Conformance of the archive seam (ArchiveStore, core/store/archive-types.ts): every method,
 * against any implementation. `age(ids, days)` must move the tasks' finish (and run/update) times
 * that many days into the past. Run by test/integration/archive.test.ts against MySQL.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {ArchivedTask, AxStore} from '../../src/core/store/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';

export interface ArchiveHarness {
  store: AxStore;
  other: AxStore;
  age(ids: string[], days: number): Promise<void>;
  dispose(): Promise<void>;
}

const newId = createIdGenerator(() => Date.now());
const DAY = 86_400_000;

/** Submits `n` tasks of `type` and runs them to `end` (or leaves them submitted). */
export async function finished(
  store: AxStore,
  type: string,
  n: number,
  end: 'complete' | 'deadLetter' | 'cancel' | 'none',
): Promise<string[]> {
  const tasks = Array.from({length: n}, (_, i) =>
    validateTaskSpec(
      {type, key: `tenant:${i}`, payload: {i, s: 'ü"\\\n'}},
      {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'},
      Date.now(),
      newId,
    ),
  );
  // Every other task submitted in a trace: its trace context is archived and restored with it.
  for (const [i, t] of tasks.entries())
    if (i % 2 === 0)
      t.trace = {traceparent: `00-0af7651916cd43dd8448eb211c80319c-${String(i + 1).padStart(16, '0')}-01`, tracestate: 'k=v'};
  await store.tasksInsert({tasks, actor: 'test:1'});
  const ids = tasks.map((t) => t.id);
  if (end === 'none') return ids;
  if (end === 'cancel') {
    for (const id of ids) await store.tasksCancel({id, actor: 'test:1', reason: 'test'});
    return ids;
  }
  const c = await store.tasksClaim({ids, worker: 'w:1', leaseMs: 30_000});
  const outcomes = c.claimed.map((t) =>
    end === 'complete' ? {kind: end, id: t.id, fence: t.fence} : {kind: end, id: t.id, fence: t.fence, error: 'boom'},
  );
  await store.outcomesApply({outcomes, actor: 'w:1'});
  return ids;
}

export function archiveStoreConformance(name: string, make: () => Promise<ArchiveHarness>): void {
  describe(`ArchiveStore conformance: ${name}`, () => {
    let h: ArchiveHarness;
    beforeAll(async () => {
      h = await make();
    });
    afterAll(async () => h?.dispose());

    it('archiveLock: one holder per cell; released, it can be taken again', async () => {
      const a = await h.store.archiveLock();
      expect(a).not.toBeNull();
      expect(await h.other.archiveLock()).toBeNull();
      await a!.release();
      const b = await h.other.archiveLock();
      expect(b).not.toBeNull();
      await b!.release();
    });

    it('archiveCount and archiveBatch take only finished rows older than the cutoff, with history, and delete them', async () => {
      const old = await finished(h.store, 'conf_old', 3, 'complete');
      const young = await finished(h.store, 'conf_young', 2, 'complete');
      const live = await finished(h.store, 'conf_live', 2, 'none');
      await h.age([...old, ...live], 40);
      const cutoff = new Date((await h.store.clockNow()).getTime() - 30 * DAY);
      expect(await h.store.archiveCount({finishedBefore: cutoff})).toEqual({succeeded: 3, dead: 0, cancelled: 0});
      const seen: ArchivedTask[] = [];
      const first = await h.store.archiveBatch({
        state: 'succeeded',
        finishedBefore: cutoff,
        after: null,
        limit: 2,
        write: async (t) => void seen.push(...t),
      });
      expect(first.deleted).toHaveLength(2);
      expect(first.next).not.toBeNull();
      const second = await h.store.archiveBatch({
        state: 'succeeded',
        finishedBefore: cutoff,
        after: first.next,
        limit: 2,
        write: async (t) => void seen.push(...t),
      });
      expect(second.next).toBeNull();
      expect(seen.map((t) => t.task.id).sort()).toEqual([...old].sort());
      expect(seen[0]!.history.map((x) => x.to_state)).toEqual(['succeeded']);
      // The submit is archived on the task row, the attempt's start on its row and on the task's:
      // the timeline stays whole.
      expect(seen[0]!.task).toMatchObject({submitted_by: 'test:1', created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/)});
      expect(seen[0]!.task.started_at).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(seen[0]!.history[0]).toMatchObject({from_state: 'running', started_at: seen[0]!.task.started_at});
      for (const id of old) expect(await h.store.tasksGet({id})).toBeNull();
      for (const id of [...young, ...live]) expect(await h.store.tasksGet({id})).not.toBeNull();
      expect(await h.store.historyList({taskId: old[0]!})).toEqual([]);

      // Restore round trip: the same rows come back; a second restore is refused.
      await h.store.archiveRestore({tasks: seen});
      const back = await h.store.tasksGet({id: old[0]!});
      expect(back).toMatchObject({state: 'succeeded', payload: {s: 'ü"\\\n'}});
      expect(await h.store.historyList({taskId: old[0]!})).toHaveLength(1);
      const one = seen[0]!;
      const restored = (await h.store.tasksGet({id: String(one.task.id)}))!;
      expect(restored.startedAt!.toISOString()).toBe(one.task.started_at as string);
      expect(restored.submittedBy).toBe('test:1');
      // The task key too (issue 25).
      expect(one.task.task_key).toMatch(/^tenant:\d$/);
      expect(restored.key).toBe(one.task.task_key);
      // And its trace context (issue 26): kept where there was one, absent where there was none.
      for (const a of seen) {
        const back = (await h.store.tasksGet({id: String(a.task.id)}))!;
        expect(back.trace ?? null).toEqual(a.task.traceparent === null ? null : {traceparent: a.task.traceparent, tracestate: 'k=v'});
      }
      expect(seen.some((a) => a.task.traceparent !== null)).toBe(true);
      const [attempt] = await h.store.historyList({taskId: String(one.task.id)});
      expect(attempt!.startedAt!.toISOString()).toBe(one.history[0]!.started_at as string);
      await expect(h.store.archiveRestore({tasks: seen.slice(0, 1)})).rejects.toMatchObject({code: 'conflict'});
    });

    it('archiveBatch deletes nothing when write throws', async () => {
      const ids = await finished(h.store, 'conf_throw', 2, 'deadLetter');
      await h.age(ids, 40);
      const cutoff = new Date((await h.store.clockNow()).getTime() - 30 * DAY);
      await expect(
        h.store.archiveBatch({
          state: 'dead',
          finishedBefore: cutoff,
          after: null,
          limit: 10,
          write: async () => Promise.reject(new Error('disk')),
        }),
      ).rejects.toThrow('disk');
      for (const id of ids) expect(await h.store.tasksGet({id})).not.toBeNull();
    });

    it('archiveDeleteArchived deletes rows still as archived, keeps changed ones, reports missing', async () => {
      const ids = await finished(h.store, 'conf_snap', 3, 'deadLetter');
      const rows = await Promise.all(ids.map((id) => h.store.tasksGet({id})));
      const snaps = rows.map((r) => ({id: r!.id, state: r!.state, updatedAt: r!.updatedAt.toISOString()}));
      // The second one changes after the snapshot (a replay).
      await h.store.deadReplay({ids: [ids[1]!], actor: 't', audit: {operator: 't', command: 'dlq replay', filter: {}, reason: null}});
      const res = await h.store.archiveDeleteArchived({rows: [...snaps, {id: newId(), state: 'dead', updatedAt: snaps[0]!.updatedAt}]});
      expect(res.deleted.sort()).toEqual([ids[0], ids[2]].sort());
      expect(res.movedOn).toEqual([ids[1]]);
      expect(res.missing).toHaveLength(1);
      expect(await h.store.tasksGet({id: ids[1]!})).toMatchObject({state: 'submitted'});
    });
  });
}
