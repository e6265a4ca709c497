/**
 * The guards of state-changing UPDATEs, built from the transition table (core/task/state.ts): each
 * statement carries its own `state IN (…)`, fence and lease conditions in its WHERE clause, so the
 * guard holds whether or not a locking read ran before it.
 */
import {guardOf, type TaskState, type TransitionName} from '../../task/state.js';
import {AxError} from '../../errors.js';
import {type Db, type PoolConnection, type ResultSetHeader, marks, tx} from './db.js';

/** `'a', 'b'`: states are a fixed enum, never user input. */
export const inList = (states: readonly TaskState[]): string => states.map((s) => `'${s}'`).join(', ');

/**
 * The SET item of every transition that leaves the claimable states (claim, cancel, dead-letter of
 * an unhandled type): a row that was never rung gets its mark, so `published_at IS NULL` holds for
 * claimable rows only and the scheduler's range of idx_tasks_dispatch (cell, published_at, run_at),
 * which carries no state, stays as small as the unrung backlog (migration 17). A row already rung
 * keeps its value: InnoDB then leaves that index entry alone.
 */
export const MARK_LEFT_UNRUNG = 'published_at = COALESCE(published_at, NOW(3))';

/** A row a guarded statement targets: its id and the fence the caller holds. */
export interface FencedRef {
  id: string;
  fence: number;
}

/**
 * `fence = ?` when every row has the same fence (a producer's batch, a batch of first attempts),
 * else `((fence = ? AND id IN (…)) OR …)`, one group per fence: no per-row CASE to evaluate.
 */
export function fenceCondition(rows: readonly FencedRef[]): {sql: string; params: unknown[]} {
  const byFence = new Map<number, string[]>();
  for (const r of rows) {
    const group = byFence.get(r.fence);
    if (group) group.push(r.id);
    else byFence.set(r.fence, [r.id]);
  }
  if (byFence.size === 1) return {sql: 'fence = ?', params: [rows[0]!.fence]};
  const parts: string[] = [];
  const params: unknown[] = [];
  for (const [fence, ids] of byFence) {
    parts.push(`(fence = ? AND id IN (${marks(ids.length)}))`);
    params.push(fence, ...ids);
  }
  return {sql: `(${parts.join(' OR ')})`, params};
}

/**
 * The WHERE clause of transition `t` applied to `rows` (non-empty): `id IN (…)`, the source states,
 * and, as the table says, the fence each row is held at, an expired lease and a due run_at.
 */
export function guardedWhere(t: TransitionName, rows: readonly FencedRef[]): {sql: string; params: unknown[]} {
  const g = guardOf(t);
  const parts = [`id IN (${marks(rows.length)})`, `state IN (${inList(g.from)})`];
  const params: unknown[] = rows.map((r) => r.id);
  if (g.fenced) {
    const f = fenceCondition(rows);
    parts.push(f.sql);
    params.push(...f.params);
  }
  if (g.leaseExpired) parts.push('lease_until < NOW(3)');
  if (g.due) parts.push('run_at <= NOW(3)');
  return {sql: parts.join(' AND '), params};
}

/**
 * Rows a doorbell was rung for, still claimable at that fence: what a "published" mark may touch.
 * (Not a transition: no state changes, but the same source states as a claim.)
 */
export function rungWhere(rung: readonly FencedRef[]): {sql: string; params: unknown[]} {
  const f = fenceCondition(rung);
  return {
    sql: `id IN (${marks(rung.length)}) AND state IN (${inList(guardOf('claim').from)}) AND ${f.sql}`,
    params: [...rung.map((r) => r.id), ...f.params],
  };
}

/** How often a claim or an outcome batch re-reads after a guarded UPDATE matched fewer rows than it read. */
const MAX_GUARD_RETRIES = 5;

/**
 * Thrown inside a transaction when a guarded UPDATE changed fewer rows than the read before it
 * decided: the rows moved in between (only possible without a locking read). The transaction rolls
 * back and the caller re-reads.
 */
export class GuardMismatch extends Error {}

/** Runs `fn` in a transaction, again from a fresh read when a guarded UPDATE did not match what it read. */
export async function txGuarded<T>(db: Db, what: string, fn: (c: PoolConnection) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await tx(db, fn);
    } catch (e) {
      if (!(e instanceof GuardMismatch)) throw e;
      if (attempt >= MAX_GUARD_RETRIES)
        throw new AxError('conflict', `${what}: rows kept changing under the guarded UPDATE (${e.message})`);
    }
  }
}

/** Throws GuardMismatch unless a guarded UPDATE changed exactly the `expected` rows the read decided on. */
export function expectAffected(res: ResultSetHeader, expected: number, what: string): void {
  if (res.affectedRows !== expected) throw new GuardMismatch(`${what}: ${res.affectedRows} of ${expected} rows matched`);
}
