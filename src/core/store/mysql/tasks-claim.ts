/** HotPathStore.tasksClaim on MySQL: the claim's locking read, its flow step (admit-claim.ts) and its guarded UPDATE. */
import {TRANSITIONS, guardOf, type TaskState} from '../../task/state.js';
import type {ClaimResult, ClaimedTask, TasksClaimParams} from '../types.js';
import {type Db, type PoolConnection, type Row, exec, select} from './db.js';
import {admitClaim, type ClaimRow} from './admit-claim.js';
import {clipError, historyInsert, parseReplay, traceField, type HistoryRow} from './rows.js';
import {type FencedRef, expectAffected, txGuarded} from './guards.js';
import {payloadText} from './payloads.js';
import {claimSelectSql, claimUpdateSql} from './claim-sql.js';
import {claimFast} from './claim-fast.js';
import {doorbellsForgetSql} from './doorbells.js';
import type {FairPermit} from './fair-claim.js';

export {claimSelectSql, claimUpdateSql};

/**
 * The largest batch the fast path takes. It is for latency at ordinary load, where a claim holds a
 * few ids; a big batch (a backlog) spends its time in the rows, not the round trips, and there the
 * fast UPDATE's subquery per row cost P1 1.5 % in a same-run compare (docs/benchmarks.md).
 */
const FAST_CLAIM_MAX = 64;

/**
 * Claims due submitted/failed tasks among `ids` (see HotPathStore.tasksClaim). A batch of at most
 * FAST_CLAIM_MAX ids with no type in `lockTypes` or `fairTypes` first tries the fast path
 * (claim-fast.ts: a plain read and one autocommit UPDATE that decides pause and breaker itself);
 * what it leaves goes to the full claim. The full claim is one transaction: a locking SELECT (rows
 * in primary-key order, so concurrent claimers cannot deadlock on each other), the flow step
 * (admitClaim: the types' registry rows read with a shared lock, or for update for `lockTypes`;
 * fair dispatch for `fairTypes`, which may claim other tasks of the type on the batch's keyed
 * doorbells; pause, breaker and limits decided from the rows; the refused rows deferred, each with
 * a defer history row), one UPDATE (which records each attempt's start on its
 * row: an attempt's history row is written with its outcome), and a history INSERT only when rows
 * were deferred (or an early ring reset). The UPDATE carries its own guard (state, the fence read,
 * due), and must change exactly the rows the read decided on; otherwise the transaction rolls back
 * and the claim re-reads (AxError('conflict') after 5 tries).
 */
export async function tasksClaim(
  db: Db,
  cell: string,
  {ids, worker, leaseMs, lockTypes, fairTypes, admission}: TasksClaimParams,
): Promise<ClaimResult> {
  if (ids.length === 0) return {claimed: [], skipped: []};
  const locked = new Set(lockTypes ?? []);
  const fair = new Set(fairTypes ?? []);
  if (locked.size === 0 && fair.size === 0 && ids.length <= FAST_CLAIM_MAX) {
    const fast = await claimFast(db, cell, [...new Set(ids)], worker, leaseMs, toClaimed);
    if (fast) {
      if (fast.rest.length === 0) return fast.result;
      const more = await claimFull(db, cell, fast.rest, worker, leaseMs, locked, fair, admission);
      return {...more, claimed: [...fast.result.claimed, ...more.claimed], skipped: [...fast.result.skipped, ...more.skipped]};
    }
  }
  return claimFull(db, cell, ids, worker, leaseMs, locked, fair, admission);
}

/** The full claim, in one transaction (see tasksClaim). */
function claimFull(
  db: Db,
  cell: string,
  ids: readonly string[],
  worker: string,
  leaseMs: number,
  locked: ReadonlySet<string>,
  fair: ReadonlySet<string>,
  admission: TasksClaimParams['admission'],
): Promise<ClaimResult> {
  const unique = [...new Set(ids)].sort();
  return txGuarded(db, 'claim', async (c) => {
    const rows = await select(db, c, claimSelectSql(unique.length), [...unique, cell]);
    const found = new Map(rows.map((r) => [r.id as string, r]));
    const claimable = guardOf('claim').from;
    const claimed: ClaimedTask[] = [];
    const history: HistoryRow[] = [];
    const skipped: ClaimResult['skipped'] = [];
    const early: FencedRef[] = [];
    // Keyed doorbells of fair types, in delivery order: permits for fair dispatch (fair-claim.ts).
    const permits = new Map<string, FairPermit[]>();
    const permit = (r: Row, stale: boolean): void => {
      if (!fair.has(r.type as string) || r.task_key === null) return;
      const list = permits.get(r.type as string) ?? permits.set(r.type as string, []).get(r.type as string)!;
      list.push({id: r.id as string, pool: r.pool as string, key: r.task_key as string, stale});
    };
    for (const id of new Set(ids)) {
      const r = found.get(id);
      if (!r) {
        skipped.push({id, state: null});
        continue;
      }
      const state = r.state as TaskState;
      if (!claimable.includes(state)) {
        skipped.push({id, state});
        permit(r, true);
        continue;
      }
      if (Number(r.due) !== 1) {
        skipped.push({id, state, notDue: true});
        early.push({id, fence: Number(r.fence)});
        continue;
      }
      permit(r, false);
      claimed.push(toClaimed(r));
    }
    const step = await flowStep(db, c, cell, locked, permits, admission, claimed, found, worker, history);
    if (step.usedStale.size > 0) for (let i = skipped.length - 1; i >= 0; i--) if (step.usedStale.has(skipped[i]!.id)) skipped.splice(i, 1);
    if (early.length > 0) {
      const q = doorbellsForgetSql(early);
      await exec(db, c, q.sql, q.params);
    }
    if (claimed.length > 0) {
      const q = claimUpdateSql(
        claimed.map((t) => ({id: t.id, fence: t.fence - 1})),
        worker,
        leaseMs,
      );
      expectAffected(await exec(db, c, q.sql, q.params), claimed.length, 'claim');
    }
    if (history.length > 0) {
      const h = historyInsert(history);
      await exec(db, c, h.sql, h.params);
    }
    const out: ClaimResult = step.deferred ? {claimed, skipped, deferred: step.deferred} : {claimed, skipped};
    if (step.swapped.size > 0)
      out.unrung = [...step.swapped].map((id) => {
        const r = found.get(id)!;
        return {
          id,
          type: r.type as string,
          pool: r.pool as ClaimedTask['pool'],
          priority: r.priority as ClaimedTask['priority'],
          fence: Number(r.fence),
        };
      });
    return out;
  });
}

/** A claimable, due row of the claim's locking read as the task the worker runs (attempt and fence after the claim). */
function toClaimed(r: Row): ClaimedTask {
  return {
    id: r.id as string,
    type: r.type as string,
    pool: r.pool as ClaimedTask['pool'],
    priority: r.priority as ClaimedTask['priority'],
    payload: payloadText(r),
    attempt: Number(r.attempt) + 1,
    maxRetries: Number(r.max_retries),
    retryBase: Number(r.retry_base),
    fence: Number(r.fence) + 1,
    timeoutMs: r.timeout_ms === null ? null : Number(r.timeout_ms),
    lateMs: Math.max(0, Number(r.late_us) / 1000),
    replay: parseReplay(r.replay as string | null),
    // Only a row with a trace context has one (a malformed one, written by hand, is left out).
    ...(r.traceparent === null ? {} : traceField(r)),
    // Dependencies and batches (links.ts): carried to the outcome; absent on plain tasks.
    ...(Number(r.links ?? 0) === 0 ? {} : {links: Number(r.links)}),
    ...(r.batch_id === null || r.batch_id === undefined ? {} : {batchId: r.batch_id as string}),
  };
}

/**
 * The flow step of a claim: the claimable rows, in the caller's order (delivery order: FIFO),
 * through admitClaim. Fair dispatch may swap tasks: those it picks instead join `claimed` (with
 * `via`, the doorbell they came in on), the batch tasks whose doorbell it lent leave it (still
 * due). The refused ones leave `claimed` (in place) and get a defer history row (a transition, not
 * an attempt) in `history`. Returns what was refused (undefined: nothing) and the stale doorbells
 * fair dispatch used (no longer skipped: their doorbell is acked with the task it went to).
 */
async function flowStep(
  db: Db,
  c: PoolConnection,
  cell: string,
  lockTypes: ReadonlySet<string>,
  permits: ReadonlyMap<string, FairPermit[]>,
  admission: TasksClaimParams['admission'],
  claimed: ClaimedTask[],
  found: Map<string, Row>,
  worker: string,
  history: HistoryRow[],
): Promise<{deferred: ClaimResult['deferred']; usedStale: ReadonlySet<string>; swapped: ReadonlySet<string>}> {
  if (claimed.length === 0 && permits.size === 0) return {deferred: undefined, usedStale: new Set(), swapped: new Set()};
  const rows: ClaimRow[] = claimed.map((t) => claimRowOf(found.get(t.id)!));
  const r = await admitClaim(db, c, cell, rows, lockTypes, admission, permits, new Set(found.keys()));
  // Fair dispatch: the batch tasks whose doorbell went to another task leave the claim, still due.
  if (r.swapped.size > 0) for (let i = claimed.length - 1; i >= 0; i--) if (r.swapped.has(claimed[i]!.id)) claimed.splice(i, 1);
  for (const p of r.picked) {
    found.set(p.row.id as string, p.row);
    claimed.push({...toClaimed(p.row), via: p.via});
  }
  const refused = r.refused;
  if (refused.size === 0) return {deferred: undefined, usedStale: r.usedStale, swapped: r.swapped};
  for (const t of claimed) {
    const x = refused.get(t.id);
    if (x)
      history.push([t.id, found.get(t.id)!.state as TaskState, TRANSITIONS.defer.to, t.attempt - 1, worker, clipError(x.reason), null]);
  }
  for (let i = claimed.length - 1; i >= 0; i--) if (refused.has(claimed[i]!.id)) claimed.splice(i, 1);
  return {
    deferred: [...refused.values()].map(({id, type, delayMs, parked, reason}) => ({id, type, delayMs, parked, reason})),
    usedStale: r.usedStale,
    swapped: r.swapped,
  };
}

/** A locked, claimable row as the flow step reads it. */
export function claimRowOf(r: Row): ClaimRow {
  const parked = r.parked as string | null;
  return {
    id: r.id as string,
    type: r.type as string,
    key: (r.task_key as string | null) ?? null,
    pool: r.pool as string,
    fence: Number(r.fence),
    prepaid: parked === 'rate' || parked === 'key-rate' ? parked : null,
  };
}
