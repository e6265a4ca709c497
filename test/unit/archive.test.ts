/**
 * The archive's pure parts and its directory target on a temporary directory: the day an id names,
 * the retention and day checks, atomic parts that verify on read, corrupt files refused by name,
 * and the cleanup of what an interrupted run leaves.
 */
import {mkdtemp, readdir, rm, writeFile} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterEach, beforeEach, describe, expect, it} from 'vitest';
import {checkDay} from '../../src/core/archive/admin.js';
import {checkRetention} from '../../src/core/archive/archiver.js';
import {DirectoryArchiveTarget} from '../../src/core/archive/files.js';
import {dayOf, decodeLine, encodeLine, idTime} from '../../src/core/archive/format.js';
import {createIdGenerator, idFromDedupKey} from '../../src/core/task/id.js';

describe('archive format', () => {
  it('a UUIDv7 id names its creation day; a dedup-key id (v8) falls back to created_at', () => {
    const at = Date.UTC(2026, 9, 30, 23, 59, 59, 999);
    const id = createIdGenerator(() => at)();
    expect(idTime(id)).toBe(at);
    expect(dayOf({task: {id, created_at: '2000-01-01T00:00:00.000Z'}, history: []})).toBe('2026-10-30');
    const v8 = idFromDedupKey('default', 'k');
    expect(idTime(v8)).toBeNull();
    expect(dayOf({task: {id: v8, created_at: '2026-11-02T10:00:00.000Z'}, history: []})).toBe('2026-11-02');
  });

  it('lines round-trip with id as the first key; a bad line is refused naming its file', () => {
    const t = {task: {id: 'x', payload: '{"a":"ü\\n"}'}, history: [{seq: 1}]};
    const line = encodeLine(t);
    expect(line.startsWith('{"task":{"id":"x"')).toBe(true);
    expect(decodeLine(line, 'f')).toEqual(t);
    expect(() => decodeLine('{"x":1}', 'day/part-1')).toThrow(/day\/part-1/);
  });

  it('refuses windows under 1h or under the retry cap, and impossible days', () => {
    expect(() => checkRetention(59 * 60_000, 1000)).toThrow(/shorter than 1h/);
    expect(() => checkRetention(2 * 3_600_000, 3 * 3_600_000)).toThrow(/AX_RETRY_MAX/);
    expect(() => checkRetention(30 * 86_400_000, 3_600_000)).not.toThrow();
    for (const d of ['2026-13-01', '2026-02-30', '26-01-01', 'today']) expect(() => checkDay(d)).toThrow(/not a day/);
    expect(() => checkDay('2024-02-29')).not.toThrow();
  });
});

describe('DirectoryArchiveTarget', () => {
  let dir: string;
  let target: DirectoryArchiveTarget;
  const meta = {tasks: 2, history: 0, minId: 'a', maxId: 'b', createdAt: '2026-12-01T00:00:00.000Z'};
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ax-target-'));
    target = new DirectoryArchiveTarget(dir);
  });
  afterEach(async () => rm(dir, {recursive: true, force: true}));

  it('writes a pending part that reads back verified; saveManifest marks it complete', async () => {
    const m = await target.writePart({cell: 'c1', day: '2026-10-30', lines: ['{"task":{"id":"a"}}', '{"task":{"id":"b"}}'], meta});
    expect(m).toMatchObject({status: 'pending', tasks: 2, cell: 'c1', day: '2026-10-30'});
    expect(await target.readPart(m)).toEqual(['{"task":{"id":"a"}}', '{"task":{"id":"b"}}']);
    expect((await target.listPending('c1')).map((x) => x.part)).toEqual([m.part]);
    await target.saveManifest({...m, status: 'complete'});
    expect((await target.listParts({cell: 'c1'})).map((x) => x.status)).toEqual(['complete']);
    expect(await target.listPending('c1')).toEqual([]);
    expect((await readdir(join(dir, 'c1', '2026-10-30'))).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('refuses a data file that does not match its manifest, naming it', async () => {
    const m = await target.writePart({cell: 'c1', day: '2026-10-30', lines: ['{}', '{}'], meta});
    const file = join(dir, 'c1', '2026-10-30', `${m.part}.ndjson.gz`);
    await writeFile(file, 'not gzip at all');
    await expect(target.readPart(m)).rejects.toMatchObject({code: 'conflict', message: expect.stringContaining(file)});
    await expect(target.readPart({...m, bytes: 15, sha256: 'x'})).rejects.toThrow(/checksum/);
  });

  it('cleanup removes temp files and data files without a manifest, never committed parts', async () => {
    const m = await target.writePart({cell: 'c1', day: '2026-10-30', lines: ['{}', '{}'], meta});
    const d = join(dir, 'c1', '2026-10-30');
    await writeFile(join(d, 'part-z.ndjson.gz.tmp'), 'x');
    await writeFile(join(d, 'part-y.ndjson.gz'), 'x');
    expect(await target.cleanup('c1')).toBe(2);
    expect((await readdir(d)).sort()).toEqual([`${m.part}.manifest.json`, `${m.part}.ndjson.gz`]);
  });

  it('checkWritable names an unusable directory', async () => {
    const file = join(dir, 'f');
    await writeFile(file, 'x');
    await expect(new DirectoryArchiveTarget(join(file, 'sub')).checkWritable()).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringContaining(join(file, 'sub')),
    });
  });
});
