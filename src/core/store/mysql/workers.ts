/** WorkerRegistryStore on MySQL: the `workers` table (heartbeats, counters). */
import type {WorkersListParams, WorkersUpsertParams, WorkerRow, WorkerStatsDoc} from '../types.js';
import {type Db, exec, select} from './db.js';

/**
 * Registers a worker or records its heartbeat. The previous stats and heartbeat time move to the
 * prev_ columns in the same statement: the assignments run left to right (and under
 * SIMULTANEOUS_ASSIGNMENT every right side is the old row), so prev_ gets the old values either way.
 */
export async function workersUpsert(db: Db, cell: string, {info: w, inFlight, stats}: WorkersUpsertParams): Promise<void> {
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

export async function workersStop(db: Db, id: string): Promise<void> {
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
export async function workersList(db: Db, cell: string, p: WorkersListParams = {}): Promise<WorkerRow[]> {
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
