/**
 * The archive domain of the admin service over fakes: input is checked before anything is opened,
 * list and show read the archive without MySQL, restore is audited as the operator, and a run
 * takes its window and reports progress.
 */
import {describe, expect, test, vi} from 'vitest';
import {encodeLine, idTime, utcDay} from '../../src/core/archive/format.js';
import {ARCHIVE_FORMAT, type PartManifest} from '../../src/core/archive/target.js';
import {fakeAdmin} from '../helpers/admin.js';

const ID = '0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d';
const DAY = utcDay(idTime(ID) as number);
const archived = {task: {id: ID, type: 'a_b', state: 'succeeded'}, history: [{to_state: 'succeeded'}]};

function part(over: Partial<PartManifest> = {}): PartManifest {
  return {
    format: ARCHIVE_FORMAT,
    cell: 'default',
    day: DAY,
    part: 'p1',
    tasks: 1,
    history: 1,
    minId: ID,
    maxId: ID,
    bytes: 10,
    sha256: 'x',
    createdAt: '2026-01-01T00:00:00Z',
    status: 'complete',
    excludedIds: [],
    ...over,
  };
}

/** An archive holding ID in one complete part of its day. */
const archive = () => ({
  listParts: vi.fn(async () => [part()]),
  readPart: vi.fn(async () => [encodeLine(archived as never)]),
  saveManifest: vi.fn(async () => undefined),
});

describe('admin archive', () => {
  test('bad input is refused before anything is opened', async () => {
    const f = fakeAdmin({store: {}, archive: archive()});
    const a = f.admin.archive;
    for (const [call, message] of [
      [() => a.show('nope'), /is not a task id/],
      [() => a.restore({ids: [ID], day: DAY}), /not both/],
      [() => a.restore({}), /give the ids of archived tasks, or --day/],
      [() => a.restore({ids: [ID, 'nope']}), /not task ids \(lower-case UUIDs\): nope/],
      [() => a.restore({day: '2026-02-30'}), /is not a day/],
      [() => a.run({olderThan: 'soon'}), /--older-than/],
      [() => a.run({olderThan: '30m'}), /shorter than/],
    ] as Array<[() => Promise<unknown>, RegExp]>)
      await expect(call()).rejects.toMatchObject({code: 'invalid_input', message: expect.stringMatching(message)});
    expect(f.opened).toEqual([]);
  });

  test('list and show read the archive only, never MySQL', async () => {
    const f = fakeAdmin({store: {}, archive: archive()});
    expect(await f.admin.archive.list()).toEqual({
      location: '/archive',
      cell: 'default',
      days: [{day: DAY, parts: 1, tasks: 1, history: 1, bytes: 10, pending: 0}],
    });
    const found = await f.admin.archive.show(ID);
    expect(found.archived).toEqual(archived);
    expect(found.part.part).toBe('p1');
    expect(f.opened).toEqual(['archive']);
  });

  test('restore by ids puts the tasks back, audited as the operator, and excludes them from their part', async () => {
    const target = archive();
    const archiveRestore = vi.fn(async () => ({restored: [ID]}));
    const f = fakeAdmin({store: {archiveRestore}, archive: target});
    expect(await f.admin.archive.restore({ids: [ID, ID]})).toEqual({restored: [ID], parts: 1});
    expect(archiveRestore).toHaveBeenCalledWith({
      tasks: [archived],
      audit: {operator: 'op', command: 'archive restore', filter: {ids: [ID]}, reason: null},
    });
    expect(target.saveManifest).toHaveBeenCalledWith(expect.objectContaining({part: 'p1', excludedIds: [ID]}));
    expect(f.opened).toEqual(['store', 'archive']);
  });

  test('an unknown id is not_found and nothing is restored', async () => {
    const archiveRestore = vi.fn();
    const f = fakeAdmin({store: {archiveRestore}, archive: {...archive(), listParts: async () => []}});
    await expect(f.admin.archive.restore({ids: [ID]})).rejects.toMatchObject({code: 'not_found'});
    expect(archiveRestore).not.toHaveBeenCalled();
  });

  test('run: the window given (else AX_RETENTION), progress per state, the lock released', async () => {
    const now = new Date('2026-12-01T12:00:00Z');
    const release = vi.fn(async () => undefined);
    const archiveBatch = vi.fn(async () => ({deleted: [], next: null}));
    const store = {archiveLock: async () => ({release}), clockNow: async () => now, archiveBatch};
    const target = {checkWritable: vi.fn(async () => undefined), cleanup: async () => 0, listPending: async () => []};
    const f = fakeAdmin({store, archive: target});
    const progress: string[] = [];
    const r = await f.admin.archive.run({olderThan: '7d', onProgress: (p) => progress.push(p.state)});
    expect(r).toMatchObject({ran: true, dryRun: false, cutoff: new Date(now.getTime() - 7 * 86_400_000).toISOString()});
    expect(progress).toEqual(['succeeded', 'dead', 'cancelled']);
    expect(target.checkWritable).toHaveBeenCalled();
    expect(release).toHaveBeenCalled();
    expect(f.opened).toEqual(['store', 'archive']);

    const dry = fakeAdmin({store: {...store, archiveCount: async () => ({succeeded: 4, dead: 1, cancelled: 0})}, archive: target});
    const d = await dry.admin.archive.run({dryRun: true});
    expect(d).toMatchObject({dryRun: true, tasks: {succeeded: 4, dead: 1, cancelled: 0}});
    expect(d.cutoff).toBe(new Date(now.getTime() - dry.ctx.config.retentionMs).toISOString());
  });
});
