import type {ForcedReplay, HistoryEntry, JsonObject, JsonValue, PoolName, Priority, TaskRecord} from '../../task/model.js';
import type {TaskState} from '../../task/state.js';
import type {Row} from './db.js';
import {PAYLOAD_BODY_COLUMN, payloadText} from './payloads.js';
import type {DeadErrorGroup, HeldForDispatch} from '../types.js';
import {type TraceContext, traceContextOf} from '../../trace-context.js';

/** Columns of `tasks` read into a TaskRecord (payload last: it may be large; a stored-apart one comes with it). */
export const TASK_COLUMNS = `id, cell, type, pool, priority, state, attempt, max_retries, retry_base, run_at, timeout_ms, lease_until, fence, worker, started_at, submitted_by, dedup_key, task_key, last_error, published_at, created_at, updated_at, finished_at, traceparent, tracestate, progress, progress_note, progress_at, payload, ${PAYLOAD_BODY_COLUMN}`;

/** TASK_COLUMNS with the stored result (≤ 64 KiB): for reads of single tasks, not lists. */
export const TASK_RESULT_COLUMNS = `${TASK_COLUMNS}, result_json`;

/** A payload column as an object ({} when unreadable: written by ax, so only after a manual edit). */
export function parsePayload(text: string): JsonObject {
  try {
    return JSON.parse(text) as JsonObject;
  } catch {
    return {};
  }
}

/** A result_json column as its value (null for none, or for text ax did not write). */
export function parseResult(text: string | null | undefined): JsonValue | null {
  if (text === null || text === undefined) return null;
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return null;
  }
}

/** The `replay` column (JSON {by, at, reason} of a forced replay) as the handler sees it; null when absent or unreadable. */
export function parseReplay(text: string | null): ForcedReplay | null {
  if (text === null) return null;
  try {
    const o = JSON.parse(text) as {by?: unknown; at?: unknown; reason?: unknown};
    if (typeof o.by !== 'string' || typeof o.at !== 'string' || typeof o.reason !== 'string') return null;
    return {by: o.by, at: new Date(o.at), reason: o.reason};
  } catch {
    return null;
  }
}

export function toTaskRecord(r: Row): TaskRecord {
  return {
    id: r.id as string,
    cell: r.cell as string,
    type: r.type as string,
    pool: r.pool as PoolName,
    priority: r.priority as Priority,
    state: r.state as TaskState,
    attempt: Number(r.attempt),
    maxRetries: Number(r.max_retries),
    retryBase: Number(r.retry_base ?? 0),
    runAt: r.run_at as Date,
    timeoutMs: r.timeout_ms === null ? null : Number(r.timeout_ms),
    leaseUntil: (r.lease_until as Date | null) ?? null,
    fence: Number(r.fence),
    worker: (r.worker as string | null) ?? null,
    startedAt: (r.started_at as Date | null) ?? null,
    submittedBy: (r.submitted_by as string | null) ?? null,
    dedupKey: (r.dedup_key as string | null) ?? null,
    key: (r.task_key as string | null) ?? null,
    lastError: (r.last_error as string | null) ?? null,
    publishedAt: (r.published_at as Date | null) ?? null,
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
    finishedAt: (r.finished_at as Date | null) ?? null,
    payload: parsePayload(payloadText(r)),
    progress: r.progress === null || r.progress === undefined ? null : Number(r.progress),
    progressNote: (r.progress_note as string | null | undefined) ?? null,
    progressAt: (r.progress_at as Date | null | undefined) ?? null,
    ...('result_json' in r ? {result: parseResult(r.result_json as string | null)} : {}),
    ...traceField(r),
  };
}

/** `trace` of a row with a valid traceparent; nothing (no property) otherwise. */
export function traceField(r: Row): {trace?: TraceContext} {
  const trace = typeof r.traceparent === 'string' ? traceContextOf(r.traceparent, r.tracestate) : null;
  return trace ? {trace} : {};
}

/** A row of a per type × error count (columns type, error, n, first_seen, last_seen, sample_id). */
export function toErrorGroup(r: Row): DeadErrorGroup {
  return {
    type: r.type as string,
    error: (r.error as string | null) ?? null,
    count: Number(r.n),
    firstSeen: r.first_seen as Date,
    lastSeen: r.last_seen as Date,
    sampleId: r.sample_id as string,
  };
}

export function toHistoryEntry(r: Row): HistoryEntry {
  return {
    taskId: r.task_id as string,
    from: (r.from_state as TaskState | null) ?? null,
    to: r.to_state as TaskState,
    attempt: Number(r.attempt),
    worker: (r.worker as string | null) ?? null,
    at: r.at as Date,
    error: (r.error as string | null) ?? null,
    stack: (r.stack as string | null) ?? null,
    startedAt: (r.started_at as Date | null) ?? null,
  };
}

/**
 * A history row to append: (task_id, from_state, to_state, attempt, worker, error, stack, and
 * started_at: the start of the attempt an outcome row ends, as read from tasks.started_at; null on
 * every other transition).
 */
export type HistoryRow = [string, TaskState | null, TaskState, number, string | null, string | null, string | null, (Date | null)?];

export const MAX_ERROR_LENGTH = 4000;

export function clipError(e: string | null | undefined): string | null {
  if (e === null || e === undefined) return null;
  return e.length > MAX_ERROR_LENGTH ? `${e.slice(0, MAX_ERROR_LENGTH - 1)}…` : e;
}

/** Longest stack kept per failed attempt (the pools already keep ~10 lines). */
export const MAX_STACK_LENGTH = 2048;

export function clipStack(s: string | null | undefined): string | null {
  if (s === null || s === undefined || s === '') return null;
  return s.length > MAX_STACK_LENGTH ? `${s.slice(0, MAX_STACK_LENGTH - 1)}…` : s;
}

/** `INSERT INTO task_history …` for many rows at once, stamped with the database clock. */
export function historyInsert(rows: HistoryRow[]): {sql: string; params: unknown[]} {
  const params: unknown[] = [];
  const values: string[] = [];
  for (const r of rows) {
    values.push('(?, ?, ?, ?, ?, NOW(3), ?, ?, ?)');
    params.push(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7] ?? null);
  }
  return {
    sql: `INSERT INTO task_history (task_id, from_state, to_state, attempt, worker, at, error, stack, started_at) VALUES ${values.join(', ')}`,
    params,
  };
}

/** `CASE id WHEN ? THEN ? … ELSE <otherwise> END` with its parameters. */
export function caseById(pairs: Array<[string, unknown]>, otherwise: string): {sql: string; params: unknown[]} {
  if (pairs.length === 0) return {sql: otherwise, params: []};
  const params: unknown[] = [];
  let sql = 'CASE id';
  for (const [id, v] of pairs) {
    sql += ' WHEN ? THEN ?';
    params.push(id, v);
  }
  return {sql: `${sql} ELSE ${otherwise} END`, params};
}

/** A due task as the scheduler and the reconciler see it (columns id, type, pool, priority, run_at, schedule_name, attempt, fence, dedup_key). */
export function toDueTask(r: Row): HeldForDispatch {
  return {
    id: r.id as string,
    type: r.type as string,
    pool: r.pool as HeldForDispatch['pool'],
    priority: r.priority as HeldForDispatch['priority'],
    runAt: r.run_at as Date,
    scheduleName: (r.schedule_name as string | null) ?? null,
    attempt: Number(r.attempt),
    fence: Number(r.fence),
    dedupKey: (r.dedup_key as string | null) ?? null,
  };
}
