/**
 * A payload or error search over a window reads it by id ranges (tasks-search.ts) and must answer
 * exactly what the single statement over idx_tasks_created answers (tasksListQuery, run here as the
 * reference), on a table whose ids are not all v7s of their creation time: dedup-key ids (v8),
 * caller-chosen v4 ids, v7 ids made minutes before or after their row (beyond the margins), a v7
 * from another year, ties of created_at, and another cell's rows inside the id ranges.
 */
import {randomUUID} from 'node:crypto';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {ListFilter} from '../../src/core/store/types.js';
import type {AxStore} from '../../src/core/store/types.js';
import {tasksListQuery} from '../../src/core/store/mysql/inspect.js';
import {
  ID_SKEW_AFTER_MS,
  ID_SKEW_BEFORE_MS,
  SEARCH_PARALLELISM,
  searchSliceQueries,
  searchSlices,
  searchesByIdRange,
} from '../../src/core/store/mysql/tasks-search.js';
import {createIdGenerator, idFromDedupKey} from '../../src/core/task/id.js';
import {createTestEnv, type TestEnv} from '../helpers/env.js';
import {idsOfAllPages} from '../helpers/pages.js';

/** A v7 id made at `ms`. */
const v7At = (ms: number): string => createIdGenerator(() => ms)();

/** Rows: one every 600 ms going back from `now` (3.3 hours); every tenth shares its time with the one before. */
const N = 20_000;
const kinds = ['v8 dedup', 'v4 caller', 'v7 2 min early', 'v7 30 s late', 'v7 of 2020', 'v7 3 s early'] as const;

function idFor(i: number, createdMs: number): string {
  switch (i % 20) {
    case 0:
      return idFromDedupKey('default', `k${i}`);
    case 1:
      return randomUUID();
    case 2:
      return v7At(createdMs - 120_000);
    case 3:
      return v7At(createdMs + 30_000);
    case 4:
      return v7At(Date.UTC(2020, 0, 1) + i);
    case 5:
      return v7At(createdMs - 3_000);
    default:
      return v7At(createdMs);
  }
}

describe('task search by id ranges', () => {
  let env: TestEnv;
  let store: AxStore;
  let now: number;
  /** The id of row i (for the searches of one row of each kind). */
  const ids: string[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
    store = await env.store();
    now = (await env.sql<{now: Date}>('SELECT NOW(3) AS now'))[0]!.now.getTime();
    for (let from = 0; from < N; from += 1000) {
      const values: unknown[] = [];
      const rows: string[] = [];
      for (let i = from; i < from + 1000; i++) {
        const created = now - (i % 10 === 1 ? i - 1 : i) * 600;
        ids[i] = idFor(i, created);
        const state = i % 3 === 0 ? 'cancelled' : 'succeeded';
        rows.push("(?, 'default', 't', ?, 1, 5, ?, 'x', ?, ?, ?, ?)");
        values.push(
          ids[i],
          state,
          new Date(created),
          new Date(created),
          new Date(created),
          JSON.stringify({orderId: i, g: i % 13}),
          `boom ${i % 5}`,
        );
        // Another cell's twin, a v7 of the same time (inside the id ranges), matching every search.
        if (i % 7 === 0) {
          rows.push("(?, 'other', 't', 'succeeded', 1, 5, ?, 'x', ?, ?, ?, ?)");
          values.push(
            v7At(created),
            new Date(created),
            new Date(created),
            new Date(created),
            JSON.stringify({orderId: i, g: i % 13}),
            `boom ${i % 5}`,
          );
        }
      }
      await env.sql(
        `INSERT INTO tasks (id, cell, type, state, attempt, max_retries, run_at, content_hash, created_at, updated_at, payload, last_error) VALUES ${rows.join(', ')}`,
        values,
      );
    }
    await env.sql('ANALYZE TABLE tasks');
  });
  afterAll(async () => env?.dispose());

  /** The ids of the single-statement plan (idx_tasks_created read backwards), in its order. */
  const reference = async (f: ListFilter): Promise<string[]> => {
    const q = tasksListQuery('default', f, 'id');
    return (await env.sql<{id: string}>(q.sql, q.params)).map((r) => r.id);
  };
  const listed = async (f: ListFilter): Promise<string[]> => (await store.tasksList(f)).map((t) => t.id);

  it('answers what the single statement answers: same tasks, same order, every kind of id', async () => {
    const since = new Date(now - 3 * 3_600_000);
    const filters: ListFilter[] = [
      {since, payload: {path: '$.g', value: '5'}, limit: 1000},
      {since, payload: {path: '$.g', value: '5'}, limit: 50},
      {since, until: new Date(now - 3_600_000), payload: {path: '$.g', value: '5'}, limit: 1000},
      {since: new Date(now - 600_000), payload: {path: '$.g', value: '7'}, limit: 1000},
      {since, state: 'cancelled', errorContains: 'boom 3', limit: 1000},
      {since, type: 't', payload: {path: '$.g', value: '11'}, limit: 1000},
      {since, payload: {path: '$.g', value: 'none'}, limit: 50},
    ];
    for (const f of filters) {
      expect(searchesByIdRange(f)).toBe(true);
      const want = await reference(f);
      expect(await listed(f)).toEqual(want);
    }
    // The big window's matches include ids of every kind (and none of the other cell's).
    const all = new Set(await reference(filters[0]!));
    for (let k = 0; k < kinds.length; k++) {
      const i = [...Array(N).keys()].find((j) => j % 20 === k && j % 13 === 5 && j * 600 < 3 * 3_600_000)!;
      expect(all.has(ids[i]!), kinds[k]).toBe(true);
    }
  });

  it('finds a single task of each kind of id by its payload, whatever its id says of its time', async () => {
    const since = new Date(now - 3 * 3_600_000);
    for (let k = 0; k < kinds.length; k++) {
      const i = 9_000 + k; // created 90 minutes ago, in a middle slice
      const found = await store.tasksList({since, payload: {path: '$.orderId', value: String(i)}, limit: 50});
      expect(
        found.map((t) => t.id),
        kinds[k],
      ).toEqual([ids[i]]);
    }
  });

  it('keyset pages across slices, ties and the id-range bounds: every match once, in order', async () => {
    const since = new Date(now - 3 * 3_600_000);
    const f: ListFilter = {since, payload: {path: '$.g', value: '4'}, limit: 37};
    const want = await reference({...f, limit: 100_000});
    expect(want.length).toBeGreaterThan(500);
    const got = await idsOfAllPages(store, f);
    expect(got).toEqual(want);
    // A cursor on a tie (two tasks created in the same millisecond): the other one follows.
    const tie = 4_001; // created at the time of row 4,000
    const cursor = {createdAt: new Date(now - 4_000 * 600), id: [ids[4_000]!, ids[tie]!].sort()[1]!};
    const g = {since, payload: {path: '$.orderId', value: '4000'}, limit: 5, after: cursor};
    expect(await listed(g)).toEqual(await reference(g));
    expect(await listed({...g, payload: {path: '$.orderId', value: String(tie)}})).toEqual(
      await reference({...g, payload: {path: '$.orderId', value: String(tie)}}),
    );
  });

  it('slices the window newest first, doubling, covering it once; an open window is sized from now', () => {
    const since = new Date(now - 3_600_000);
    const open = searchSlices({since, limit: 50}, now);
    expect(open[0]!.to).toBeNull();
    expect(open.at(-1)!.from).toEqual(since);
    for (let i = 1; i < open.length; i++) {
      expect(open[i]!.to).toEqual(open[i - 1]!.from);
      expect(open[i]!.from.getTime()).toBeLessThan(open[i]!.to!.getTime());
    }
    // A cursor bounds the window above at its own millisecond (it is included, the cursor's SQL decides the tie).
    const after = {createdAt: new Date(now - 600_000), id: ids[0]!};
    const bounded = searchSlices({since, after, until: new Date(now), limit: 50}, now);
    expect(bounded[0]!.to!.getTime()).toBe(now - 600_000 + 1);
    // A window shorter than a slice is one slice.
    expect(searchSlices({since: new Date(now - 1000), limit: 50}, now)).toHaveLength(1);
    expect(ID_SKEW_BEFORE_MS).toBeGreaterThan(0);
    expect(ID_SKEW_AFTER_MS).toBeGreaterThan(0);
  });

  it("reads a slice's id range as contiguous pieces, newest first, that the ids outside it complement", () => {
    const f: ListFilter = {since: new Date(now - 3_600_000), payload: {path: '$.orderId', value: '1'}, limit: 50};
    const s = searchSlices(f, now).at(-1)!;
    const one = searchSliceQueries('default', f, 'id', s, now, 50);
    expect(one.inRange).toHaveLength(1);
    const [lo, hi] = one.inRange[0]!.params as [string, string];
    const q = searchSliceQueries('default', f, 'id', s, now, 50, SEARCH_PARALLELISM - 1);
    expect(q.inRange).toHaveLength(SEARCH_PARALLELISM - 1);
    const ranges = q.inRange.map((r) => r.params.slice(0, 2) as [string, string]).reverse();
    expect(ranges[0]![0]).toBe(lo);
    expect(ranges.at(-1)![1]).toBe(hi);
    for (let i = 1; i < ranges.length; i++) {
      expect(ranges[i]![0]).toBe(ranges[i - 1]![1]);
      expect(ranges[i]![0] < ranges[i]![1]).toBe(true);
    }
    // The ids outside are those below the first piece and from the end of the last (after cell, from, to).
    expect(s.to).not.toBeNull();
    expect(q.outside.params.slice(3, 5)).toEqual([lo, hi]);
  });

  it('keeps the single statement for filters that are not a text search over a window', () => {
    const since = new Date(now - 3_600_000);
    expect(searchesByIdRange({since, limit: 50})).toBe(false);
    expect(searchesByIdRange({since, type: 't', limit: 50})).toBe(false);
    expect(searchesByIdRange({payload: {path: '$.g', value: '1'}, until: new Date(now), limit: 50})).toBe(false);
    expect(searchesByIdRange({since, payload: {path: '$.g', value: '1'}, dedupKey: 'k', limit: 50})).toBe(false);
    expect(searchesByIdRange({since, payload: {path: '$.g', value: '1'}, state: 'dead', limit: 50})).toBe(false);
  });
});
