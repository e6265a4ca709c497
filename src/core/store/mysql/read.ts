import type {HistoryEntry, TaskRecord} from '../../task/model.js';
import {Where} from './where.js';
import type {
  BacklogReport,
  BacklogRow,
  ExpiredLease,
  HeldForDispatch,
  LeasesFindExpiredParams,
  ListFilter,
  StatsRow,
  TerminalCountRow,
  TasksFindUndispatchedParams,
  TasksCreatedCountParams,
  WorkersListParams,
  WorkersUpsertParams,
  WorkerRow,
  WorkerStatsDoc,
} from '../types.js';
import type {TaskState} from '../../task/state.js';
import {type Db, exec, marks, select} from './db.js';
import {LAST_ERROR_CONTAINS, likeLiteral} from './dlq.js';
import {TASK_COLUMNS, toDueTask, toHistoryEntry, toTaskRecord} from './rows.js';
import {PAYLOAD_TEXT_SQL} from './payloads.js';

/**
 * The statements that run all the time on a big table, with the index each must use
 * (test/integration/explain.test.ts checks the plans; docs/queries.md shows them).
 */
export const HOT_SQL = {
  /** Params: cell, limit. Index: idx_tasks_due (cell, state, …): running rows are few. */
  expiredLeases: `SELECT id, fence, attempt, max_retries, retry_base, worker FROM tasks
      WHERE cell = ? AND state = 'running' AND lease_until < NOW(3) ORDER BY lease_until LIMIT ?`,
  /**
   * Params: cell, republishAfter µs, limit. Index: idx_tasks_due (cell, state, run_at), forced:
   * idx_tasks_dispatch's range for "rung before" would hold every finished row.
   */
  undispatched: `SELECT id, type, pool, priority, run_at, schedule_name, attempt, fence, dedup_key FROM tasks FORCE INDEX (idx_tasks_due)
      WHERE cell = ? AND state IN ('submitted', 'failed') AND run_at <= NOW(3)
        AND (published_at IS NULL OR published_at < NOW(3) - INTERVAL ? MICROSECOND)
      ORDER BY run_at LIMIT ?`,
  /** Params: cell. Index: idx_tasks_due (cell, state, run_at, type), covering (a scan of the cell's entries: all-time counts). */
  stats: 'SELECT type, state, COUNT(*) AS n FROM tasks WHERE cell = ? GROUP BY type, state ORDER BY type, state',
  /**
   * Params: cell. Index: idx_tasks_due (cell, state, run_at, type), covering: a range over the
   * live states and the dead one (no row lookup), grouped in a small temporary table (a row per
   * state × type). Cost: one index entry per live or dead task; the finished tasks are never read.
   */
  backlog: `SELECT state, type, COUNT(*) AS n, SUM(run_at <= NOW(3)) AS due,
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
  /** Params: task id. Index: idx_history_task. */
  history:
    'SELECT task_id, from_state, to_state, attempt, worker, at, error, stack, started_at FROM task_history WHERE task_id = ? ORDER BY seq',
};

/** One task by id (primary key). */
export async function getTask(db: Db, cell: string, id: string): Promise<TaskRecord | null> {
  const rows = await select(db, db.pool, `SELECT ${TASK_COLUMNS} FROM tasks WHERE id = ? AND cell = ?`, [id, cell]);
  return rows[0] ? toTaskRecord(rows[0]) : null;
}

/** Ids per statement of getTasks. */
const GET_MANY_CHUNK = 1000;

/** See InspectStore.tasksGetMany. One primary-key read per GET_MANY_CHUNK ids. */
export async function getTasks(db: Db, cell: string, ids: readonly string[]): Promise<TaskRecord[]> {
  const unique = [...new Set(ids)];
  const out: TaskRecord[] = [];
  for (let i = 0; i < unique.length; i += GET_MANY_CHUNK) {
    const part = unique.slice(i, i + GET_MANY_CHUNK);
    const rows = await select(db, db.pool, `SELECT ${TASK_COLUMNS} FROM tasks WHERE id IN (${marks(part.length)}) AND cell = ?`, [
      ...part,
      cell,
    ]);
    out.push(...rows.map(toTaskRecord));
  }
  return out;
}

/** A task's history, oldest first (idx_history_task). */
export async function history(db: Db, id: string): Promise<HistoryEntry[]> {
  const rows = await select(db, db.pool, HOT_SQL.history, [id]);
  return rows.map(toHistoryEntry);
}

/**
 * Newest tasks first, filtered by state/type/creation time (idx_tasks_created read newest first,
 * or idx_tasks_due (cell, state, …) for a state), dedup key (uq_tasks_dedup), a substring of the last
 * error and a payload field (both checked on each row the index range yields). All filter values
 * are bound parameters.
 */
export async function listTasks(db: Db, cell: string, f: ListFilter): Promise<TaskRecord[]> {
  const where = new Where()
    .and('cell = ?', cell)
    .if(Boolean(f.state), 'state = ?', f.state)
    .if(Boolean(f.type), 'type = ?', f.type)
    .if(Boolean(f.since), 'created_at >= ?', f.since)
    .if(f.dedupKey !== undefined, 'dedup_key = ?', f.dedupKey)
    .if(f.errorContains !== undefined, LAST_ERROR_CONTAINS, likeLiteral(f.errorContains ?? ''))
    // Parsed per row: callers bound the scan with `since` (parseListFilter requires it).
    .if(f.payload !== undefined, `JSON_VALUE(${PAYLOAD_TEXT_SQL}, ?) = ?`, f.payload?.path, f.payload?.value);
  const params = [...where.params, f.limit];
  const rows = await select(
    db,
    db.pool,
    `SELECT ${TASK_COLUMNS} FROM tasks WHERE ${where.sql} ORDER BY created_at DESC, id DESC LIMIT ?`,
    params,
  );
  return rows.map(toTaskRecord);
}

/** Counts per type × state (a covering scan of idx_tasks_due). */
export async function stats(db: Db, cell: string): Promise<StatsRow[]> {
  const rows = await select(db, db.pool, HOT_SQL.stats, [cell]);
  return rows.map((r) => ({type: r.type as string, state: r.state as TaskState, count: Number(r.n)}));
}

/** The backlog per type: one index-only range (HOT_SQL.backlog) merged by type, and the clock. */
export async function backlog(db: Db, cell: string): Promise<BacklogReport> {
  const [groups, clock] = await Promise.all([select(db, db.pool, HOT_SQL.backlog, [cell]), dbNow(db)]);
  const rows = new Map<string, BacklogRow>();
  for (const g of groups) {
    const type = g.type as string;
    let r = rows.get(type);
    if (!r) rows.set(type, (r = {type, due: 0, delayed: 0, running: 0, dead: 0, oldestDueAt: null}));
    const n = Number(g.n);
    if (g.state === 'running') r.running += n;
    else if (g.state === 'dead') r.dead += n;
    else {
      const due = Number(g.due);
      r.due += due;
      r.delayed += n - due;
      const oldest = (g.oldest_due as Date | null) ?? null;
      if (oldest && (!r.oldestDueAt || oldest < r.oldestDueAt)) r.oldestDueAt = oldest;
    }
  }
  return {at: clock, rows: [...rows.values()].sort((a, b) => a.type.localeCompare(b.type))};
}

/** See InspectStore.terminalCounts (HOT_SQL.terminalCounts). */
export async function terminalCounts(db: Db, cell: string, {since}: {since: Date}): Promise<TerminalCountRow[]> {
  const rows = await select(db, db.pool, HOT_SQL.terminalCounts, [since, cell]);
  return rows.map((r) => ({type: r.type as string, state: r.state as TerminalCountRow['state'], count: Number(r.n)}));
}

/** Running rows whose lease is before NOW(3), oldest lease first (idx_tasks_due: the running entries). */
export async function findExpiredLeases(db: Db, cell: string, {limit}: LeasesFindExpiredParams): Promise<ExpiredLease[]> {
  const rows = await select(db, db.pool, HOT_SQL.expiredLeases, [cell, limit]);
  return rows.map((r) => ({
    id: r.id as string,
    fence: Number(r.fence),
    attempt: Number(r.attempt),
    maxRetries: Number(r.max_retries),
    retryBase: Number(r.retry_base),
    worker: (r.worker as string | null) ?? null,
  }));
}

/**
 * Due submitted/failed rows never rung since they became due, or rung `republishAfterMs` ago and
 * still unclaimed; one range scan of idx_tasks_due per state, oldest due first.
 */
export async function findUndispatched(
  db: Db,
  cell: string,
  {limit, republishAfterMs}: TasksFindUndispatchedParams,
): Promise<HeldForDispatch[]> {
  const rows = await select(db, db.pool, HOT_SQL.undispatched, [cell, republishAfterMs * 1000, limit]);
  return rows.map(toDueTask);
}

/**
 * Registers a worker or records its heartbeat. The previous stats and heartbeat time move to the
 * prev_ columns in the same statement: the assignments run left to right (and under
 * SIMULTANEOUS_ASSIGNMENT every right side is the old row), so prev_ gets the old values either way.
 */
export async function upsertWorker(db: Db, cell: string, {info: w, inFlight, stats}: WorkersUpsertParams): Promise<void> {
  await exec(
    db,
    db.pool,
    `INSERT INTO workers (id, cell, host, pid, pools, types, in_flight, started_at, heartbeat_at, stopped_at, stats)
     VALUES (?, ?, ?, ?, ?, ?, ?, NOW(3), NOW(3), NULL, ?)
     ON DUPLICATE KEY UPDATE prev_stats = stats, prev_heartbeat_at = heartbeat_at, stats = VALUES(stats),
       pools = VALUES(pools), types = VALUES(types), in_flight = VALUES(in_flight), heartbeat_at = NOW(3), stopped_at = NULL`,
    [
      w.id,
      cell,
      w.host,
      w.pid,
      JSON.stringify(w.pools),
      w.types === undefined ? null : JSON.stringify(w.types),
      inFlight,
      stats === undefined ? null : JSON.stringify(stats),
    ],
  );
}

export async function stopWorker(db: Db, id: string): Promise<void> {
  await exec(db, db.pool, 'UPDATE workers SET stopped_at = NOW(3), in_flight = 0 WHERE id = ?', [id]);
}

/** A stats column as stored (null, or JSON a newer or broken writer left: read as none). */
function statsOf(v: unknown): WorkerStatsDoc | null {
  if (typeof v !== 'string') return null;
  try {
    const d = JSON.parse(v) as WorkerStatsDoc;
    return d !== null && typeof d === 'object' && typeof d.types === 'object' && d.types !== null ? d : null;
  } catch {
    return null;
  }
}

/** Index: idx_workers_cell (cell, heartbeat_at): the cell's rows, bounded by `seenWithinMs` when given. */
export async function listWorkers(db: Db, cell: string, p: WorkersListParams = {}): Promise<WorkerRow[]> {
  const recent = p.seenWithinMs !== undefined;
  const rows = await select(
    db,
    db.pool,
    `SELECT id, host, pid, pools, types, in_flight, started_at, heartbeat_at, stopped_at, stats, prev_stats, prev_heartbeat_at,
            GREATEST(0, TIMESTAMPDIFF(MICROSECOND, heartbeat_at, NOW(3))) AS age_us
     FROM workers WHERE cell = ?${recent ? ' AND heartbeat_at >= NOW(3) - INTERVAL ? MICROSECOND' : ''} ORDER BY heartbeat_at DESC`,
    recent ? [cell, Math.max(0, p.seenWithinMs!) * 1000] : [cell],
  );
  return rows.map((r) => {
    const prevStats = statsOf(r.prev_stats);
    const prevAt = (r.prev_heartbeat_at as Date | null) ?? null;
    return {
      id: r.id as string,
      host: r.host as string,
      pid: Number(r.pid),
      pools: JSON.parse(r.pools as string) as Record<string, number>,
      ...(r.types === null ? {} : {types: JSON.parse(r.types as string) as string[]}),
      inFlight: Number(r.in_flight),
      startedAt: r.started_at as Date,
      heartbeatAt: r.heartbeat_at as Date,
      heartbeatAgeMs: Math.round(Number(r.age_us) / 1000),
      stoppedAt: (r.stopped_at as Date | null) ?? null,
      stats: statsOf(r.stats),
      prev: prevStats !== null && prevAt !== null ? {at: prevAt, stats: prevStats} : null,
    };
  });
}

/** Tasks created in [since, until): see InspectStore.tasksCreatedCount. */
export async function createdCount(db: Db, cell: string, p: TasksCreatedCountParams): Promise<number> {
  const rows = await select(db, db.pool, HOT_SQL.createdCount, [cell, p.since, p.until]);
  return Number(rows[0]?.n ?? 0);
}

export async function dbNow(db: Db): Promise<Date> {
  const rows = await select(db, db.pool, 'SELECT NOW(3) AS now');
  return rows[0]?.now as Date;
}
