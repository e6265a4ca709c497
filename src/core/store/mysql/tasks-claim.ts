/** HotPathStore.tasksClaim on MySQL: the claim's locking read, its flow step (admit-claim.ts) and its guarded UPDATE. */
import {TRANSITIONS, guardOf, type TaskState} from '../../task/state.js';
import type {ClaimResult, ClaimedTask, TasksClaimParams} from '../types.js';
import {type Db, type PoolConnection, type Row, exec, marks, select} from './db.js';
import {admitClaim, type ClaimRow} from './admit-claim.js';
import {clipError, historyInsert, parseReplay, type HistoryRow} from './rows.js';
import {type FencedRef, MARK_LEFT_UNRUNG, expectAffected, guardedWhere, txGuarded} from './guards.js';
import {PAYLOAD_BODY_LOCKED, payloadText} from './payloads.js';
import {doorbellsForgetSql} from './doorbells.js';

/**
 * The claim's locking read, with the stored-apart payloads of the rows (a primary-key lookup in
 * task_payloads for those only). Params: n ids, cell. Index: PRIMARY (a range of n points).
 */
export const claimSelectSql = (n: number): string =>
  `SELECT id, type, pool, priority, state, attempt, max_retries, retry_base, fence, timeout_ms, replay, payload, ${PAYLOAD_BODY_LOCKED}, parked,
          run_at <= NOW(3) AS due,
          TIMESTAMPDIFF(MICROSECOND, run_at, NOW(3)) AS late_us
     FROM tasks WHERE id IN (${marks(n)}) AND cell = ? FOR UPDATE`;

/**
 * The claim's UPDATE over the rows its read found claimable, each at the fence the read saw
 * (`fence` of `rows` is the fence before the claim). Guard from the table: source states, that
 * fence, and run_at due. It records the attempt's start on the row (worker, started_at): no
 * history row is written for a claim; the attempt's outcome row copies them. Exported for tests.
 */
export function claimUpdateSql(rows: readonly FencedRef[], worker: string, leaseMs: number): {sql: string; params: unknown[]} {
  const where = guardedWhere('claim', rows);
  return {
    sql: `UPDATE tasks SET state = '${TRANSITIONS.claim.to}', attempt = attempt + 1, fence = fence + 1, worker = ?, started_at = NOW(3),
                lease_until = NOW(3) + INTERVAL ? MICROSECOND, updated_at = NOW(3), parked = NULL, parked_at = NULL, ${MARK_LEFT_UNRUNG}
          WHERE ${where.sql}`,
    params: [worker, leaseMs * 1000, ...where.params],
  };
}

/**
 * Claims due submitted/failed tasks among `ids` (see HotPathStore.tasksClaim). One transaction: a locking
 * SELECT (rows in primary-key order, so concurrent claimers cannot deadlock on each other), the
 * flow step (admitClaim: the types' registry rows read with a shared lock, or for update for
 * `lockTypes`; pause, breaker and limits decided from them; the refused rows deferred, each with a
 * defer history row), one UPDATE (which records each attempt's start on its row: an attempt's
 * history row is written with its outcome), and a history INSERT only when rows were deferred
 * (or an early ring reset). The UPDATE carries its own guard
 * (state, the fence read, due), and must change exactly the rows the read decided on; otherwise the
 * transaction rolls back and the claim re-reads (AxError('conflict') after 5 tries).
 */
export async function tasksClaim(
  db: Db,
  cell: string,
  {ids, worker, leaseMs, lockTypes, admission}: TasksClaimParams,
): Promise<ClaimResult> {
  const unique = [...new Set(ids)].sort();
  if (unique.length === 0) return {claimed: [], skipped: []};
  const locked = new Set(lockTypes ?? []);
  return txGuarded(db, 'claim', async (c) => {
    const rows = await select(db, c, claimSelectSql(unique.length), [...unique, cell]);
    const found = new Map(rows.map((r) => [r.id as string, r]));
    const claimable = guardOf('claim').from;
    const claimed: ClaimedTask[] = [];
    const history: HistoryRow[] = [];
    const skipped: ClaimResult['skipped'] = [];
    const early: FencedRef[] = [];
    for (const id of unique) {
      const r = found.get(id);
      if (!r) {
        skipped.push({id, state: null});
        continue;
      }
      const state = r.state as TaskState;
      if (!claimable.includes(state)) {
        skipped.push({id, state});
        continue;
      }
      if (Number(r.due) !== 1) {
        skipped.push({id, state, notDue: true});
        early.push({id, fence: Number(r.fence)});
        continue;
      }
      const attempt = Number(r.attempt) + 1;
      claimed.push({
        id,
        type: r.type as string,
        pool: r.pool as ClaimedTask['pool'],
        priority: r.priority as ClaimedTask['priority'],
        payload: payloadText(r),
        attempt,
        maxRetries: Number(r.max_retries),
        retryBase: Number(r.retry_base),
        fence: Number(r.fence) + 1,
        timeoutMs: r.timeout_ms === null ? null : Number(r.timeout_ms),
        lateMs: Math.max(0, Number(r.late_us) / 1000),
        replay: parseReplay(r.replay as string | null),
      });
    }
    const deferred = await flowStep(db, c, cell, locked, admission, ids, claimed, found, worker, history);
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
    return deferred ? {claimed, skipped, deferred} : {claimed, skipped};
  });
}

/**
 * The flow step of a claim: the claimable rows, in the caller's order (delivery order: FIFO),
 * through admitClaim; the refused ones leave `claimed` (in place) and get a defer history row
 * (a transition, not an attempt) in `history`. Returns what was refused (undefined: nothing).
 */
async function flowStep(
  db: Db,
  c: PoolConnection,
  cell: string,
  lockTypes: ReadonlySet<string>,
  admission: TasksClaimParams['admission'],
  order: readonly string[],
  claimed: ClaimedTask[],
  found: ReadonlyMap<string, Row>,
  worker: string,
  history: HistoryRow[],
): Promise<ClaimResult['deferred']> {
  if (claimed.length === 0) return undefined;
  const byId = new Map(claimed.map((t) => [t.id, t]));
  const rows: ClaimRow[] = [];
  for (const id of new Set(order)) {
    const t = byId.get(id);
    if (t) rows.push({id, type: t.type, fence: t.fence - 1, prepaid: found.get(id)!.parked === 'rate'});
  }
  const refused = await admitClaim(db, c, cell, rows, lockTypes, admission);
  if (refused.size === 0) return undefined;
  for (const t of claimed) {
    const x = refused.get(t.id);
    if (x)
      history.push([t.id, found.get(t.id)!.state as TaskState, TRANSITIONS.defer.to, t.attempt - 1, worker, clipError(x.reason), null]);
  }
  for (let i = claimed.length - 1; i >= 0; i--) if (refused.has(claimed[i]!.id)) claimed.splice(i, 1);
  return [...refused.values()].map(({id, type, delayMs, parked, reason}) => ({id, type, delayMs, parked, reason}));
}
