import {AxError, errorMessage} from '../errors.js';
import {MAX_DURATION_MS} from '../duration.js';
import type {OutboxRow} from '../store/types.js';
import {idFromDedupKey} from '../task/id.js';
import type {NewTask, TaskSpec} from '../task/model.js';
import {traceContextOf} from '../trace-context.js';
import {validateTaskKey, validateTaskSpec, type TaskDefaults} from '../task/validate.js';

/**
 * Turns an outbox row into a task, or explains why it can never be one. Times come from the
 * business database: `run_at` as written; `delay_ms` counted from the row's `created_at`; a due
 * time already past means "now". Without a task_id or dedup_key the id derives from the row
 * (id + created_at), so a row relayed twice (relay crash) is the same task.
 */
export function outboxRowToTask(row: OutboxRow, defaults: TaskDefaults): {task: NewTask} | {error: string} {
  let payload: unknown;
  try {
    payload = JSON.parse(row.payload);
  } catch (e) {
    return {error: `payload is not valid JSON: ${errorMessage(e)}`};
  }
  // A zero or otherwise impossible date (MariaDB accepts '0000-00-00' in its default mode) reads as
  // an invalid Date: refuse the row rather than fail the whole batch's insert.
  if (!Number.isFinite(row.createdAt.getTime())) return {error: 'created_at is not a valid time'};
  if (row.runAt !== null && !Number.isFinite(row.runAt.getTime())) return {error: 'run_at is not a valid time'};
  const dueMs = row.runAt !== null ? row.runAt.getTime() : row.delayMs !== null ? row.createdAt.getTime() + row.delayMs : null;
  if (dueMs !== null && dueMs - row.createdAt.getTime() > MAX_DURATION_MS)
    return {error: 'the task is due more than 366 days after the row was written (run_at or delay_ms)'};
  const spec: TaskSpec = {type: row.type, payload: payload as TaskSpec['payload']};
  if (row.pool !== null) spec.pool = row.pool as TaskSpec['pool'];
  if (row.priority !== null) spec.priority = row.priority as TaskSpec['priority'];
  if (row.maxRetries !== null) spec.maxRetries = row.maxRetries;
  if (row.timeoutMs !== null) spec.timeout = row.timeoutMs;
  if (row.dedupKey !== null) spec.dedupKey = row.dedupKey;
  if (row.taskId !== null) spec.id = row.taskId;
  if (row.deps !== null) {
    let deps: {after?: unknown; onParentFailure?: unknown};
    try {
      deps = JSON.parse(row.deps) as typeof deps;
    } catch (e) {
      return {error: `deps is not valid JSON: ${errorMessage(e)}`};
    }
    if (deps === null || typeof deps !== 'object') return {error: 'deps must be a JSON object {after, onParentFailure}'};
    spec.after = deps.after as string[];
    if (deps.onParentFailure !== undefined) spec.onParentFailure = deps.onParentFailure as 'cancel' | 'run';
  }
  if (row.runAt !== null && row.delayMs !== null) return {error: 'give either run_at or delay_ms, not both'};
  try {
    // Validated as of the row's creation; the due time is set afterwards (past means now).
    const derived = idFromDedupKey(defaults.cell, `outbox:${row.id}:${row.createdAt.getTime()}`);
    const task = validateTaskSpec(spec, defaults, row.createdAt.getTime(), () => derived);
    // Checked here, named by its column: a bad task_key fails the row like any other bad field.
    if (row.key !== null) task.key = validateTaskKey(row.key, 'task_key');
    task.runAtMs = dueMs;
    task.delayMs = 0;
    // A malformed trace context is ignored, never a reason to fail the row: tracing is best effort.
    if (row.traceparent !== null) task.trace = traceContextOf(row.traceparent, row.tracestate);
    return {task};
  } catch (e) {
    return {error: e instanceof AxError ? e.message : errorMessage(e)};
  }
}
