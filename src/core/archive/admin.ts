/**
 * `ax archive list | show | restore`: reading the cold storage of a cell. Only `complete` parts are
 * read (a `pending` one is finished by the next archive run), and lines in a part's `excludedIds`
 * are skipped (restored to, or still live in, the hot table). A corrupt file is refused with its
 * name (AxError('conflict')) before anything is restored.
 */
import {AxError, invalid} from '../errors.js';
import type {ArchivedTask, ArchiveStore} from '../store/archive-types.js';
import type {AuditContext} from '../store/types.js';
import {idTime, decodeLine, utcDay} from './format.js';
import type {ArchiveTarget, PartManifest} from './target.js';

export interface ArchiveDay {
  day: string;
  parts: number;
  /** Tasks archived (lines minus excluded). */
  tasks: number;
  history: number;
  bytes: number;
  /** Parts whose MySQL delete is not confirmed yet (finished by the next run). */
  pending: number;
}

/** Days of the cell's archive, oldest first. Reads manifests only. */
export async function listArchive(target: ArchiveTarget, cell: string): Promise<ArchiveDay[]> {
  const days = new Map<string, ArchiveDay>();
  for (const m of await target.listParts({cell})) {
    let d = days.get(m.day);
    if (!d) days.set(m.day, (d = {day: m.day, parts: 0, tasks: 0, history: 0, bytes: 0, pending: 0}));
    d.parts++;
    d.tasks += m.tasks - m.excludedIds.length;
    d.history += m.history;
    d.bytes += m.bytes;
    if (m.status === 'pending') d.pending++;
  }
  return [...days.values()];
}

export interface FoundArchived {
  archived: ArchivedTask;
  part: PartManifest;
}

const DAY_RE = /^\d{4}-\d{2}-\d{2}$/;

/** Throws invalid_input unless `day` is a real YYYY-MM-DD date. */
export function checkDay(day: string): void {
  const ms = Date.parse(`${day}T00:00:00Z`);
  if (!DAY_RE.test(day) || Number.isNaN(ms) || utcDay(ms) !== day) throw invalid(`"${day}" is not a day: use YYYY-MM-DD (UTC)`);
}

/**
 * Finds archived tasks by id. A UUIDv7 id names its day, so only that day's parts whose id range
 * holds it are read; other ids (dedup-key ids) are looked for in every day's id ranges. Returns the
 * ones found (missing ids are absent).
 */
export async function findArchived(target: ArchiveTarget, cell: string, ids: string[]): Promise<Map<string, FoundArchived>> {
  const found = new Map<string, FoundArchived>();
  const byPart = new Map<string, {m: PartManifest; ids: Set<string>}>();
  const all = new Map<string, PartManifest[]>();
  const partsOf = async (day?: string): Promise<PartManifest[]> => {
    const key = day ?? '*';
    let list = all.get(key);
    if (!list) all.set(key, (list = (await target.listParts({cell, ...(day ? {day} : {})})).filter((m) => m.status === 'complete')));
    return list;
  };
  for (const id of ids) {
    const ms = idTime(id);
    for (const m of await partsOf(ms === null ? undefined : utcDay(ms))) {
      if (id < m.minId || id > m.maxId || m.excludedIds.includes(id)) continue;
      const key = `${m.day}/${m.part}`;
      let e = byPart.get(key);
      if (!e) byPart.set(key, (e = {m, ids: new Set()}));
      e.ids.add(id);
    }
  }
  for (const {m, ids: want} of byPart.values()) {
    for (const line of await target.readPart(m)) {
      const start = line.indexOf('"id":"');
      const id = line.slice(start + 6, start + 42);
      if (!want.has(id) || found.has(id)) continue;
      found.set(id, {archived: decodeLine(line, `${m.day}/${m.part}`), part: m});
    }
  }
  return found;
}

/** One archived task by id; AxError('not_found') when no complete part holds it. */
export async function showArchived(target: ArchiveTarget, cell: string, id: string): Promise<FoundArchived> {
  const f = (await findArchived(target, cell, [id])).get(id);
  if (!f) throw new AxError('not_found', `task ${id} is not in the archive of cell "${cell}" (${target.location})`);
  return f;
}

/**
 * Where the archive holds task `id` (`day/part`), or null when it does not or cannot say (no
 * archive, an unreadable manifest or part): for pointing an operator at `ax archive show`, so it
 * never throws.
 */
export async function archivedAt(target: ArchiveTarget, cell: string, id: string): Promise<string | null> {
  try {
    const f = (await findArchived(target, cell, [id])).get(id);
    return f ? `${f.part.day}/${f.part.part}` : null;
  } catch {
    return null;
  }
}

export interface RestoreReport {
  restored: string[];
  parts: number;
}

/**
 * Puts archived tasks back into the hot table with their history, verbatim (e.g. to force-replay
 * one), then excludes them from their parts so each lives in one place. By ids: all or nothing, one
 * transaction (AxError('not_found') listing unknown ids, AxError('conflict') when one is still in
 * the hot table). By day: one transaction per part; every part is read and verified first.
 * With `audit`, each transaction writes its audit row (command `archive restore`).
 */
export async function restoreArchived(
  target: ArchiveTarget,
  store: Pick<ArchiveStore, 'archiveRestore'>,
  cell: string,
  sel: {ids: string[]} | {day: string},
  audit?: AuditContext,
): Promise<RestoreReport> {
  const audited = audit ? {audit} : {};
  const groups: Array<{m: PartManifest; tasks: ArchivedTask[]}> = [];
  if ('ids' in sel) {
    const found = await findArchived(target, cell, sel.ids);
    const missing = sel.ids.filter((id) => !found.has(id));
    if (missing.length > 0) throw new AxError('not_found', `not in the archive of cell "${cell}": ${missing.join(', ')}; nothing restored`);
    const tasks = sel.ids.map((id) => (found.get(id) as FoundArchived).archived);
    await store.archiveRestore({tasks, ...audited});
    const byPart = new Map<string, {m: PartManifest; ids: string[]}>();
    for (const id of sel.ids) {
      const f = found.get(id) as FoundArchived;
      const key = `${f.part.day}/${f.part.part}`;
      let e = byPart.get(key);
      if (!e) byPart.set(key, (e = {m: f.part, ids: []}));
      e.ids.push(id);
    }
    for (const {m, ids} of byPart.values()) await target.saveManifest({...m, excludedIds: [...m.excludedIds, ...ids]});
    return {restored: sel.ids, parts: byPart.size};
  }
  checkDay(sel.day);
  for (const m of await target.listParts({cell, day: sel.day})) {
    if (m.status !== 'complete') continue;
    const skip = new Set(m.excludedIds);
    const tasks = (await target.readPart(m)).map((l) => decodeLine(l, `${m.day}/${m.part}`)).filter((t) => !skip.has(String(t.task.id)));
    if (tasks.length > 0) groups.push({m, tasks});
  }
  if (groups.length === 0) throw new AxError('not_found', `no archived tasks for ${sel.day} in cell "${cell}" (${target.location})`);
  const restored: string[] = [];
  for (const {m, tasks} of groups) {
    const r = await store.archiveRestore({tasks, ...audited});
    await target.saveManifest({...m, excludedIds: [...m.excludedIds, ...r.restored]});
    restored.push(...r.restored);
  }
  return {restored, parts: groups.length};
}
