/** InspectStore's reads on MySQL (its cancels: tasks-cancel.ts; failure groups: failures.ts; the audit trail: audit.ts). */
import type {HistoryEntry, TaskRecord} from '../../task/model.js';
import type {
  BacklogByState,
  BacklogRow,
  BacklogState,
  BucketParams,
  CreatedBucketRow,
  TransitionBucketRow,
  ListFilter,
  StatsRow,
  TaskRef,
  TerminalCountRow,
  TasksCreatedCountParams,
} from '../types.js';
import type {TaskState} from '../../task/state.js';
import {type Db, type Row, marks, select} from './db.js';
import {searchesByIdRange, tasksSearch} from './tasks-search.js';
import {payloadIndexSearch} from './payload-index.js';
import {PILING_STATES, listWhere} from './list-filter.js';
import {TASK_COLUMNS, TASK_RESULT_COLUMNS, toHistoryEntry, toTaskRecord} from './rows.js';
import {clockNow} from './clock.js';
import {WAITING_RUN_AT} from './links.js';

/** Reads of InspectStore that run all the time (checked by explain.test.ts through HOT_SQL, hot-sql.ts). */
export const INSPECT_SQL = {
  /** Params: cell. Index: idx_tasks_due (cell, state, run_at, type), covering (a scan of the cell's entries: all-time counts). */
  stats: 'SELECT type, state, COUNT(*) AS n FROM tasks WHERE cell = ? GROUP BY type, state ORDER BY type, state',
  /**
   * Params: cell. Index: idx_tasks_due (cell, state, run_at, type), covering: a range over the
   * live states and the dead one (no row lookup), grouped in a small temporary table (a row per
   * state × type). Cost: one index entry per live or dead task; the finished tasks are never read.
   */
  backlog: `SELECT state, type, COUNT(*) AS n, SUM(run_at <= NOW(3)) AS due, SUM(run_at = '${WAITING_RUN_AT}') AS waiting,
        IF(MIN(run_at) <= NOW(3), MIN(run_at), NULL) AS oldest_due
      FROM tasks WHERE cell = ? AND state IN ('submitted', 'failed', 'running', 'dead') GROUP BY state, type ORDER BY NULL`,
  /**
   * Params: since, cell. Index: idx_history_failures (to_state, at): a range over the terminal
   * transitions of the window, then each task by PRIMARY (cell, type); a temporary table of the
   * type × state groups.
   */
  terminalCounts: `SELECT t.type, h.to_state AS state, COUNT(*) AS n FROM task_history h JOIN tasks t ON t.id = h.task_id
      WHERE h.to_state IN ('succeeded', 'dead', 'cancelled') AND h.at >= ? AND t.cell = ? GROUP BY t.type, h.to_state`,
  /** Params: cell, since, until. Index: idx_tasks_created (cell, created_at), covering: a range of the window's tasks. */
  createdCount: 'SELECT COUNT(*) AS n FROM tasks WHERE cell = ? AND created_at >= ? AND created_at < ?',
  /**
   * Params: since, bucket (µs), cell, since, until. Index: idx_tasks_created (cell, created_at),
   * covering: a range of the window's tasks; the groups (one per bucket) in a temporary table, unsorted.
   */
  createdBuckets: `SELECT TIMESTAMPDIFF(MICROSECOND, ?, created_at) DIV ? AS b, COUNT(*) AS n FROM tasks
      WHERE cell = ? AND created_at >= ? AND created_at < ? GROUP BY b ORDER BY NULL`,
  /**
   * Params: since, bucket (µs), since, until, cell. Index: idx_history_failures (to_state, at): a
   * range per state over the window, each history row and its task by PRIMARY (the task's cell);
   * the groups (bucket × state) in a temporary table, unsorted. Measured: ~7 µs per transition.
   */
  transitionBuckets: `SELECT TIMESTAMPDIFF(MICROSECOND, ?, h.at) DIV ? AS b, h.to_state AS state, COUNT(*) AS n
      FROM task_history h JOIN tasks t ON t.id = h.task_id
      WHERE h.to_state IN ('succeeded', 'failed', 'dead', 'cancelled') AND h.at >= ? AND h.at < ? AND t.cell = ?
      GROUP BY b, h.to_state ORDER BY NULL`,
  /** Params: task id. Index: idx_history_task. */
  history:
    'SELECT task_id, from_state, to_state, attempt, worker, at, error, stack, started_at FROM task_history WHERE task_id = ? ORDER BY seq',
};

/** One task by id (primary key). */
export async function tasksGet(db: Db, cell: string, id: string): Promise<TaskRecord | null> {
  const rows = await select(db, db.pool, `SELECT ${TASK_RESULT_COLUMNS} FROM tasks WHERE id = ? AND cell = ?`, [id, cell]);
  return rows[0] ? toTaskRecord(rows[0]) : null;
}

/** Ids per statement of tasksGetMany. */
const GET_MANY_CHUNK = 1000;

/** See InspectStore.tasksGetMany. One primary-key read per GET_MANY_CHUNK ids. */
export async function tasksGetMany(db: Db, cell: string, ids: readonly string[]): Promise<TaskRecord[]> {
  const unique = [...new Set(ids)];
  const out: TaskRecord[] = [];
  for (let i = 0; i < unique.length; i += GET_MANY_CHUNK) {
    const part = unique.slice(i, i + GET_MANY_CHUNK);
    const rows = await select(db, db.pool, `SELECT ${TASK_RESULT_COLUMNS} FROM tasks WHERE id IN (${marks(part.length)}) AND cell = ?`, [
      ...part,
      cell,
    ]);
    out.push(...rows.map(toTaskRecord));
  }
  return out;
}

/** A task's history, oldest first (idx_history_task). */
export async function historyList(db: Db, id: string): Promise<HistoryEntry[]> {
  const rows = await select(db, db.pool, INSPECT_SQL.history, [id]);
  return rows.map(toHistoryEntry);
}

/**
 * Newest tasks first ((created_at, id) descending), filtered by state/type/creation time, dedup
 * key (uq_tasks_dedup), task key, a substring of the last error and a payload field (the last
 * three checked on each row the index range yields). The cursor `after` is a keyset bound in that order: `created_at <= c
 * AND (created_at < c OR id < i)`. All filter values are bound parameters. A text search (payload,
 * error) with `since` reads the window by id ranges (tasks-search.ts), a payload field with an
 * index (ax payload-index) that index (payload-index.ts); other filters run
 * tasksListQuery, whose comment names the index each reads.
 */
export async function tasksList(db: Db, cell: string, f: ListFilter, nowMs: number): Promise<TaskRecord[]> {
  return (await listRows(db, cell, f, TASK_COLUMNS, nowMs)).map(toTaskRecord);
}

/** See InspectStore.tasksListRefs: tasksList's statement with three columns. */
export async function tasksListRefs(db: Db, cell: string, f: ListFilter, nowMs: number): Promise<TaskRef[]> {
  return (await listRows(db, cell, f, 'id, state, created_at', nowMs)).map((r) => ({
    id: r.id as string,
    state: r.state as TaskState,
    createdAt: r.created_at as Date,
  }));
}

/** The rows of tasksList: by a payload field's index when it has one (payload-index.ts), by id ranges for a text search over a window (`nowMs`: the app's clock, see tasksSearch), else one statement. */
async function listRows(db: Db, cell: string, f: ListFilter, columns: string, nowMs: number): Promise<Row[]> {
  const indexed = f.payload ? await payloadIndexSearch(db, cell, f, columns) : undefined;
  if (indexed) return indexed;
  if (searchesByIdRange(f)) return tasksSearch(db, cell, f, columns, nowMs);
  const q = tasksListQuery(cell, f, columns);
  return select(db, db.pool, q.sql, q.params);
}

/**
 * The statement of tasksList (explain.test.ts checks its plans). With a bound on the creation time
 * (since, until, the cursor) it reads idx_tasks_created (cell, created_at, then the primary key id)
 * as a range, backwards from the upper bound down to `since`: a deep page costs what the first
 * does, and a rare match within a window reads the window, not the table. The index is forced
 * there because MariaDB otherwise reads it by `cell` alone ("ref") from the newest entry down,
 * filtering the bounds row by row (measured: a page 60,000 rows deep read 180,000 entries). Not
 * forced for a dedup key (uq_tasks_dedup: one row) or a state of the live set (submitted, running,
 * failed, dead): idx_tasks_due (cell, state, …) and a sort of that state's rows may be the cheaper
 * plan, which the optimizer picks. Params: the filter's, limit.
 */
export function tasksListQuery(cell: string, f: ListFilter, columns: string): {sql: string; params: unknown[]} {
  const where = listWhere(cell, f);
  const bounded = f.since !== undefined || f.until !== undefined || f.after !== undefined;
  const force = bounded && f.dedupKey === undefined && PILING_STATES.includes(f.state);
  return {
    sql: `SELECT ${columns} FROM tasks${force ? ' FORCE INDEX (idx_tasks_created)' : ''} WHERE ${where.sql} ORDER BY created_at DESC, id DESC LIMIT ?`,
    params: [...where.params, f.limit],
  };
}

/** Counts per type × state (a covering scan of idx_tasks_due). */
export async function tasksStats(db: Db, cell: string): Promise<StatsRow[]> {
  const rows = await select(db, db.pool, INSPECT_SQL.stats, [cell]);
  return rows.map((r) => ({type: r.type as string, state: r.state as TaskState, count: Number(r.n)}));
}

/** The backlog per type and per state: one index-only range (INSPECT_SQL.backlog) merged by type, and the clock. */
export async function backlog(db: Db, cell: string): Promise<BacklogByState> {
  const [groups, clock] = await Promise.all([select(db, db.pool, INSPECT_SQL.backlog, [cell]), clockNow(db)]);
  const rows = new Map<string, BacklogRow>();
  const states: BacklogByState['states'] = {submitted: 0, failed: 0, running: 0, dead: 0};
  for (const g of groups) {
    const type = g.type as string;
    let r = rows.get(type);
    if (!r) rows.set(type, (r = {type, due: 0, delayed: 0, waiting: 0, running: 0, dead: 0, oldestDueAt: null}));
    const n = Number(g.n);
    states[g.state as BacklogState] += n;
    if (g.state === 'running') r.running += n;
    else if (g.state === 'dead') r.dead += n;
    else {
      const due = Number(g.due);
      r.due += due;
      r.delayed += n - due;
      r.waiting = (r.waiting ?? 0) + Number(g.waiting ?? 0);
      const oldest = (g.oldest_due as Date | null) ?? null;
      if (oldest && (!r.oldestDueAt || oldest < r.oldestDueAt)) r.oldestDueAt = oldest;
    }
  }
  return {at: clock, states, rows: [...rows.values()].sort((a, b) => a.type.localeCompare(b.type))};
}

/** See InspectStore.terminalCounts (INSPECT_SQL.terminalCounts). */
export async function terminalCounts(db: Db, cell: string, {since}: {since: Date}): Promise<TerminalCountRow[]> {
  const rows = await select(db, db.pool, INSPECT_SQL.terminalCounts, [since, cell]);
  return rows.map((r) => ({type: r.type as string, state: r.state as TerminalCountRow['state'], count: Number(r.n)}));
}

/** The start of bucket `b` of `p`. */
const bucketAt = (p: BucketParams, b: unknown): Date => new Date(p.since.getTime() + Number(b) * p.bucketMs);

/** See InspectStore.tasksCreatedBuckets (INSPECT_SQL.createdBuckets). */
export async function tasksCreatedBuckets(db: Db, cell: string, p: BucketParams): Promise<CreatedBucketRow[]> {
  const rows = await select(db, db.pool, INSPECT_SQL.createdBuckets, [p.since, p.bucketMs * 1000, cell, p.since, p.until]);
  return rows.map((r) => ({at: bucketAt(p, r.b), count: Number(r.n)}));
}

/** See InspectStore.transitionBuckets (INSPECT_SQL.transitionBuckets). */
export async function transitionBuckets(db: Db, cell: string, p: BucketParams): Promise<TransitionBucketRow[]> {
  const rows = await select(db, db.pool, INSPECT_SQL.transitionBuckets, [p.since, p.bucketMs * 1000, p.since, p.until, cell]);
  return rows.map((r) => ({at: bucketAt(p, r.b), state: r.state as TransitionBucketRow['state'], count: Number(r.n)}));
}

/** Tasks created in [since, until): see InspectStore.tasksCreatedCount. */
export async function tasksCreatedCount(db: Db, cell: string, p: TasksCreatedCountParams): Promise<number> {
  const rows = await select(db, db.pool, INSPECT_SQL.createdCount, [cell, p.since, p.until]);
  return Number(rows[0]?.n ?? 0);
}
