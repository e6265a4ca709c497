import type {NewTask} from '../../task/model.js';
import {TRANSITIONS, guardOf, type TaskState} from '../../task/state.js';
import type {
  ClaimResult,
  ClaimedTask,
  HeldForDispatch,
  HoldsTakeParams,
  InsertResult,
  CancelledTask,
  LeasesRenewParams,
  StoppedAttempt,
  TasksCancelManyParams,
  TasksCancelParams,
  TasksClaimParams,
  TasksInsertParams,
} from '../types.js';
import {type Db, type PoolConnection, type Row, exec, isDataError, marks, select, tx} from './db.js';
import {admitClaim, type ClaimRow} from './admit-claim.js';
import {AxError, errorMessage} from '../../errors.js';
import {insertAudit} from './audit.js';
import {caseById, clipError, historyInsert, parseReplay, toDueTask, type HistoryRow} from './rows.js';
import {type FencedRef, MARK_LEFT_UNRUNG, expectAffected, fenceCondition, guardedWhere, inList, rungWhere, txGuarded} from './guards.js';
import {pickThenLock} from './pick-lock.js';
import {PAYLOAD_APART, PAYLOAD_BODY_LOCKED, bodiesUpserts, chunkByBytes, packBig, payloadText} from './payloads.js';
const MAX_DUP_RETRIES = 3;

/**
 * Writes new tasks in one transaction (see TaskStore.insertTasks); a task's creation is its row
 * (created_at, submitted_by = `actor`): no history row is written for it.
 * `localNowMs` is the producer's clock now: a buffered task's remaining delay is
 * `submittedAt + delay − localNow`, added to the database's NOW(3). Payloads longer than
 * `inlineBytes` are compressed before the transaction and stored apart (payloads.ts) in it.
 * Params: up to a few thousand tasks. Returns which were inserted, already there, or in conflict.
 */
export async function insertTasks(
  db: Db,
  cell: string,
  {tasks, actor, markPublished}: TasksInsertParams,
  localNowMs: number,
  inlineBytes: number,
): Promise<InsertResult> {
  const marked: ReadonlySet<string> = new Set(markPublished ?? []);
  const packed = await packBig(
    tasks.map((t) => t.payload),
    inlineBytes,
  );
  const bodies = new Map<NewTask, Buffer>([...packed].map(([i, body]) => [tasks[i]!, body]));
  // Fast path: a batch of fresh ids and keys (the usual case) is written without reading first;
  // a duplicate key error rolls it back and the careful path below sorts out what exists.
  const keys = tasks.flatMap((t) => (t.dedupKey === null ? [] : [t.dedupKey]));
  let optimistic = new Set(tasks.map((t) => t.id)).size === tasks.length && new Set(keys).size === keys.length;
  for (let attempt = 1; ; attempt++) {
    try {
      return await tx(db, (c) => insertOnce(db, c, cell, tasks, actor, localNowMs, optimistic, bodies, marked));
    } catch (e) {
      // Some id/key exists, or a concurrent producer inserted one between our SELECT and INSERT: re-read.
      if ((e as {code?: string}).code === 'ER_DUP_ENTRY' && attempt < MAX_DUP_RETRIES + 1) {
        optimistic = false;
        continue;
      }
      if (isDataError(e)) throw new AxError('invalid_input', `ax's database refused a task of the batch: ${errorMessage(e)}`, {cause: e});
      throw e;
    }
  }
}

async function insertOnce(
  db: Db,
  c: PoolConnection,
  cell: string,
  tasks: NewTask[],
  actor: string,
  localNowMs: number,
  optimistic: boolean,
  bodies: ReadonlyMap<NewTask, Buffer>,
  marked: ReadonlySet<string>,
): Promise<InsertResult> {
  const result: InsertResult = {inserted: [], existing: [], conflicts: []};
  if (tasks.length === 0) return result;
  if (optimistic) {
    await writeRows(db, c, cell, tasks, actor, localNowMs, bodies, marked);
    return {inserted: tasks.map((t) => t.id), existing: [], conflicts: []};
  }
  const byId = new Map<string, {hash: string; state: TaskState; fence: number; dedupKey: string | null}>();
  const byKey = new Map<string, {id: string; hash: string; state: TaskState; fence: number}>();
  const ids = [...new Set(tasks.map((t) => t.id))];
  for (const r of await select(
    db,
    c,
    `SELECT id, dedup_key, content_hash, state, fence FROM tasks WHERE id IN (${marks(ids.length)})`,
    ids,
  )) {
    byId.set(r.id as string, {
      hash: r.content_hash as string,
      state: r.state as TaskState,
      fence: Number(r.fence),
      dedupKey: r.dedup_key as string | null,
    });
  }
  const keys = [...new Set(tasks.flatMap((t) => (t.dedupKey === null ? [] : [t.dedupKey])))];
  if (keys.length > 0) {
    const rows = await select(
      db,
      c,
      `SELECT id, dedup_key, content_hash, state, fence FROM tasks WHERE cell = ? AND dedup_key IN (${marks(keys.length)})`,
      [cell, ...keys],
    );
    for (const r of rows)
      byKey.set(r.dedup_key as string, {
        id: r.id as string,
        hash: r.content_hash as string,
        state: r.state as TaskState,
        fence: Number(r.fence),
      });
  }

  const fresh: NewTask[] = [];
  for (const t of tasks) {
    const sameId = byId.get(t.id);
    const sameKey = t.dedupKey === null ? undefined : byKey.get(t.dedupKey);
    const found = sameId ? {id: t.id, hash: sameId.hash, state: sameId.state, fence: sameId.fence} : sameKey;
    if (found) {
      if (found.hash === t.contentHash && (!sameKey || sameKey.id === found.id)) {
        result.existing.push({id: t.id, existingId: found.id, state: found.state, fence: found.fence});
      } else {
        const what = t.dedupKey !== null && (!sameId || sameId.dedupKey === t.dedupKey) ? `dedup key "${t.dedupKey}"` : `id ${t.id}`;
        result.conflicts.push({id: t.id, existingId: found.id, reason: `${what} already exists with different content`});
      }
      continue;
    }
    // Later duplicates inside the same batch resolve against the first one.
    byId.set(t.id, {hash: t.contentHash, state: 'submitted', fence: 0, dedupKey: t.dedupKey});
    if (t.dedupKey !== null) byKey.set(t.dedupKey, {id: t.id, hash: t.contentHash, state: 'submitted', fence: 0});
    fresh.push(t);
    result.inserted.push(t.id);
  }
  if (fresh.length === 0) return result;
  await writeRows(db, c, cell, fresh, actor, localNowMs, bodies, marked);
  return result;
}

/**
 * The multi-row INSERTs of tasks (each with its submitter, `actor`: the row is the creation's
 * record, no history row is written) and their stored-apart payloads (`bodies`, when any). Rows
 * whose id is in `marked` are written published (published_at = NOW(3)): their caller rings them
 * right after the commit, and the mark costs no UPDATE of its own.
 */
async function writeRows(
  db: Db,
  c: PoolConnection,
  cell: string,
  fresh: NewTask[],
  actor: string,
  localNowMs: number,
  bodies: ReadonlyMap<NewTask, Buffer>,
  marked: ReadonlySet<string>,
): Promise<void> {
  const apart: Array<[string, Buffer]> = [];
  // Several INSERTs when the payloads are big (STATEMENT_VALUE_BYTES), all in this transaction.
  for (const chunk of chunkByBytes(fresh, (t) => (bodies.has(t) ? 0 : t.payload.length) + 256)) {
    const values: string[] = [];
    const params: unknown[] = [];
    for (const t of chunk) {
      // run_at: an absolute time as given, or the remaining delay added to the database clock.
      let runAtSql = 'NOW(3)';
      const runAtParams: unknown[] = [];
      if (t.runAtMs !== null) {
        runAtSql = '?';
        runAtParams.push(new Date(t.runAtMs));
      } else {
        const remaining = Math.max(0, t.submittedAtMs + t.delayMs - localNowMs);
        if (remaining > 0) {
          runAtSql = 'NOW(3) + INTERVAL ? MICROSECOND';
          runAtParams.push(remaining * 1000);
        }
      }
      const publishedSql = marked.has(t.id) ? 'NOW(3)' : 'NULL';
      values.push(`(?, ?, ?, ?, ?, 'submitted', 0, ?, ${runAtSql}, ?, 0, ?, ?, ?, NOW(3), NOW(3), ${publishedSql}, ?, ?)`);
      params.push(
        t.id,
        cell,
        t.type,
        t.pool,
        t.priority,
        t.maxRetries,
        ...runAtParams,
        t.timeoutMs,
        t.dedupKey,
        t.scheduleName ?? null,
        t.contentHash,
        bodies.has(t) ? PAYLOAD_APART : t.payload,
        actor,
      );
      const body = bodies.get(t);
      if (body) apart.push([t.id, body]);
    }
    await exec(
      db,
      c,
      `INSERT INTO tasks (id, cell, type, pool, priority, state, attempt, max_retries, run_at, timeout_ms, fence, dedup_key, schedule_name, content_hash, created_at, updated_at, published_at, payload, submitted_by) VALUES ${values.join(', ')}`,
      params,
    );
  }
  for (const b of bodiesUpserts(apart)) await exec(db, c, b.sql, b.params);
}

/** The doorbell mark (guard: rungWhere). Index: PRIMARY (a range of n points). */
export function markPublishedSql(rung: readonly FencedRef[]): {sql: string; params: unknown[]} {
  const guard = rungWhere(rung);
  return {sql: `UPDATE tasks SET published_at = NOW(3), sched_owner = NULL, sched_until = NULL WHERE ${guard.sql}`, params: guard.params};
}

/** Sets published_at = NOW(3) for tasks still unclaimed at the fence they were rung for. One statement. */
export async function markPublished(db: Db, rung: readonly FencedRef[]): Promise<void> {
  if (rung.length === 0) return;
  const q = markPublishedSql(rung);
  // In a transaction of its own so that deadlocks with claims are retried (the update is idempotent).
  await tx(db, (c) => exec(db, c, q.sql, q.params));
}

/** See HotPathStore.doorbellsForget: earlyResetSql (guard: still claimable at that fence), in a transaction of its own. */
export async function forgetPublished(db: Db, rung: readonly FencedRef[]): Promise<void> {
  if (rung.length === 0) return;
  const q = earlyResetSql(rung);
  await tx(db, (c) => exec(db, c, q.sql, q.params));
}

/**
 * Grace for brand-new immediate tasks written unpublished (by the relay, say): their writer
 * publishes them itself. A row whose fence moved (a doorbell forgotten after a failed publish, an
 * early ring reset) has no writer about to ring it and is taken at once.
 */
const PRODUCER_GRACE_US = 2_000_000;

/** The scheduler's hold of due-soon unrung rows (see holdForDispatch). Exported for the plan test. */
export function holdForDispatchSql(cell: string, {owner, horizonMs, holdMs, limit}: HoldsTakeParams): {sql: string; params: unknown[]} {
  return {
    // Forced: idx_tasks_due (state, run_at) looks as good to the optimizer, but its range holds
    // the rung, unclaimed backlog too, and this UPDATE locks every entry it reads.
    sql: `UPDATE tasks FORCE INDEX (idx_tasks_dispatch) SET sched_owner = ?, sched_until = GREATEST(run_at, NOW(3)) + INTERVAL ? MICROSECOND
      WHERE cell = ? AND published_at IS NULL AND state IN (${inList(guardOf('claim').from)}) AND run_at <= NOW(3) + INTERVAL ? MICROSECOND
        AND (sched_owner IS NULL OR sched_owner = ? OR sched_until < NOW(3))
        AND (state = 'failed' OR fence > 0 OR run_at > created_at OR created_at < NOW(3) - INTERVAL ${PRODUCER_GRACE_US} MICROSECOND)
      ORDER BY run_at LIMIT ?`,
    params: [owner, holdMs * 1000, cell, horizonMs * 1000, owner, limit],
  };
}

/**
 * See TaskStore.holdForDispatch. Two statements: one guarded UPDATE … ORDER BY run_at LIMIT n
 * (idx_tasks_dispatch (cell, published_at, run_at): the unrung rows, claimable only, see
 * MARK_LEFT_UNRUNG) and a read of the holds.
 */
export async function holdForDispatch(
  db: Db,
  cell: string,
  {owner, horizonMs, holdMs, limit}: HoldsTakeParams,
): Promise<HeldForDispatch[]> {
  const q = holdForDispatchSql(cell, {owner, horizonMs, holdMs, limit});
  // Deadlocks with claims and outcomes are retried by tx().
  await tx(db, (c) => exec(db, c, q.sql, q.params));
  const rows = await select(
    db,
    db.pool,
    `SELECT id, type, pool, priority, run_at, schedule_name, attempt, fence, dedup_key FROM tasks
      WHERE cell = ? AND sched_owner = ? AND published_at IS NULL AND state IN ('submitted', 'failed') ORDER BY run_at`,
    [cell, owner],
  );
  return rows.map(toDueTask);
}

export async function releaseDispatch(db: Db, cell: string, owner: string): Promise<number> {
  const r = await exec(db, db.pool, 'UPDATE tasks SET sched_owner = NULL, sched_until = NULL WHERE cell = ? AND sched_owner = ?', [
    cell,
    owner,
  ]);
  return r.affectedRows;
}

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
 * A doorbell that rang early (clock estimate off, or a stray publish) must not silence the task:
 * forget that it was rung so the scheduler rings again when it is due, and move the fence on so
 * that the early ring's late "published" mark (guarded by the fence it rang for) cannot land after
 * this reset. Guard: still claimable at the fence the read saw. Exported for tests.
 */
export function earlyResetSql(rows: readonly FencedRef[]): {sql: string; params: unknown[]} {
  const f = fenceCondition(rows);
  return {
    sql: `UPDATE tasks SET published_at = NULL, fence = fence + 1
          WHERE id IN (${marks(rows.length)}) AND state IN (${inList(guardOf('claim').from)}) AND ${f.sql}`,
    params: [...rows.map((r) => r.id), ...f.params],
  };
}

/**
 * Claims due submitted/failed tasks among `ids` (see TaskStore.claim). One transaction: a locking
 * SELECT (rows in primary-key order, so concurrent claimers cannot deadlock on each other), the
 * flow step (admitClaim: the types' registry rows read with a shared lock, or for update for
 * `lockTypes`; pause, breaker and limits decided from them; the refused rows deferred, each with a
 * defer history row), one UPDATE (which records each attempt's start on its row: an attempt's
 * history row is written with its outcome), and a history INSERT only when rows were deferred
 * (or an early ring reset). The UPDATE carries its own guard
 * (state, the fence read, due), and must change exactly the rows the read decided on; otherwise the
 * transaction rolls back and the claim re-reads (AxError('conflict') after 5 tries).
 */
export async function claim(db: Db, cell: string, {ids, worker, leaseMs, lockTypes, admission}: TasksClaimParams): Promise<ClaimResult> {
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
      const q = earlyResetSql(early);
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

/** Extends leases of rows still running with the given fences. Returns the ids renewed. */
export async function renewLeases(db: Db, {held, leaseMs}: LeasesRenewParams): Promise<string[]> {
  if (held.length === 0) return [];
  const fence = caseById(
    held.map((h) => [h.id, h.fence]),
    'NULL',
  );
  const ids = held.map((h) => h.id);
  return tx(db, async (c) => {
    await exec(
      db,
      c,
      `UPDATE tasks SET lease_until = NOW(3) + INTERVAL ? MICROSECOND
        WHERE id IN (${marks(ids.length)}) AND state = 'running' AND fence = ${fence.sql}`,
      [leaseMs * 1000, ...ids, ...fence.params],
    );
    const rows = await select(
      db,
      c,
      `SELECT id FROM tasks WHERE id IN (${marks(ids.length)}) AND state = 'running' AND fence = ${fence.sql}`,
      [...ids, ...fence.params],
    );
    return rows.map((r) => r.id as string);
  });
}

/**
 * See InspectStore.tasksCancelMany, read then locked (pickThenLock): the candidates, a plain read of
 * the type's rows in the states (idx_tasks_due, the type checked in the index); then per round one
 * transaction: the candidates by primary key FOR UPDATE, re-checked, guarded UPDATEs (cancel for
 * the waiting ones, cancelRunning at the fences read for the running ones; affectedRows must equal
 * the rows read, else it rolls back), one history INSERT, one audit row.
 */
export async function cancelMany(db: Db, cell: string, p: TasksCancelManyParams): Promise<CancelledTask[]> {
  const cancellable = [...guardOf('cancel').from, ...guardOf('cancelRunning').from];
  const states = p.states.filter((s) => cancellable.includes(s));
  if (states.length === 0) return [];
  const match = `cell = ? AND type = ? AND state IN (${marks(states.length)})`;
  return pickThenLock(
    p.limit,
    async (want) =>
      (await select(db, db.pool, `SELECT id FROM tasks WHERE ${match} ORDER BY id LIMIT ?`, [cell, p.type, ...states, want])).map(
        (r) => r.id as string,
      ),
    (ids) => cancelLocked(db, cell, p, match, states, ids),
  );
}

/** One round of cancelMany: the picked rows that still match, locked by primary key, cancelled. */
async function cancelLocked(
  db: Db,
  cell: string,
  p: TasksCancelManyParams,
  match: string,
  states: readonly TaskState[],
  picked: readonly string[],
): Promise<CancelledTask[]> {
  return tx(db, async (c) => {
    const rows = await select(
      db,
      c,
      `SELECT id, state, attempt, fence, worker, started_at FROM tasks WHERE id IN (${marks(picked.length)}) AND ${match} ORDER BY id FOR UPDATE`,
      [...picked, cell, p.type, ...states],
    );
    if (rows.length === 0) return [];
    const done = await cancelRows(db, c, cell, rows, {actor: p.actor, reason: p.reason, by: p.audit.operator});
    await insertAudit(
      db,
      c,
      cell,
      p.audit,
      done.map((d) => d.id),
    );
    return done;
  });
}

/**
 * Cancels `rows` (id, state, attempt, fence, worker, started_at; locked FOR UPDATE on `c`, each in
 * a state cancel or cancelRunning starts from): one guarded UPDATE per transition, affectedRows
 * checked (else AxError internal: the transaction rolls back), one history INSERT. A running row's
 * fence moves on (its worker's outcome becomes stale); its history row is the attempt's, like an
 * outcome's (the worker it ran on, its start), with the note `cancelled by <by>[: <reason>]`.
 */
async function cancelRows(
  db: Db,
  c: PoolConnection,
  cell: string,
  rows: readonly Row[],
  who: {actor: string; reason: string | null; by: string},
): Promise<CancelledTask[]> {
  const out: CancelledTask[] = [];
  const history: HistoryRow[] = [];
  const waiting: FencedRef[] = [];
  const running: FencedRef[] = [];
  const stoppedNote = clipError(`cancelled by ${who.by}${who.reason ? `: ${who.reason}` : ''}`);
  for (const r of rows) {
    const id = r.id as string;
    const from = r.state as TaskState;
    const attempt = Number(r.attempt);
    if (from === 'running') {
      running.push({id, fence: Number(r.fence)});
      out.push({id, from, stopped: {id, fence: Number(r.fence), attempt, worker: (r.worker as string | null) ?? null}});
      const ranOn = (r.worker as string | null) ?? who.actor;
      history.push([id, from, TRANSITIONS.cancelRunning.to, attempt, ranOn, stoppedNote, null, (r.started_at as Date | null) ?? null]);
    } else {
      waiting.push({id, fence: 0});
      out.push({id, from});
      history.push([id, from, TRANSITIONS.cancel.to, attempt, who.actor, clipError(who.reason), null]);
    }
  }
  const set = `finished_at = NOW(3), updated_at = NOW(3), lease_until = NULL`;
  for (const [t, refs, extra] of [
    ['cancel', waiting, MARK_LEFT_UNRUNG],
    ['cancelRunning', running, 'fence = fence + 1'],
  ] as const) {
    if (refs.length === 0) continue;
    const where = guardedWhere(t, refs);
    const res = await exec(db, c, `UPDATE tasks SET state = '${TRANSITIONS[t].to}', ${set}, ${extra} WHERE ${where.sql} AND cell = ?`, [
      ...where.params,
      cell,
    ]);
    if (res.affectedRows !== refs.length)
      throw new AxError('internal', `${t} changed ${res.affectedRows} rows, expected ${refs.length}: rolled back`);
  }
  const h = historyInsert(history);
  await exec(db, c, h.sql, h.params);
  return out;
}

/**
 * Cancels a submitted/failed task, and with `running` a running one (see InspectStore.tasksCancel),
 * with history, and the audit row when `audit` is given. Returns its previous state (null: unknown
 * id) and, for a running one, the attempt it stopped.
 */
export async function cancel(
  db: Db,
  cell: string,
  {id, actor, reason, audit, running}: TasksCancelParams,
): Promise<{from: TaskState | null; cancelled: boolean; stopped?: StoppedAttempt}> {
  return tx(db, async (c) => {
    const rows = await select(
      db,
      c,
      'SELECT id, state, attempt, fence, worker, started_at FROM tasks WHERE id = ? AND cell = ? FOR UPDATE',
      [id, cell],
    );
    const r = rows[0];
    if (!r) return {from: null, cancelled: false};
    const from = r.state as TaskState;
    const allowed = running === true && guardOf('cancelRunning').from.includes(from);
    if (!guardOf('cancel').from.includes(from) && !allowed) return {from, cancelled: false};
    const [done] = await cancelRows(db, c, cell, rows, {actor, reason, by: audit?.operator ?? actor});
    if (audit) await insertAudit(db, c, cell, audit, [id]);
    return done?.stopped ? {from, cancelled: true, stopped: done.stopped} : {from, cancelled: true};
  });
}
