/**
 * A text search (a payload field, an error substring) over a window of creation times, read by
 * ranges of the primary key instead of a row lookup per entry of idx_tasks_created.
 *
 * Why: such a filter must read every row of the window (`JSON_VALUE` of the payload, `LIKE` on
 * the last error), and reading them through idx_tasks_created costs a random clustered-index lookup
 * per entry — from disk once the window outgrows the buffer pool (docs/benchmarks.md, P11). ax's
 * ids are UUIDv7s of their producer's clock (task/id.ts), so the rows of a window sit, in the main,
 * in one range of the clustered index, which reads page after page.
 *
 * Exact whatever the ids are: ids are only a way to reach the rows. The window is cut into slices of
 * creation time, newest first; each slice is read by statements whose union is exactly the slice's
 * rows:
 *   - `inRange`: the primary-key range (read as one or more pieces) of the ids a v7 generator makes over the
 *     slice, widened by ID_SKEW_BEFORE_MS below and ID_SKEW_AFTER_MS above, with every condition of the filter (the
 *     creation-time bounds included), so a row of another time whose id falls in the range is left out;
 *   - `outside`: the slice's entries of idx_tasks_created (index-only: the entry holds the id) whose id
 *     is outside that range, each then read by primary key — the caller-chosen ids (any lower-case
 *     UUID), the dedup-key ids (version 8, no time in them) and v7 ids made further from their row's
 *     created_at (the database's clock) than the margins allow (a skewed producer clock, an outbox row
 *     relayed late).
 * So the rule is: any id is found; a row whose id is not a v7 of its creation time (± the margins)
 * costs one primary-key lookup, as every row did before. Each statement is sorted and limited like
 * tasksListQuery's; the slices go newest first and stop once the page is full, so a frequent match
 * reads the newest slices only, and a rare one the whole window once (plus the margins' overlap).
 *
 * A slice's statements run at once, SEARCH_PARALLELISM of them: its id range cut into that many
 * less one pieces of equal time, and the ids outside. One statement reads its pages one after another
 * and waits for each; over P11's hour (1M rows, 250 MB, a 128 MiB buffer pool) the id range read as
 * one statement took 1.3 s and as eight at once 0.5–0.65 s, both cores then busy. The whole search
 * is then bound by the CPU that reads the rows and their JSON: six statements a slice against three
 * measured 1.10 against 1.13 s for a rare match, but 62–93 against 102–165 ms for a frequent one
 * (docs/benchmarks.md). A statement's error rejects the search with it, once the slice's other
 * statements have ended; nothing is written.
 *
 * Used when searchesByIdRange(f): a payload or error filter with `since`, no dedup key, a state of
 * the piling set (or none). Other filters keep tasksListQuery (idx_tasks_created read backwards,
 * which stops early when the matches are common).
 */
import type {ListFilter} from '../types.js';
import {v7PrefixAt} from '../../task/id.js';
import {type Db, type Row, select} from './db.js';
import {PILING_STATES, listWhere} from './list-filter.js';

/** How much earlier than its row's created_at an id may be made and still be found in the id range (the producer's buffer, the outbox relay). */
export const ID_SKEW_BEFORE_MS = 5_000;
/** How much later (a producer clock ahead of the database's). */
export const ID_SKEW_AFTER_MS = 1_000;
/** The newest slice is this fraction of the window (then each slice doubles): a page of frequent matches reads little. */
const FIRST_SLICE_FRACTION = 1 / 64;
/** …and at least this long, so that the margins stay small beside a slice. */
const MIN_SLICE_MS = 60_000;
/** Statements of a slice at once, of the pool's connections (10 by default): see the module comment. */
export const SEARCH_PARALLELISM = 6;

/** Whether tasksList reads `f` by id ranges (tasksSearch) rather than tasksListQuery. */
export function searchesByIdRange(f: ListFilter): boolean {
  return (
    f.since !== undefined &&
    (f.payload !== undefined || f.errorContains !== undefined) &&
    f.dedupKey === undefined &&
    PILING_STATES.includes(f.state)
  );
}

/** Creation times [from, to) of one slice; `to` null: no upper bound (the newest slice of a window open above). */
export interface Slice {
  from: Date;
  to: Date | null;
}

/**
 * The slices of `f`'s window, newest first: from its upper bound (until, the cursor's time + 1 ms,
 * else open above, sized from `nowMs`) down to `since`; the newest FIRST_SLICE_FRACTION of the
 * window (at least MIN_SLICE_MS), each next one twice as long. Requires `f.since`.
 */
export function searchSlices(f: ListFilter, nowMs: number): Slice[] {
  const since = (f.since as Date).getTime();
  const bounds = [f.until?.getTime(), f.after ? f.after.createdAt.getTime() + 1 : undefined].filter((x): x is number => x !== undefined);
  const top = bounds.length > 0 ? Math.min(...bounds) : null;
  const sizeFrom = top ?? nowMs;
  const slices: Slice[] = [];
  let width = Math.max((sizeFrom - since) * FIRST_SLICE_FRACTION, MIN_SLICE_MS);
  let to: number | null = top;
  for (let at = sizeFrom - width; at > since; at -= width) {
    slices.push({from: new Date(at), to: to === null ? null : new Date(to)});
    to = at;
    width *= 2;
  }
  slices.push({from: new Date(since), to: to === null ? null : new Date(to)});
  return slices;
}

/**
 * The statements of a slice (explain.test.ts checks their plans): its id range cut into `pieces`
 * ranges of equal time (at least 1), and the ids outside that range. Params bound; `limit` rows each.
 */
export function searchSliceQueries(
  cell: string,
  f: ListFilter,
  columns: string,
  s: Slice,
  nowMs: number,
  limit: number,
  pieces = 1,
): {inRange: Array<{sql: string; params: unknown[]}>; outside: {sql: string; params: unknown[]}} {
  const where = listWhere(cell, f);
  const loMs = s.from.getTime() - ID_SKEW_BEFORE_MS;
  const hiMs = (s.to?.getTime() ?? nowMs) + ID_SKEW_AFTER_MS + 1;
  const n = Math.max(1, Math.floor(pieces));
  const cuts = Array.from({length: n + 1}, (_, i) => v7PrefixAt(i === n ? hiMs : Math.floor(loMs + ((hiMs - loMs) * i) / n)));
  const [lo, hi] = [cuts[0]!, cuts[n]!];
  const upper = s.to === null ? '' : ' AND created_at < ?';
  const bounds = s.to === null ? [s.from] : [s.from, s.to];
  const order = 'ORDER BY created_at DESC, id DESC LIMIT ?';
  const range = (from: string, to: string) => ({
    sql: `SELECT ${columns} FROM tasks FORCE INDEX (PRIMARY) WHERE id >= ? AND id < ? AND ${where.sql} AND created_at >= ?${upper} ${order}`,
    params: [from, to, ...where.params, ...bounds, limit],
  });
  return {
    // Newest piece first: the order they are started in.
    inRange: cuts
      .slice(0, n)
      .map((from, i) => range(from, cuts[i + 1]!))
      .reverse(),
    outside: {
      // The derived table is merged (a self-join): its rows come index-only from idx_tasks_created,
      // and only those left are read by primary key. It names its column `oid` so that the outer
      // columns (unqualified, as in listWhere and TASK_COLUMNS) are the outer table's alone.
      sql: `SELECT ${columns} FROM (SELECT id AS oid FROM tasks FORCE INDEX (idx_tasks_created)
          WHERE cell = ? AND created_at >= ?${upper} AND (id < ? OR id >= ?)) o
        STRAIGHT_JOIN tasks ON tasks.id = o.oid WHERE ${where.sql} ${order}`,
      params: [cell, ...bounds, lo, hi, ...where.params, limit],
    },
  };
}

/** Newest first: created_at, then id (ascii_bin: the code-unit order of the id text). */
function newestFirst(a: Row, b: Row): number {
  const d = (b.created_at as Date).getTime() - (a.created_at as Date).getTime();
  if (d !== 0) return d;
  return a.id === b.id ? 0 : (a.id as string) < (b.id as string) ? 1 : -1;
}

/**
 * The rows tasksListQuery would return for `f` (same order, same limit, same columns, which must
 * include id and created_at), read slice by slice as the module comment says. `nowMs`: the app's
 * clock, sizing a window open above and the newest id range (a row beyond it is still found, through
 * `outside`). `parallelism`: statements of a slice at once. Rejects with the database's error when a
 * statement fails.
 */
export async function tasksSearch(
  db: Db,
  cell: string,
  f: ListFilter,
  columns: string,
  nowMs: number,
  parallelism = SEARCH_PARALLELISM,
): Promise<Row[]> {
  const out: Row[] = [];
  for (const s of searchSlices(f, nowMs)) {
    const q = searchSliceQueries(cell, f, columns, s, nowMs, f.limit - out.length, parallelism - 1);
    const parts = await Promise.allSettled([...q.inRange, q.outside].map((x) => select(db, db.pool, x.sql, x.params)));
    const failed = parts.find((p) => p.status === 'rejected');
    if (failed) throw failed.reason;
    out.push(
      ...parts
        .flatMap((p) => (p.status === 'fulfilled' ? p.value : []))
        .sort(newestFirst)
        .slice(0, f.limit - out.length),
    );
    if (out.length >= f.limit) break;
  }
  return out;
}
