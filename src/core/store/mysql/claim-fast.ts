/**
 * The claim's fast path (issue 22): two statements and no transaction for the usual batch, whose
 * tasks are all due and claimable and whose types have nothing for the flow step to decide but
 * pause and breaker. The full claim (tasks-claim.ts) takes five round trips — START TRANSACTION,
 * the locking read, the types' shared read, the UPDATE, COMMIT — which were the largest step
 * between submit and handler start at ordinary load (docs/benchmarks.md, "Latency at ordinary load").
 *
 * 1. A plain read of the rows (a consistent read: no locks), as the full claim reads them.
 * 2. One autocommit UPDATE, the claim's own, guarded per row by the state, the fence the read saw
 *    and a due run_at, plus the flow step's pause and breaker decision as a condition on the type's
 *    registry row: `NOT EXISTS (… paused = 1 OR breaker_state <> 'closed')`. An UPDATE's subquery
 *    reads with a shared lock (REPEATABLE READ), so it waits for a pause or a breaker transition in
 *    progress and sees it once committed, as the full claim's LOCK IN SHARE MODE does: the exactness
 *    of pause and breaker is kept. A type without a registry row runs, as in the full claim.
 *
 * A payload stored apart takes the full claim: its body is read with a shared lock after the row's
 * (PAYLOAD_BODY_LOCKED), so a body rewritten under a row lock is read as committed; a plain read
 * could return the older one, which no column of the row would tell.
 *
 * Only for a batch of at most FAST_CLAIM_MAX ids with no type the caller locks or shares fairly
 * (tasksClaim decides). Returns undefined (nothing written) when a row is not found (its INSERT may
 * not be committed yet: the full claim's locking read waits for it), not yet due (its doorbell must
 * be forgotten, which the full claim does), has its payload stored apart, or when the UPDATE lost a
 * lock race (deadlock, lock wait timeout). When the UPDATE changed fewer rows than the read decided
 * on (a pause, an open breaker, a row that moved), the rows it did claim are told apart by a re-read
 * (ours: running, at the read's fence + 1, with this worker) and the rest go to the full claim,
 * whose flow step defers them with why.
 */
import {TRANSITIONS, guardOf, type TaskState} from '../../task/state.js';
import type {ClaimResult, ClaimedTask} from '../types.js';
import {type Db, type ResultSetHeader, type Row, exec, isLockRace, marks, select} from './db.js';
import {claimFastUpdateSql, claimReadSql} from './claim-sql.js';
import {PAYLOAD_APART} from './payloads.js';

export interface FastClaim {
  /** What the fast path settled: the rows it claimed, and the ids it found unclaimable. */
  result: ClaimResult;
  /** Claimable ids it could not claim (the UPDATE passed them by): for the full claim. */
  rest: string[];
}

/**
 * Tries the fast path for `ids` (unique, in the caller's order: `claimed` keeps it); see the module
 * comment. `toClaimed` turns a read row into the task the worker runs. Undefined: nothing was
 * written, use the full claim.
 */
export async function claimFast(
  db: Db,
  cell: string,
  ids: readonly string[],
  worker: string,
  leaseMs: number,
  toClaimed: (r: Row) => ClaimedTask,
): Promise<FastClaim | undefined> {
  const rows = await select(db, db.pool, claimReadSql(ids.length), [...ids, cell]);
  const claimable = guardOf('claim').from;
  const candidates: Row[] = [];
  const skipped: ClaimResult['skipped'] = [];
  const found = new Map(rows.map((r) => [r.id as string, r]));
  for (const id of ids) {
    const r = found.get(id);
    // Not found may be not committed yet (the producer rings alongside its COMMIT): the full
    // claim's locking read waits for the row's lock.
    if (!r) return undefined;
    const state = r.state as TaskState;
    if (!claimable.includes(state)) {
      skipped.push({id, state});
      continue;
    }
    // Not yet due (the full claim forgets its doorbell), or a body stored apart (read there under a lock).
    if (Number(r.due) !== 1 || r.payload === PAYLOAD_APART) return undefined;
    candidates.push(r);
  }
  if (candidates.length === 0) return {result: {claimed: [], skipped}, rest: []};
  const q = claimFastUpdateSql(
    candidates.map((r) => ({id: r.id as string, fence: Number(r.fence)})),
    worker,
    leaseMs,
    cell,
  );
  let res: ResultSetHeader;
  try {
    res = await exec(db, db.pool, q.sql, q.params);
  } catch (e) {
    // A lost lock race (with a pause, say) rolled the lone statement back: the full claim retries its own.
    if (isLockRace(e)) return undefined;
    throw e;
  }
  if (res.affectedRows === candidates.length) return {result: {claimed: candidates.map(toClaimed), skipped}, rest: []};
  // Some rows were passed by: tell ours apart (only one UPDATE can move a row from the fence read).
  const after = await select(
    db,
    db.pool,
    `SELECT id, state, fence, worker FROM tasks WHERE id IN (${marks(candidates.length)})`,
    candidates.map((r) => r.id),
  );
  const ours = new Set(
    after
      .filter(
        (a) => a.state === TRANSITIONS.claim.to && a.worker === worker && Number(a.fence) === Number(found.get(a.id as string)!.fence) + 1,
      )
      .map((a) => a.id as string),
  );
  return {
    result: {claimed: candidates.filter((r) => ours.has(r.id as string)).map(toClaimed), skipped},
    rest: candidates.filter((r) => !ours.has(r.id as string)).map((r) => r.id as string),
  };
}
