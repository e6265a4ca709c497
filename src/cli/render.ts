/** Plain-text rendering shared by the commands' human output (the --json output is the data). */
import type {JsonObject, TaskRecord} from '../core/task/model.js';

export const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

/** `2026-05-01 12:00:03.250` (UTC), or `-`; `seconds` drops the milliseconds. */
export function when(d: Date | null, opts: {seconds?: boolean} = {}): string {
  if (d === null) return '-';
  const s = d.toISOString().replace('T', ' ').replace('Z', '');
  return opts.seconds ? s.slice(0, 19) : s;
}

/**
 * Control characters (escape sequences, carriage returns…) and bidirectional overrides as
 * `\uFFFD`: row contents come from producers and must neither drive the operator's terminal nor
 * reorder what it shows.
 */
export function printable(s: string): string {
  return s.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, '\uFFFD');
}

/** One line, cut to `max` characters with an ellipsis. */
export function clip(s: string | null, max: number): string {
  if (s === null) return '';
  const one = printable(s.replace(/\s+/g, ' ').trim());
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/** Columns two spaces apart; `right` lists the columns aligned right (numbers). */
export function table(head: string[], rows: string[][], opts: {right?: number[]; indent?: string} = {}): string[] {
  const all = [head, ...rows].map((r) => r.map((c) => printable(c).replace(/[\t\n]/g, ' ')));
  const widths = head.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  const right = new Set(opts.right ?? []);
  const fmt = (r: string[]): string =>
    (opts.indent ?? '') +
    r
      .map((c, i) => (right.has(i) ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return all.map(fmt);
}

/** A task row for --json output: dates as ISO strings. */
export interface TaskJson extends Omit<TaskRecord, 'runAt' | 'leaseUntil' | 'publishedAt' | 'createdAt' | 'updatedAt' | 'finishedAt'> {
  runAt: string;
  leaseUntil: string | null;
  publishedAt: string | null;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
  payload: JsonObject;
}

export function taskJson(t: TaskRecord): TaskJson {
  return {
    ...t,
    runAt: t.runAt.toISOString(),
    leaseUntil: iso(t.leaseUntil),
    publishedAt: iso(t.publishedAt),
    createdAt: t.createdAt.toISOString(),
    updatedAt: t.updatedAt.toISOString(),
    finishedAt: iso(t.finishedAt),
  };
}
