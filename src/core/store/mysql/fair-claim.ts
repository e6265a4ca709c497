/**
 * Fair dispatch in a claim's transaction (policy: core/flow/fair.ts). For a fair type whose
 * registry row the claim holds for update, the keyed doorbells of the batch are permits: the claim
 * takes as many of the type's due keyed tasks, round-robin across keys from the cursor on the row,
 * instead of the tasks the doorbells name. Statements, each one round trip whatever the batch:
 * the keys with due tasks after the cursor (and from the start, when that wraps), the running
 * count of those keys when the type has a per-key cap, the tasks of each key's turn (one UNION
 * ALL), a locking read of those not in the batch (SKIP LOCKED: a row another claim holds is left
 * to it), and the cursor's UPDATE. All over idx_tasks_key.
 */
import {fairPlan, type FairCursor, type FairKey} from '../../flow/fair.js';
import type {LimitSettings} from '../../flow/limits.js';
import {type Conn, type Db, exec, marks, type Row, select} from './db.js';
import {claimSelectSql} from './claim-sql.js';

/** A keyed doorbell of a fair type in the batch: its task (claimable and due, or `stale`: running or ended). */
export interface FairPermit {
  id: string;
  pool: string;
  stale: boolean;
}

export interface FairResult {
  /**
   * The tasks to claim, in turn order: a batch task by itself (row null: the caller has it), or
   * another task (its row locked, as claimSelectSql reads it) with the permit it came in on.
   */
  picked: Array<{id: string; row: Row | null; via: string | null}>;
  /**
   * Claimable doorbell tasks of the batch not picked whose doorbell went to another task: they stay
   * due and are marked unrung (published_at NULL), so the scheduler rings them again; no task is
   * left due without a doorbell on its way.
   */
  leftDue: string[];
  /** Claimable doorbell tasks of the batch that neither were picked nor lent their permit (the keys ran out): the caller defers them. */
  unused: string[];
  /** Stale permits whose doorbell went to a picked task. */
  usedStale: string[];
}

/**
 * The keys with due tasks of a type (params: cell, type, bound), ascending from `bound`
 * (`>=`, or `<` for the wrap-around), at most `limit`. MIN(key_run_at) keeps the due condition
 * within a loose index scan of idx_tasks_key (one probe per key, not one per task). Exported for the plan test.
 */
export const fairKeysSql = (op: '>=' | '<', limit: number): string =>
  `SELECT task_key, MIN(key_run_at) AS first_due FROM tasks
    WHERE cell = ? AND type = ? AND key_phase = 1 AND task_key ${op} ? AND key_run_at <= NOW(3)
    GROUP BY task_key ORDER BY task_key LIMIT ${limit}`;

/**
 * Due tasks of one key in due order (params: cell, type, key, pool), a part of the UNION ALL. It
 * reads twice the turn: some of them may be locked by a concurrent claim (their own doorbells),
 * which the locking read skips.
 */
const keyTurnSql = (n: number): string =>
  `(SELECT id FROM tasks WHERE cell = ? AND type = ? AND key_phase = 1 AND task_key = ? AND key_run_at <= NOW(3) AND pool = ?
     ORDER BY key_run_at LIMIT ${n})`;

/**
 * Runs fair dispatch for `type` (its registry row `reg` locked by the caller, `l` its limits) over
 * the permits of one pool, `batch` the claimable doorbell tasks of the type and pool already
 * locked by the claim. Returns what to claim instead; writes only the cursor.
 */
export async function fairSubstitute(
  db: Db,
  c: Conn,
  cell: string,
  type: string,
  pool: string,
  reg: Row,
  l: LimitSettings,
  permits: readonly FairPermit[],
): Promise<FairResult> {
  const need = permits.length;
  const cursor: FairCursor = {key: (reg.fair_key as string | null) ?? null, taken: Number(reg.fair_taken ?? 0)};
  const from = cursor.key ?? '';
  const keys = (await select(db, c, fairKeysSql('>=', need), [cell, type, from])).map((r) => r.task_key as string);
  if (keys.length < need && cursor.key !== null)
    for (const r of await select(db, c, fairKeysSql('<', need - keys.length), [cell, type, from])) keys.push(r.task_key as string);
  keys.sort();
  const fair: FairKey[] = keys.map((key) => ({key, available: Infinity}));
  if (l.maxRunningPerKey !== undefined && keys.length > 0) {
    const running = new Map<string, number>();
    for (const r of await select(
      db,
      c,
      `SELECT task_key, COUNT(*) AS n FROM tasks WHERE cell = ? AND type = ? AND key_phase = 2 AND task_key IN (${marks(keys.length)}) GROUP BY task_key`,
      [cell, type, ...keys],
    ))
      running.set(r.task_key as string, Number(r.n));
    for (const k of fair) k.available = Math.max(0, l.maxRunningPerKey - (running.get(k.key) ?? 0));
  }
  const weightOf = (key: string): number => l.keyWeights?.[key] ?? 1;
  const plan = fairPlan(fair, cursor, need, weightOf);
  const candidates: Array<{id: string; key: string}> = [];
  if (plan.take.length > 0) {
    const sql = plan.take.map((t) => keyTurnSql(2 * t.n)).join(' UNION ALL ');
    const params = plan.take.flatMap((t) => [cell, type, t.key, pool]);
    for (const r of await select(db, c, sql.replace(/SELECT id FROM/g, 'SELECT id, task_key FROM'), params))
      candidates.push({id: r.id as string, key: r.task_key as string});
  }
  const own = new Map(permits.filter((p) => !p.stale).map((p) => [p.id, p]));
  const fresh = candidates.filter((x) => !own.has(x.id)).map((x) => x.id);
  const locked = new Map<string, Row>();
  if (fresh.length > 0)
    for (const r of await select(db, c, `${claimSelectSql(fresh.length)} SKIP LOCKED`, [...fresh, cell]))
      if ((r.state === 'submitted' || r.state === 'failed') && Number(r.due) === 1) locked.set(r.id as string, r);
  // Each key's turn from its candidates this claim holds (its own doorbells' tasks, or locked now), in due order.
  const quota = new Map(plan.take.map((t) => [t.key, t.n]));
  const ids: string[] = [];
  for (const x of candidates) {
    const left = quota.get(x.key) ?? 0;
    if (left > 0 && (own.has(x.id) || locked.has(x.id))) {
      ids.push(x.id);
      quota.set(x.key, left - 1);
    }
  }
  // The doorbells of the batch's own tasks that were not picked lend their permit first, then the stale ones.
  const lenders = [...permits.filter((p) => !p.stale && !ids.includes(p.id)), ...permits.filter((p) => p.stale)];
  const picked: FairResult['picked'] = [];
  const lent = new Set<string>();
  for (const id of ids) {
    if (own.has(id)) {
      picked.push({id, row: null, via: null});
      continue;
    }
    const r = locked.get(id);
    const lender = lenders[lent.size];
    if (!r || !lender) continue;
    lent.add(lender.id);
    picked.push({id, row: r, via: lender.id});
  }
  // The cursor moves only as far as the plan went (a row lost to SKIP LOCKED is a key's task fewer: harmless).
  if (plan.take.length > 0)
    await exec(db, c, 'UPDATE task_types SET fair_key = ?, fair_taken = ? WHERE cell = ? AND type = ?', [
      plan.cursor.key,
      plan.cursor.taken,
      cell,
      type,
    ]);
  const pickedOwn = new Set(ids.filter((id) => own.has(id)));
  const leftDue = [...own.keys()].filter((id) => !pickedOwn.has(id) && lent.has(id));
  if (leftDue.length > 0)
    await exec(db, c, `UPDATE tasks SET published_at = NULL WHERE id IN (${marks(leftDue.length)}) AND cell = ?`, [...leftDue, cell]);
  return {
    picked,
    leftDue,
    unused: [...own.keys()].filter((id) => !pickedOwn.has(id) && !lent.has(id)),
    usedStale: permits.filter((p) => p.stale && lent.has(p.id)).map((p) => p.id),
  };
}
