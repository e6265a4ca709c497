/**
 * SQL of a type's task keys as operators see them (FlowStore.typeKeys, seams/flow.ts): the keys
 * with the most backlog and the most running, with the totals — for `ax types show`, the console,
 * `ax top` and `ax doctor`. Every statement is an index-only range of idx_tasks_key (cell, type,
 * key_phase, task_key, key_run_at) grouped in index order: no table row is read, no temporary
 * table for the grouping (only the few groups of a top list are sorted).
 */
import type {KeyCount, TypeKeysParams, TypeKeysReport} from '../types.js';
import {type Db, marks, select} from './db.js';

/** key_phase of claimable rows (submitted, failed) and of running ones (migration 19). */
const CLAIMABLE = 1;
const RUNNING = 2;

/**
 * The `limit` keys of a type with the most rows in a key_phase, with the phase's total rows and
 * distinct keys (window functions over the groups: one pass). Params: cell, type, phase, limit.
 * Cost: the (cell, type, phase) range of idx_tasks_key, every keyed row of the phase once (about
 * half a second per million on a small server), and a sort of its groups (one per distinct key).
 */
export const keysTopSql = `SELECT task_key, n, SUM(n) OVER () AS total, COUNT(*) OVER () AS keys_n
  FROM (SELECT task_key, COUNT(*) AS n FROM tasks WHERE cell = ? AND type = ? AND key_phase = ? GROUP BY task_key) g
  ORDER BY n DESC, task_key LIMIT ?`;

/** The rows of a phase of the given keys. Params: cell, type, phase, keys. Cost: those keys' ranges of idx_tasks_key. */
export const keysCountSql = (n: number): string =>
  `SELECT task_key, COUNT(*) AS n FROM tasks WHERE cell = ? AND type = ? AND key_phase = ? AND task_key IN (${marks(n)}) GROUP BY task_key`;

interface Top {
  counts: Map<string, number>;
  total: number;
  keys: number;
  /** Every key of the phase is in `counts` (fewer than `limit` came back). */
  complete: boolean;
}

async function top(db: Db, cell: string, type: string, phase: number, limit: number): Promise<Top> {
  const rows = await select(db, db.pool, keysTopSql, [cell, type, phase, limit]);
  return {
    counts: new Map(rows.map((r) => [r.task_key as string, Number(r.n)])),
    total: Number(rows[0]?.total ?? 0),
    keys: Number(rows[0]?.keys_n ?? 0),
    complete: rows.length < limit,
  };
}

/** The counts of `keys` missing from a top list that was cut (a key not in a complete one has none). */
async function fill(db: Db, cell: string, type: string, phase: number, t: Top, keys: string[]): Promise<void> {
  const missing = keys.filter((k) => !t.counts.has(k));
  if (t.complete || missing.length === 0) return;
  for (const r of await select(db, db.pool, keysCountSql(missing.length), [cell, type, phase, ...missing]))
    t.counts.set(r.task_key as string, Number(r.n));
}

/**
 * See FlowStore.typeKeys. Two top reads (claimable, running), then at most two reads of the
 * other count of the keys one list has and the other cut off. The running range is as long as the
 * type's keyed attempts in flight (bounded by the workers' concurrency); the backlog range is the
 * cost: every claimable row with a key, index only.
 */
export async function typeKeys(db: Db, cell: string, {type, limit}: TypeKeysParams): Promise<TypeKeysReport> {
  const [backlog, running] = await Promise.all([top(db, cell, type, CLAIMABLE, limit), top(db, cell, type, RUNNING, limit)]);
  const byBacklog = [...backlog.counts.keys()];
  const byRunning = [...running.counts.keys()];
  await Promise.all([fill(db, cell, type, CLAIMABLE, backlog, byRunning), fill(db, cell, type, RUNNING, running, byBacklog)]);
  const keys = [...new Set([...byBacklog, ...byRunning])];
  const rows: KeyCount[] = keys.map((key) => ({key, backlog: backlog.counts.get(key) ?? 0, running: running.counts.get(key) ?? 0}));
  rows.sort((a, b) => b.backlog - a.backlog || b.running - a.running || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return {backlog: backlog.total, withBacklog: backlog.keys, running: running.total, withRunning: running.keys, top: rows};
}
