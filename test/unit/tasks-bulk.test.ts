/**
 * Bulk actions on tasks over fakes: a filter is resolved through the keyset pages of the task
 * search up to MAX_BULK (and refused past it), counted per state and action, and a cancel runs in
 * batches of CANCEL_BATCH whose running attempts are announced.
 */
import {describe, expect, test, vi} from 'vitest';
import {CANCEL_BATCH} from '../../src/core/inspect/cancel-many.js';
import {countBulk, MAX_BULK, parseBulk, resolveBulk, runBulkCancel} from '../../src/core/inspect/bulk.js';
import type {CancelledTask, ListFilter, TaskRef, TasksCancelIdsParams} from '../../src/core/store/types.js';
import type {TaskState} from '../../src/core/task/state.js';

const NOW = Date.parse('2026-12-01T12:00:00Z');
const id = (n: number): string => `0190f1c2-7d3e-7a41-9b2c-${n.toString(16).padStart(12, '0')}`;

/** `n` tasks, newest first, five to a creation time (equal times are where a cursor must hold). */
function refs(n: number, state: (i: number) => TaskState = () => 'submitted'): TaskRef[] {
  return Array.from({length: n}, (_, i) => ({id: id(n - i), state: state(i), createdAt: new Date(NOW - Math.floor(i / 5) * 1000)}));
}

/** A store whose tasksListRefs pages `all` by the keyset as MySQL does. */
function pagingStore(all: TaskRef[]) {
  const tasksListRefs = vi.fn(async (f: ListFilter) => {
    const from = f.after
      ? all.findIndex(
          (r) => r.createdAt < f.after!.createdAt || (r.createdAt.getTime() === f.after!.createdAt.getTime() && r.id < f.after!.id),
        )
      : 0;
    return from < 0 ? [] : all.slice(from, from + f.limit);
  });
  return {tasksListRefs, tasksGetMany: vi.fn()};
}

describe('bulk actions', () => {
  test('a filter is read page after page with the last task as the cursor: every match once', async () => {
    const all = refs(2503, (i) => (i % 3 === 0 ? 'dead' : 'submitted'));
    const store = pagingStore(all);
    const sel = parseBulk({action: 'replay', filter: {type: 'order_notify', since: '1d'}}, NOW);
    const got = await resolveBulk(store, sel);
    expect(got.tasks.map((r) => r.id)).toEqual(all.map((r) => r.id));
    expect(store.tasksListRefs).toHaveBeenCalledTimes(3);
    expect(store.tasksListRefs.mock.calls[0]![0]).toMatchObject({type: 'order_notify', limit: 1000, since: new Date(NOW - 86_400_000)});
    const c = countBulk('replay', got);
    expect(c).toMatchObject({matched: 2503, actionable: 835, unknown: 0, byState: {dead: 835, submitted: 1668}});
    expect(c.ids).toEqual(all.filter((r) => r.state === 'dead').map((r) => r.id));
    expect(countBulk('cancel', got)).toMatchObject({actionable: 1668});
  });

  test('a filter matching more than MAX_BULK tasks is refused, naming the limit; exactly MAX_BULK is taken', async () => {
    const sel = parseBulk({action: 'cancel', filter: {}}, NOW);
    await expect(resolveBulk(pagingStore(refs(MAX_BULK + 1)), sel)).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/more than 10000 tasks: narrow it/),
      details: {limit: MAX_BULK},
    });
    const exact = pagingStore(refs(MAX_BULK));
    expect((await resolveBulk(exact, sel)).tasks).toHaveLength(MAX_BULK);
    // The last page asks for one more than the limit needs, to tell "exactly" from "more".
    expect(exact.tasksListRefs.mock.calls.at(-1)![0].limit).toBe(1);
  });

  test('named ids: the ones that exist, and how many do not', async () => {
    const tasksGetMany = vi.fn(async () => [{id: id(1), state: 'running', createdAt: new Date(NOW)}]);
    const sel = parseBulk({action: 'cancel', ids: [id(1), id(2), id(1)]}, NOW);
    const got = await resolveBulk({tasksGetMany, tasksListRefs: vi.fn()} as never, sel);
    expect(tasksGetMany).toHaveBeenCalledWith({ids: [id(1), id(2)]});
    expect(countBulk('cancel', got)).toEqual({matched: 1, byState: {running: 1}, actionable: 1, unknown: 1, ids: [id(1)]});
  });

  test('a cancel runs in batches, each audited with its filter; running attempts are announced; what moved is skipped', async () => {
    const ids = Array.from({length: CANCEL_BATCH + 2}, (_, i) => id(i + 1));
    const tasksCancelIds = vi.fn(async (p: TasksCancelIdsParams): Promise<CancelledTask[]> =>
      // The first of each batch has moved on; the second runs.
      p.ids
        .slice(1)
        .map((x, i) =>
          i === 0 ? {id: x, from: 'running', stopped: {id: x, fence: 4, attempt: 1, worker: 'w'}} : {id: x, from: 'submitted'},
        ),
    );
    const publishControl = vi.fn(async () => undefined);
    const r = await runBulkCancel({tasksCancelIds}, ids, {
      selected: ids.length + 3,
      actor: 'host:1',
      operator: 'web:alice@127.0.0.1',
      reason: 'retired',
      command: 'web tasks bulk cancel',
      filter: (batch) => ({ids: batch}),
      notifier: {publishControl},
    });
    expect(tasksCancelIds).toHaveBeenCalledTimes(2);
    expect(tasksCancelIds.mock.calls[1]![0]).toEqual({
      ids: ids.slice(CANCEL_BATCH),
      actor: 'host:1',
      reason: 'retired',
      audit: {operator: 'web:alice@127.0.0.1', command: 'web tasks bulk cancel', filter: {ids: ids.slice(CANCEL_BATCH)}, reason: 'retired'},
    });
    expect(r).toEqual({
      action: 'cancel',
      done: ids.length - 2,
      skipped: 5,
      byState: {running: 2, submitted: ids.length - 4},
      notified: true,
    });
    expect(publishControl).toHaveBeenCalledTimes(2);
  });
});
