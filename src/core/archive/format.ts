/**
 * The line format of archive files (docs/archive.md): one JSON object per task,
 * `{"task": {<tasks columns>}, "history": [{<task_history columns>}, …]}`, task first and `id` its
 * first key, so `grep '"id":"<id>"'` and `jq` find a task without parsing the whole file.
 */
import {AxError} from '../errors.js';
import type {ArchivedSnapshot, ArchivedTask} from '../store/archive-types.js';

const DAY_MS = 86_400_000;

/** The creation millisecond of a UUIDv7 id (its first 48 bits), or null for other ids (dedup-key ids are v8). */
export function idTime(id: string): number | null {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-7/.test(id)) return null;
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

/** YYYY-MM-DD (UTC) of an instant. */
export function utcDay(ms: number): string {
  return new Date(Math.floor(ms / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
}

/** The day a task is filed under: its id's day (UUIDv7), else its created_at day. */
export function dayOf(t: ArchivedTask): string {
  const ms = idTime(String(t.task.id));
  return utcDay(ms ?? Date.parse(String(t.task.created_at)));
}

/** One archive line. */
export function encodeLine(t: ArchivedTask): string {
  return JSON.stringify({task: t.task, history: t.history});
}

/** Parses one archive line; throws AxError('conflict') naming `where` when it is not one. */
export function decodeLine(line: string, where: string): ArchivedTask {
  try {
    const o = JSON.parse(line) as ArchivedTask;
    if (o && typeof o.task === 'object' && typeof o.task.id === 'string' && Array.isArray(o.history)) return o;
  } catch {
    // reported below
  }
  throw new AxError('conflict', `archive file ${where} holds a line that is not an archived task: refusing to use it`, {
    details: {file: where},
  });
}

/** What a recovery delete compares with the hot row. */
export function snapshotOf(t: ArchivedTask): ArchivedSnapshot {
  return {id: String(t.task.id), state: String(t.task.state), updatedAt: String(t.task.updated_at)};
}
