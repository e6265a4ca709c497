/**
 * The archive seam on MySQL (ArchiveStore, core/store/seams/archive.ts): batches of finished tasks
 * read through idx_tasks_due, locked by primary key, handed to the cold-storage writer and deleted
 * with their history in the same transaction; the per-cell archive lock; restore.
 */
import {createHash} from 'node:crypto';
import {AxError, invalid} from '../../errors.js';
import {DEFAULT_PRIORITY} from '../../task/model.js';
import {
  ARCHIVABLE_STATES,
  type ArchivableState,
  type ArchiveBatchParams,
  type ArchiveBatchResult,
  type ArchiveDeleteResult,
  type ArchivedSnapshot,
  type ArchivedTask,
  type ArchivedValue,
  type ArchiveLease,
  type ArchiveRestoreParams,
} from '../seams/archive.js';
import {auditInsert} from './audit.js';
import {LINK_CALLBACK, LINK_PARENTS} from '../../task/links.js';
import {type Conn, type Db, driverCode, exec, marks, type Row, select, tx, withLongIdle} from './db.js';
import {PAYLOAD_APART, PAYLOAD_BODY_LOCKED, bodiesUpserts, packBig, payloadText} from './payloads.js';

/**
 * Every column of `tasks` an archived row keeps (restore writes them back as they were). `payload`
 * is archived as its full text, also when the hot table stored it apart (payloads.ts); restore stores
 * it apart again when it is longer than the restoring store's inline limit.
 */
export const ARCHIVE_TASK_COLUMNS = [
  'id',
  'cell',
  'type',
  'pool',
  'priority',
  'state',
  'attempt',
  'max_retries',
  'retry_base',
  'replay',
  'run_at',
  'timeout_ms',
  'lease_until',
  'fence',
  'worker',
  'started_at',
  'submitted_by',
  'sched_owner',
  'sched_until',
  'dedup_key',
  'task_key',
  'traceparent',
  'tracestate',
  'schedule_name',
  'content_hash',
  'last_error',
  'published_at',
  'created_at',
  'updated_at',
  'finished_at',
  'result_json',
  'progress',
  'progress_note',
  'progress_at',
  'deps_left',
  'links',
  'batch_id',
  'payload',
] as const;

/** Every column of `task_history` an archived row keeps (seq too: the timeline's order). */
export const ARCHIVE_HISTORY_COLUMNS = [
  'seq',
  'task_id',
  'from_state',
  'to_state',
  'attempt',
  'worker',
  'at',
  'error',
  'stack',
  'started_at',
] as const;

const DATE_COLUMNS = new Set([
  'run_at',
  'lease_until',
  'started_at',
  'sched_until',
  'published_at',
  'created_at',
  'updated_at',
  'finished_at',
  'progress_at',
  'at',
]);

/** A row as archived: Dates become ISO strings, everything else stays as read. */
function toArchived(r: Row, columns: readonly string[]): Record<string, ArchivedValue> {
  const out: Record<string, ArchivedValue> = {};
  for (const c of columns) {
    const v = r[c] as unknown;
    out[c] = v instanceof Date ? v.toISOString() : v === null || v === undefined ? null : typeof v === 'number' ? v : String(v);
  }
  return out;
}

/** An archived value as a bound parameter (ISO strings of DATETIME columns back to Dates). */
function toParam(column: string, v: ArchivedValue | undefined): unknown {
  // An archive written before priorities has no `priority`: its tasks were all at the default level.
  if (column === 'priority' && (v === undefined || v === null)) return DEFAULT_PRIORITY;
  if (v === undefined || v === null) return null;
  return DATE_COLUMNS.has(column) && typeof v === 'string' ? new Date(v) : v;
}

/** The lock name of a cell's archiver: server-wide, so it names the database too (≤ 64 characters). */
export function archiveLockName(database: string, cell: string): string {
  return `ax_archive_${createHash('sha256').update(`${database}\0${cell}`).digest('hex').slice(0, 40)}`;
}

/** Takes the cell's archive lock without waiting on a connection of its own (see ArchiveStore.archiveLock). */
export async function archiveLock(db: Db, cell: string): Promise<ArchiveLease | null> {
  const name = archiveLockName(db.database, cell);
  const conn = await db.pool.getConnection();
  let ok = false;
  try {
    const rows = await select(db, conn, 'SELECT GET_LOCK(?, 0) AS ok', [name]);
    ok = Number(rows[0]?.ok) === 1;
  } finally {
    if (!ok) conn.release();
  }
  if (!ok) return null;
  let released: Promise<void> | undefined;
  return {
    release: () =>
      (released ??= (async () => {
        try {
          await conn.query('SELECT RELEASE_LOCK(?)', [name]);
          conn.release();
        } catch {
          conn.destroy(); // the lock goes with the connection
        }
      })()),
  };
}

/** Rows of the window per state. One range read of idx_tasks_due (cell, state, run_at) per state. */
export async function archiveCount(db: Db, cell: string, finishedBefore: Date): Promise<Record<ArchivableState, number>> {
  const rows = await select(
    db,
    db.pool,
    `SELECT state, COUNT(*) AS n FROM tasks
      WHERE cell = ? AND state IN (${marks(ARCHIVABLE_STATES.length)}) AND run_at < ? AND finished_at < ? GROUP BY state`,
    [cell, ...ARCHIVABLE_STATES, finishedBefore, finishedBefore],
  );
  const out = {succeeded: 0, dead: 0, cancelled: 0};
  for (const r of rows) out[r.state as ArchivableState] = Number(r.n);
  return out;
}

/**
 * The candidates of a batch: a range of idx_tasks_due (cell, state, run_at < cutoff) read in index
 * order past the cursor (run_at, type, id: the primary key is the index's last part), filtered by
 * finished_at. run_at ≤ finished_at for every finished row (a task finishes after it was due), so
 * the range holds every row of the window; a cancelled delayed task whose run_at is still ahead is
 * archived once its run_at too is past the cutoff (later, never sooner).
 */
export function archiveCandidatesSql(
  cell: string,
  p: Pick<ArchiveBatchParams, 'state' | 'finishedBefore' | 'after' | 'limit'>,
): {sql: string; params: unknown[]} {
  const cursor = p.after === null ? '' : ' AND (run_at > ? OR (run_at = ? AND (type > ? OR (type = ? AND id > ?))))';
  const at = p.after;
  return {
    sql: `SELECT id, run_at, type FROM tasks FORCE INDEX (idx_tasks_due)
      WHERE cell = ? AND state = ? AND run_at < ?${cursor} AND finished_at < ?
      ORDER BY run_at, type, id LIMIT ?`,
    params: [cell, p.state, p.finishedBefore, ...(at ? [at.runAt, at.runAt, at.type, at.type, at.id] : []), p.finishedBefore, p.limit],
  };
}

/** How long an archive batch's transaction may wait for its parts (write and verify), seconds. */
const ARCHIVE_WRITE_IDLE_S = 600;

/**
 * One archive batch (see ArchiveStore.archiveBatch). Candidates: a range of idx_tasks_due
 * (cell, state, run_at < finishedBefore, then type, id) past the cursor, filtered by finished_at, in index
 * order, without locks. Then one transaction: the rows by primary key FOR UPDATE, re-checked; their
 * history through idx_history_task; `write`; two multi-row DELETEs by primary key / task id.
 */
export async function archiveBatch(db: Db, cell: string, p: ArchiveBatchParams): Promise<ArchiveBatchResult> {
  const q = archiveCandidatesSql(cell, p);
  const candidates = await select(db, db.pool, q.sql, q.params);
  const last = candidates.at(-1);
  const next = candidates.length < p.limit || !last ? null : {runAt: last.run_at as Date, type: last.type as string, id: last.id as string};
  if (candidates.length === 0) return {deleted: [], next};
  const ids = candidates.map((r) => r.id as string);
  const deleted = await tx(db, async (c) => {
    const rows = await select(
      db,
      c,
      `SELECT ${ARCHIVE_TASK_COLUMNS.join(', ')}, ${PAYLOAD_BODY_LOCKED} FROM tasks
        WHERE id IN (${marks(ids.length)}) AND cell = ? AND state = ? AND finished_at < ? ORDER BY id FOR UPDATE`,
      [...ids, cell, p.state, p.finishedBefore],
    );
    if (rows.length === 0) return [];
    const kept = rows.map((r) => r.id as string);
    const tasks = await withHistory(db, c, rows);
    // The rows stay locked while their parts are written and read back: this session may be idle
    // that long (finished rows' locks hold up nobody but a replay of them).
    await withLongIdle(db, c, ARCHIVE_WRITE_IDLE_S, () => p.write(tasks));
    await deleteRows(db, c, rows);
    return kept;
  });
  return {deleted, next};
}

/** The archived form of locked task rows with their history (one read through idx_history_task). */
async function withHistory(db: Db, c: Conn, rows: Row[]): Promise<ArchivedTask[]> {
  const ids = rows.map((r) => r.id as string);
  const hist = await select(
    db,
    c,
    `SELECT ${ARCHIVE_HISTORY_COLUMNS.join(', ')} FROM task_history WHERE task_id IN (${marks(ids.length)}) ORDER BY task_id, seq`,
    ids,
  );
  const byTask = new Map<string, Array<Record<string, ArchivedValue>>>();
  for (const h of hist) {
    const id = h.task_id as string;
    let list = byTask.get(id);
    if (!list) byTask.set(id, (list = []));
    list.push(toArchived(h, ARCHIVE_HISTORY_COLUMNS));
  }
  return rows.map((r) => ({
    task: {...toArchived(r, ARCHIVE_TASK_COLUMNS), payload: payloadText(r)},
    history: byTask.get(r.id as string) ?? [],
  }));
}

/** Deletes tasks, their history and stored-apart payloads; rolls back (throws) unless exactly these task rows went. */
/**
 * Deletes locked task rows (id, links, batch_id read) with their history, stored-apart payloads and
 * links: the edges to their parents (a finished child's are settled) and the batch whose callback
 * they are. A row without link flags costs no statement for them.
 */
async function deleteRows(db: Db, c: Conn, rows: readonly Row[]): Promise<void> {
  const ids = rows.map((r) => r.id as string);
  const flagged = (bit: number) => rows.filter((r) => (Number(r.links ?? 0) & bit) !== 0);
  const children = flagged(LINK_PARENTS).map((r) => r.id as string);
  if (children.length > 0) await exec(db, c, `DELETE FROM task_deps WHERE child IN (${marks(children.length)})`, children);
  const batches = flagged(LINK_CALLBACK)
    .map((r) => r.batch_id as string | null)
    .filter((b): b is string => b !== null);
  if (batches.length > 0) await exec(db, c, `DELETE FROM task_batches WHERE id IN (${marks(batches.length)})`, batches);
  await exec(db, c, `DELETE FROM task_history WHERE task_id IN (${marks(ids.length)})`, ids);
  await exec(db, c, `DELETE FROM task_payloads WHERE task_id IN (${marks(ids.length)})`, ids);
  const res = await exec(db, c, `DELETE FROM tasks WHERE id IN (${marks(ids.length)})`, ids);
  if (res.affectedRows !== ids.length)
    throw new AxError('internal', `archive delete removed ${res.affectedRows} tasks, expected ${ids.length}: rolled back`);
}

/** Recovery delete of rows still exactly as archived (see ArchiveStore.archiveDeleteArchived). */
export async function archiveDeleteArchived(db: Db, cell: string, snaps: ArchivedSnapshot[]): Promise<ArchiveDeleteResult> {
  if (snaps.length === 0) return {deleted: [], movedOn: [], missing: []};
  const ids = snaps.map((s) => s.id);
  return tx(db, async (c) => {
    const rows = await select(
      db,
      c,
      `SELECT id, state, updated_at, links, batch_id FROM tasks WHERE id IN (${marks(ids.length)}) AND cell = ? FOR UPDATE`,
      [...ids, cell],
    );
    const found = new Map(rows.map((r) => [r.id as string, r]));
    const out: ArchiveDeleteResult = {deleted: [], movedOn: [], missing: []};
    for (const s of snaps) {
      const r = found.get(s.id);
      if (!r) out.missing.push(s.id);
      else if (r.state === s.state && (r.updated_at as Date).toISOString() === s.updatedAt) out.deleted.push(s.id);
      else out.movedOn.push(s.id);
    }
    if (out.deleted.length > 0)
      await deleteRows(
        db,
        c,
        out.deleted.map((id) => found.get(id)!),
      );
    return out;
  });
}

/**
 * Restore (see ArchiveStore.archiveRestore): a locking existence check, then multi-row INSERTs of
 * the tasks, their payloads longer than `inlineBytes` (stored apart, compressed before the
 * transaction) and their history.
 */
export async function archiveRestore(db: Db, cell: string, p: ArchiveRestoreParams, inlineBytes: number): Promise<{restored: string[]}> {
  if (p.tasks.length === 0) return {restored: []};
  const ids = p.tasks.map((t) => String(t.task.id));
  const foreign = p.tasks.filter((t) => t.task.cell !== cell).map((t) => String(t.task.id));
  if (foreign.length > 0)
    throw invalid(`${foreign.length} archived task(s) belong to another cell than "${cell}": ${foreign.slice(0, 5).join(', ')}`);
  const bodies = await packBig(
    p.tasks.map((t) => String(t.task.payload ?? '')),
    inlineBytes,
  );
  const rows = p.tasks.map((t, i) => (bodies.has(i) ? {...t.task, payload: PAYLOAD_APART} : t.task));
  try {
    return await tx(db, async (c) => {
      const there = await select(db, c, `SELECT id FROM tasks WHERE id IN (${marks(ids.length)}) FOR UPDATE`, ids);
      if (there.length > 0) throw inHotTable(there.map((r) => r.id as string));
      await insertRows(db, c, 'tasks', ARCHIVE_TASK_COLUMNS, rows);
      if (bodies.size > 0) {
        for (const b of bodiesUpserts([...bodies].map(([i, body]) => [ids[i]!, body] as const))) await exec(db, c, b.sql, b.params);
      }
      const hist = p.tasks.flatMap((t) => t.history);
      if (hist.length > 0) await insertRows(db, c, 'task_history', ARCHIVE_HISTORY_COLUMNS, hist);
      if (p.audit) await auditInsert(db, c, cell, p.audit, ids);
      return {restored: ids};
    });
  } catch (e) {
    if (driverCode(e) === 'ER_DUP_ENTRY')
      throw new AxError(
        'conflict',
        `restore refused: a task or history row (or dedup key) is already in the hot table (${(e as Error).message}); nothing restored`,
        {cause: e},
      );
    throw e;
  }
}

function inHotTable(ids: string[]): AxError {
  return new AxError(
    'conflict',
    `restore refused: ${ids.length} task(s) are still in the hot table (${ids.slice(0, 5).join(', ')}${ids.length > 5 ? ', …' : ''}); nothing restored`,
    {
      details: {ids},
    },
  );
}

async function insertRows(
  db: Db,
  c: Conn,
  table: string,
  columns: readonly string[],
  rows: Array<Record<string, ArchivedValue>>,
): Promise<void> {
  const params: unknown[] = [];
  const one = `(${marks(columns.length)})`;
  for (const r of rows) for (const col of columns) params.push(toParam(col, r[col]));
  await exec(db, c, `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${rows.map(() => one).join(', ')}`, params);
}
