/**
 * Fair dispatch in a claim's transaction (policy: core/flow/fair.ts). For a fair type whose
 * registry row the claim holds for update, the keyed doorbells of the batch are permits: each key
 * (those with due tasks the claim sees, and its doorbells' own) gets a share of them by weight
 * (fairShares); the doorbells' own tasks are taken while their key is within its share, and the
 * rest of the permits are lent round-robin, from the cursor on the row, to keys below their share
 * (fairPlan), whose oldest due tasks are claimed instead. Doorbells that already spread fairly
 * swap nothing; a flooding key gets its share and the other keys the rest. Statements, each one
 * round trip whatever the batch, none when the doorbells name each key once (a share is at least
 * one): the keys with due tasks after the cursor (and from the start, when that wraps), the running
 * count of the keys with a per-key cap; and when some key is over its share: the tasks of each
 * lending turn (one UNION ALL), a locking read of them (SKIP LOCKED: a row another claim holds is
 * left to it), the cursor's UPDATE and the unrung mark of the lenders. All over idx_tasks_key.
 * Priority levels are not looked at: a doorbell lent from one level runs the other key's task there.
 */
import {fairPlan, fairShares, type FairCursor, type FairKey} from '../../flow/fair.js';
import {keyWeight, type LimitSettings} from '../../flow/limits.js';
import {type Conn, type Db, exec, marks, type Row, select} from './db.js';
import {claimSelectSql} from './claim-sql.js';

/** A keyed doorbell of a fair type in the batch: its task (claimable and due, or `stale`: running or ended). */
export interface FairPermit {
  id: string;
  pool: string;
  /** Its task's key (permits are keyed doorbells). */
  key: string | null;
  stale: boolean;
}

export interface FairResult {
  /**
   * The tasks to claim, in turn order: a batch task by itself (row null: the caller has it), or
   * another task (its row locked, as claimSelectSql reads it) with the permit it came in on.
   */
  picked: Array<{id: string; row: Row | null; via: string | null}>;
  /**
   * Claimable doorbell tasks of the batch not taken (their doorbell went to another key's task, or
   * there was none to lend it to): they stay due and are marked unrung (published_at NULL), and
   * the caller rings them again (else the scheduler does): no task is left due without a doorbell.
   */
  leftDue: string[];
  /** Claimable doorbell tasks of the batch not taken because their key is at its per-key cap: the caller defers them. */
  unused: string[];
  /** The round robin's position after this claim (the caller's next pool plans from it). */
  cursor: FairCursor;
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
 * the permits of one pool; `batch` every id of the claim (locked by it). Returns what to claim;
 * writes the cursor and the unrung mark of the tasks whose doorbell it lent.
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
  batch: ReadonlySet<string>,
): Promise<FairResult> {
  const need = permits.length;
  // A share is at least one: doorbells naming each key once keep their own tasks, with nothing to
  // read (the usual case with many keys). Only a key named twice can be over its share.
  const named = new Map<string, number>();
  for (const p of permits) if (!p.stale && p.key !== null) named.set(p.key, (named.get(p.key) ?? 0) + 1);
  if ([...named.values()].every((n) => n <= 1))
    return {
      picked: permits.filter((p) => !p.stale && p.key !== null).map((p) => ({id: p.id, row: null, via: null})),
      cursor: {key: (reg.fair_key as string | null) ?? null, taken: Number(reg.fair_taken ?? 0)},
      leftDue: [],
      unused: [],
      usedStale: [],
    };
  const cursor: FairCursor = {key: (reg.fair_key as string | null) ?? null, taken: Number(reg.fair_taken ?? 0)};
  const from = cursor.key ?? '';
  const keys = (await select(db, c, fairKeysSql('>=', need + 1), [cell, type, from])).map((r) => r.task_key as string);
  if (keys.length < need + 1 && cursor.key !== null)
    for (const r of await select(db, c, fairKeysSql('<', need + 1 - keys.length), [cell, type, from])) keys.push(r.task_key as string);
  const own = permits.filter((p) => !p.stale && p.key !== null);
  const all = [...new Set([...keys, ...own.map((p) => p.key!)])].sort();
  const weightOf = (key: string): number => keyWeight(l, key);
  const share = fairShares(need, all, weightOf);
  /** Keys whose share the per-key cap cut: their tasks beyond it wait in storage (the caller defers them). */
  const atCap = new Set<string>();
  if (l.maxRunningPerKey !== undefined && all.length > 0) {
    const running = new Map<string, number>();
    for (const r of await select(
      db,
      c,
      `SELECT task_key, COUNT(*) AS n FROM tasks WHERE cell = ? AND type = ? AND key_phase = 2 AND task_key IN (${marks(all.length)}) GROUP BY task_key`,
      [cell, type, ...all],
    ))
      running.set(r.task_key as string, Number(r.n));
    for (const k of all) {
      const room = Math.max(0, l.maxRunningPerKey - (running.get(k) ?? 0));
      if (room < share.get(k)!) {
        share.set(k, room);
        atCap.add(k);
      }
    }
  }
  // The doorbells' own tasks first, each key within its share, in delivery order.
  const taken = new Map<string, number>();
  const ids: string[] = [];
  for (const p of own) {
    const n = taken.get(p.key!) ?? 0;
    if (n < share.get(p.key!)!) {
      taken.set(p.key!, n + 1);
      ids.push(p.id);
    }
  }
  // The rest of the doorbells lent round-robin to the keys below their share.
  const lendable = need - ids.length;
  const fair: FairKey[] = all.map((key) => ({key, available: share.get(key)! - (taken.get(key) ?? 0)}));
  const plan = lendable > 0 ? fairPlan(fair, cursor, lendable, weightOf) : {take: [], cursor};
  const candidates: Array<{id: string; key: string}> = [];
  if (plan.take.length > 0) {
    const sql = plan.take.map((t) => keyTurnSql(2 * t.n + (taken.get(t.key) ?? 0))).join(' UNION ALL ');
    const params = plan.take.flatMap((t) => [cell, type, t.key, pool]);
    for (const r of await select(db, c, sql.replace(/SELECT id FROM/g, 'SELECT id, task_key FROM'), params))
      candidates.push({id: r.id as string, key: r.task_key as string});
  }
  const mine = new Set(ids);
  // Never a task of the batch (its own, or one rung early: already locked by this claim, so SKIP
  // LOCKED would not skip it, and its doorbell is forgotten by the claim).
  const fresh = candidates.filter((x) => !batch.has(x.id)).map((x) => x.id);
  const locked = new Map<string, Row>();
  if (fresh.length > 0)
    for (const r of await select(db, c, `${claimSelectSql(fresh.length)} SKIP LOCKED`, [...fresh, cell]))
      if ((r.state === 'submitted' || r.state === 'failed') && Number(r.due) === 1) locked.set(r.id as string, r);
  // Each lending turn from the tasks this claim can hold (locked now), in due order.
  const quota = new Map(plan.take.map((t) => [t.key, t.n]));
  const lentTo: string[] = [];
  for (const x of candidates) {
    const left = quota.get(x.key) ?? 0;
    if (left > 0 && locked.has(x.id) && !mine.has(x.id)) {
      lentTo.push(x.id);
      quota.set(x.key, left - 1);
    }
  }
  // Stale doorbells (their task running or ended) lend first, then those of the batch's own tasks
  // over their share; never a task of a key at its cap (it waits in storage, deferred by the caller).
  const lenders = [...permits.filter((p) => p.stale), ...own.filter((p) => !mine.has(p.id) && !atCap.has(p.key!))];
  const picked: FairResult['picked'] = ids.map((id) => ({id, row: null, via: null}));
  const lent = new Set<string>();
  for (const id of lentTo) {
    const lender = lenders[lent.size];
    if (!lender) break;
    lent.add(lender.id);
    picked.push({id, row: locked.get(id)!, via: lender.id});
  }
  // A doorbell of the batch that found no other task to go to (the keys below their share had
  // none this claim could hold, or none in this pool) takes its own task after all.
  for (const p of own)
    if (!mine.has(p.id) && !lent.has(p.id) && !atCap.has(p.key!)) {
      mine.add(p.id);
      picked.push({id: p.id, row: null, via: null});
    }
  // The cursor moves only as far as the lending went (a row lost to SKIP LOCKED is a key's task fewer: harmless).
  if (plan.take.length > 0)
    await exec(db, c, 'UPDATE task_types SET fair_key = ?, fair_taken = ? WHERE cell = ? AND type = ?', [
      plan.cursor.key,
      plan.cursor.taken,
      cell,
      type,
    ]);
  // Not taken: those whose doorbell went to another key's task stay due, unrung, and the caller
  // rings them again; those of a key at its cap wait in storage (deferred by the caller).
  const notTaken = own.filter((p) => !mine.has(p.id));
  const leftDue = notTaken.filter((p) => lent.has(p.id)).map((p) => p.id);
  if (leftDue.length > 0)
    await exec(db, c, `UPDATE tasks SET published_at = NULL WHERE id IN (${marks(leftDue.length)}) AND cell = ?`, [...leftDue, cell]);
  return {
    picked,
    leftDue,
    cursor: plan.cursor,
    unused: notTaken.filter((p) => !lent.has(p.id)).map((p) => p.id),
    usedStale: permits.filter((p) => p.stale && lent.has(p.id)).map((p) => p.id),
  };
}
