/** HotPathStore.tasksInsert on MySQL: new tasks in one transaction, their big payloads stored apart. */
import type {NewTask} from '../../task/model.js';
import {type TaskState} from '../../task/state.js';
import type {InsertResult, TasksInsertParams} from '../types.js';
import {type Conn, type Db, type PoolConnection, driverCode, exec, isDataError, isLockRace, marks, select, tx} from './db.js';
import {AxError, errorMessage} from '../../errors.js';
import {PAYLOAD_APART, bodiesUpserts, chunkByBytes, packBig} from './payloads.js';
import {isGated, writeGated} from './task-gates.js';
import {WAITING_RUN_AT} from './links.js';

const MAX_DUP_RETRIES = 3;

/** What a row adds to its INSERT statement, for cutting a batch into statements (chunkByBytes). */
const rowBytes = (t: NewTask): number => t.payload.length + 256;

/**
 * Writes new tasks in one transaction (see HotPathStore.tasksInsert); a task's creation is its row
 * (created_at, submitted_by = `actor`): no history row is written for it.
 * `localNowMs` is the producer's clock now: a buffered task's remaining delay is
 * `submittedAt + delay − localNow`, added to the database's NOW(3). Payloads longer than
 * `inlineBytes` are compressed before the transaction and stored apart (payloads.ts) in it.
 * Params: up to a few thousand tasks. Returns which were inserted, already there, or in conflict.
 */
export async function tasksInsert(
  db: Db,
  cell: string,
  {tasks, actor, markPublished, beforeCommit}: TasksInsertParams,
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
  // One INSERT statement is atomic by itself: without payloads stored apart and within one
  // statement's bytes, the first (optimistic) attempt runs it on its own (autocommit), two round
  // trips fewer than START TRANSACTION … COMMIT — a quarter of a lone task's write at ordinary
  // load (issue 22). Whatever it runs into, nothing was written, and the transaction takes over.
  // A debounce or throttle is decided under its gate's row lock (task-gates.ts): in the transaction.
  // A caller that starts work before the commit (beforeCommit) needs the rows locked and not yet
  // committed: a transaction.
  const oneStatement =
    beforeCommit === undefined && bodies.size === 0 && chunkByBytes(tasks, rowBytes).length === 1 && !tasks.some(isGated);
  for (let attempt = 1; ; attempt++) {
    const autocommit = attempt === 1 && optimistic && oneStatement;
    try {
      if (autocommit) {
        await writeRows(db, db.pool, cell, tasks, actor, localNowMs, bodies, marked);
        return {inserted: tasks.map((t) => t.id), existing: [], conflicts: []};
      }
      return await tx(db, async (c) => {
        const result = await insertOnce(db, c, cell, tasks, actor, localNowMs, optimistic, bodies, marked);
        beforeCommit?.(result);
        return result;
      });
    } catch (e) {
      const code = driverCode(e);
      // Some id/key exists, or a concurrent producer inserted one between our SELECT and INSERT: re-read.
      if (code === 'ER_DUP_ENTRY' && attempt < MAX_DUP_RETRIES + 1) {
        optimistic = false;
        continue;
      }
      // The lone statement lost a lock race: the transaction, which retries its own, goes next.
      if (autocommit && isLockRace(e)) continue;
      if (isDataError(e)) throw new AxError('invalid_input', `ax's database refused a task of the batch: ${errorMessage(e)}`, {cause: e});
      throw e;
    }
  }
}

export async function insertOnce(
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
    if (tasks.some(isGated)) return gated(db, c, cell, tasks, actor, localNowMs, bodies, marked, result);
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
  }
  if (fresh.length === 0) return result;
  if (fresh.some(isGated)) return gated(db, c, cell, fresh, actor, localNowMs, bodies, marked, result);
  await writeRows(db, c, cell, fresh, actor, localNowMs, bodies, marked);
  result.inserted.push(...fresh.map((t) => t.id));
  return result;
}

/** Writes `fresh` (some with a debounce or throttle) through their gates; adds them to `result`. */
async function gated(
  db: Db,
  c: PoolConnection,
  cell: string,
  fresh: NewTask[],
  actor: string,
  localNowMs: number,
  bodies: ReadonlyMap<NewTask, Buffer>,
  marked: ReadonlySet<string>,
  result: InsertResult,
): Promise<InsertResult> {
  const {throttled, replaced} = await writeGated(db, c, cell, fresh, actor, localNowMs, (rows) =>
    writeRows(db, c, cell, rows, actor, localNowMs, bodies, marked),
  );
  const skip = new Set(throttled.map((x) => x.id));
  result.inserted.push(...fresh.filter((t) => !skip.has(t.id)).map((t) => t.id));
  if (throttled.length > 0) result.throttled = throttled;
  if (replaced.length > 0) result.replaced = replaced;
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
  c: Conn,
  cell: string,
  fresh: NewTask[],
  actor: string,
  localNowMs: number,
  bodies: ReadonlyMap<NewTask, Buffer>,
  marked: ReadonlySet<string>,
): Promise<void> {
  const apart: Array<[string, Buffer]> = [];
  // Several INSERTs when the payloads are big (STATEMENT_VALUE_BYTES), all in this transaction.
  for (const chunk of chunkByBytes(fresh, (t) => (bodies.has(t) ? 256 : rowBytes(t)))) {
    // The trace columns only in a statement with a traced task: untraced batches send what they did.
    const traced = chunk.some((t) => t.trace);
    const values: string[] = [];
    const params: unknown[] = [];
    // Dependencies and batches (links.ts) write three more columns; plain rows keep the plain INSERT.
    const linked = chunk.some((t) => t.linked !== undefined);
    for (const t of chunk) {
      // run_at: an absolute time as given, or the remaining delay added to the database clock; a
      // waiting task (parents or batch members left) WAITING_RUN_AT, which no due scan reaches.
      let runAtSql = 'NOW(3)';
      const runAtParams: unknown[] = [];
      if (t.linked && t.linked.depsLeft > 0) {
        runAtSql = `'${WAITING_RUN_AT}'`;
      } else if (t.runAtMs !== null) {
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
      values.push(
        `(?, ?, ?, ?, ?, 'submitted', 0, ?, ${runAtSql}, ?, 0, ?, ?, ?, NOW(3), NOW(3), ${publishedSql}, ?, ?, ?${traced ? ', ?, ?' : ''}${linked ? ', ?, ?, ?' : ''})`,
      );
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
        t.key,
      );
      if (traced) params.push(t.trace?.traceparent ?? null, t.trace?.tracestate ?? null);
      if (linked) params.push(t.linked?.depsLeft ?? 0, t.linked?.links ?? 0, t.linked?.batchId ?? null);
      const body = bodies.get(t);
      if (body) apart.push([t.id, body]);
    }
    await exec(
      db,
      c,
      `INSERT INTO tasks (id, cell, type, pool, priority, state, attempt, max_retries, run_at, timeout_ms, fence, dedup_key, schedule_name, content_hash, created_at, updated_at, published_at, payload, submitted_by, task_key${traced ? ', traceparent, tracestate' : ''}${linked ? ', deps_left, links, batch_id' : ''}) VALUES ${values.join(', ')}`,
      params,
    );
  }
  for (const b of bodiesUpserts(apart)) await exec(db, c, b.sql, b.params);
}
