/**
 * The orders of `ax top`'s type table: by any column, either direction (`--sort` and the `s`/`S`
 * keys). Pure. Ties and unknown values ("—") go last, then by type name, so the order is stable
 * from one refresh to the next.
 */
import {invalid} from '../errors.js';

/** What the sort reads of a row (TopTypeRow has all of it). */
export interface SortableRow {
  type: string;
  due: number;
  delayed: number;
  parked: number | null;
  running: number;
  rate: number | null;
  failurePct: number | null;
  p95Ms: number | null;
  breaker: 'closed' | 'open' | 'half-open' | null;
  paused: boolean | null;
  dead: number;
}

/** The sortable columns, by the name the table heads them with (lower case), in table order. */
export const SORT_COLUMNS = ['type', 'due', 'delay', 'parked', 'run', 'rate', 'fail', 'p95', 'brk', 'pause', 'dead'] as const;
export type SortColumn = (typeof SORT_COLUMNS)[number];

export interface TopSort {
  column: SortColumn;
  desc: boolean;
}

/** The default: by type name, A to Z. */
export const DEFAULT_SORT: TopSort = {column: 'type', desc: false};

const BREAKER_RANK = {closed: 0, 'half-open': 1, open: 2} as const;

function value(r: SortableRow, c: SortColumn): number | string | null {
  switch (c) {
    case 'type':
      return r.type;
    case 'due':
      return r.due;
    case 'delay':
      return r.delayed;
    case 'parked':
      return r.parked;
    case 'run':
      return r.running;
    case 'rate':
      return r.rate;
    case 'fail':
      return r.failurePct;
    case 'p95':
      return r.p95Ms;
    case 'brk':
      return r.breaker === null ? null : BREAKER_RANK[r.breaker];
    case 'pause':
      return r.paused === null ? null : r.paused ? 1 : 0;
    case 'dead':
      return r.dead;
  }
}

/** The rows in the order of `sort` (a new array). */
export function sortRows<T extends SortableRow>(rows: readonly T[], sort: TopSort): T[] {
  const dir = sort.desc ? -1 : 1;
  return [...rows].sort((a, b) => {
    const x = value(a, sort.column);
    const y = value(b, sort.column);
    if (x !== y) {
      if (x === null) return 1;
      if (y === null) return -1;
      const c = typeof x === 'string' ? x.localeCompare(y as string) : x - (y as number);
      if (c !== 0) return c * dir;
    }
    return a.type.localeCompare(b.type);
  });
}

/**
 * Parses `--sort`: a column name (case-insensitive), optionally `:asc` or `:desc`. Without a
 * direction, numbers sort largest first and the type name A to Z. Throws invalid_input naming the
 * valid columns.
 */
export function parseSort(text: string): TopSort {
  const [name = '', dir, ...rest] = text.trim().toLowerCase().split(':');
  const column = SORT_COLUMNS.find((c) => c === name);
  if (column === undefined || rest.length > 0)
    throw invalid(`sort "${text}" is not a column: use one of ${SORT_COLUMNS.join(', ')} (optionally with :asc or :desc)`);
  if (dir !== undefined && dir !== 'asc' && dir !== 'desc') throw invalid(`sort direction "${dir}" is neither asc nor desc`);
  return {column, desc: dir === undefined ? column !== 'type' : dir === 'desc'};
}

/** The next column in table order (after `dead`, back to `type`), in its default direction. */
export function nextSort(s: TopSort): TopSort {
  const column = SORT_COLUMNS[(SORT_COLUMNS.indexOf(s.column) + 1) % SORT_COLUMNS.length]!;
  return {column, desc: column !== 'type'};
}

/** How the sort is named on screen: `due↓`. */
export const sortLabel = (s: TopSort): string => `${s.column}${s.desc ? '↓' : '↑'}`;
