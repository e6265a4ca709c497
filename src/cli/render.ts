/** Plain-text rendering shared by the commands' human output (the --json output is the data). */
import {isTaskId} from '../core/task/id.js';
import type {HistoryEntry, JsonObject, TaskRecord} from '../core/task/model.js';

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

/** One line: whitespace runs (newlines, tabs) as one space, control characters made harmless (see printable). */
export function oneLine(s: string | null): string {
  return s === null ? '' : printable(s.replace(/\s+/g, ' ').trim());
}

/** One line, cut to `max` characters with an ellipsis. */
export function clip(s: string | null, max: number): string {
  const one = oneLine(s);
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/** The terminal's width when stdout is a terminal; undefined for pipes and files (scripts get everything). */
export function terminalWidth(): number | undefined {
  return process.stdout.isTTY && process.stdout.columns > 0 ? process.stdout.columns : undefined;
}

/** The narrowest a shrunk column gets: room for a few characters and the ellipsis. */
const MIN_COLUMN = 8;

/**
 * Column widths that fit `width`: while the line is too long, the widest column that may be cut
 * (ties: the rightmost) gives up what is needed, down to MIN_COLUMN or its header. Columns in
 * `keep` never shrink. Returns the narrowest widths reached when even those do not fit (the
 * terminal then wraps the line: nothing kept is ever cut).
 */
function fitWidths(widths: number[], head: string[], keep: ReadonlySet<number>, indent: number, width: number): number[] {
  const out = [...widths];
  const total = (): number => indent + out.reduce((a, b) => a + b, 0) + 2 * Math.max(0, out.length - 1);
  for (let guard = 0; total() > width && guard < out.length * 2; guard++) {
    const floor = (i: number): number => Math.max(MIN_COLUMN, (head[i] ?? '').length);
    let widest = -1;
    out.forEach((w, i) => {
      if (!keep.has(i) && w > floor(i) && (widest < 0 || w >= (out[widest] as number))) widest = i;
    });
    if (widest < 0) break;
    out[widest] = Math.max(floor(widest), (out[widest] as number) - (total() - width));
  }
  return out;
}

/** A column whose every cell is a task id (or empty, or "-"): it is always kept whole. */
function isIdColumn(rows: string[][], i: number): boolean {
  const cells = rows.map((r) => r[i] ?? '').filter((c) => c !== '' && c !== '-');
  return cells.length > 0 && cells.every((c) => isTaskId(c));
}

/**
 * Columns two spaces apart; `right` lists the columns aligned right (numbers). On a terminal the
 * table fits its width: the widest columns are cut with "…" (see fitWidths), except the columns
 * that are never cut: those in `keep` (ids an operator copies: worker ids…), the right-aligned
 * numbers, and every column of task ids. When the kept columns alone are wider than the terminal,
 * the line is left longer and the terminal wraps it. Piped or redirected output (`width`
 * undefined) is never cut, so scripts and `| less -S` see every character: give the cells whole
 * (oneLine, not clip) and let the table cut them.
 */
export function table(
  head: string[],
  rows: string[][],
  opts: {right?: number[]; keep?: number[]; indent?: string; width?: number | undefined} = {},
): string[] {
  const all = [head, ...rows].map((r) => r.map((c) => printable(c).replace(/[\t\n]/g, ' ')));
  const natural = head.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  const width = 'width' in opts ? opts.width : terminalWidth();
  const right = new Set(opts.right ?? []);
  const keep = new Set([...(opts.keep ?? []), ...right, ...head.map((_, i) => i).filter((i) => isIdColumn(all.slice(1), i))]);
  const widths = width === undefined ? natural : fitWidths(natural, head, keep, (opts.indent ?? '').length, width);
  const cut = (c: string, w: number): string => (c.length > w ? `${c.slice(0, Math.max(0, w - 1))}…` : c);
  const fmt = (r: string[]): string =>
    (opts.indent ?? '') +
    r
      .map((c, i) => {
        const w = widths[i] ?? 0;
        return right.has(i) ? cut(c, w).padStart(w) : cut(c, w).padEnd(w);
      })
      .join('  ')
      .trimEnd();
  return all.map(fmt);
}

/** A task row for --json output: dates as ISO strings. */
export interface TaskJson extends Omit<
  TaskRecord,
  'runAt' | 'leaseUntil' | 'startedAt' | 'publishedAt' | 'createdAt' | 'updatedAt' | 'finishedAt' | 'progressAt'
> {
  runAt: string;
  leaseUntil: string | null;
  startedAt: string | null;
  publishedAt: string | null;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
  progressAt: string | null;
  payload: JsonObject;
}

/** A timeline entry for --json output: dates as ISO strings. */
export interface HistoryJson extends Omit<HistoryEntry, 'at' | 'startedAt'> {
  at: string;
  startedAt: string | null;
}

export function historyJson(h: HistoryEntry): HistoryJson {
  return {...h, at: h.at.toISOString(), startedAt: iso(h.startedAt)};
}

export function taskJson(t: TaskRecord): TaskJson {
  return {
    ...t,
    runAt: t.runAt.toISOString(),
    leaseUntil: iso(t.leaseUntil),
    startedAt: iso(t.startedAt),
    publishedAt: iso(t.publishedAt),
    createdAt: t.createdAt.toISOString(),
    updatedAt: t.updatedAt.toISOString(),
    finishedAt: iso(t.finishedAt),
    progressAt: iso(t.progressAt),
  };
}
