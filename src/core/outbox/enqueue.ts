import {invalid} from '../errors.js';
import type {NewTask, TaskSpec} from '../task/model.js';
import {validateTaskSpec, type TaskDefaults} from '../task/validate.js';
import {assertAcyclic} from '../task/links.js';
import {OUTBOX_PRODUCER_COLUMNS} from './schema.js';
import {type Clock, systemClock} from '../time.js';
import {tracing} from '../trace.js';
import type {TraceContext} from '../trace-context.js';

/**
 * The part of a mysql2 promise connection (or pool connection) that enqueueInTransaction uses: the
 * caller's own connection, inside the caller's own open transaction.
 */
export interface SqlConnection {
  query(sql: string, values?: unknown[]): Promise<unknown>;
}

export interface EnqueueOptions {
  /** Payload limit (default 64 KiB) and default retries (5), as in ax's configuration. */
  payloadLimitBytes?: number;
  maxRetries?: number;
  /** Table name (default task_outbox). */
  table?: string;
  /** For tests. */
  clock?: Clock;
}

/**
 * `run_at` is UTC by contract. Written as text, not as a Date: mysql2 formats a Date in the
 * connection's `timezone` option (default: the process's local zone), which is the caller's to set.
 */
const utcDatetime = (ms: number): string => new Date(ms).toISOString().slice(0, 23).replace('T', ' ');

/** Which optional columns a call writes: priority, task_key and deps when a task sets them, the trace columns when a trace is active. */
interface Written {
  priority: boolean;
  key: boolean;
  /** The deps column, when a task of the call has `after`. */
  deps: boolean;
  trace: TraceContext | null;
}

/**
 * Tables (by name) found without the trace columns (`ax migrate --outbox` not run since they were
 * added): enqueued without a trace context from then on, until this process restarts.
 */
const untraced = new Set<string>();

/**
 * The values of one row, in the order of OUTBOX_PRODUCER_COLUMNS, less `priority` and `task_key`
 * unless `w` says to write them, and less the trace columns without a trace.
 */
function rowOf(t: NewTask, spec: TaskSpec, w: Written): unknown[] {
  return [
    spec.id === undefined ? null : t.id,
    t.type,
    t.payload,
    t.runAtMs === null ? null : utcDatetime(t.runAtMs),
    t.runAtMs === null && t.delayMs > 0 ? t.delayMs : null,
    t.pool,
    ...(w.priority ? [t.priority] : []),
    spec.maxRetries === undefined ? null : t.maxRetries,
    t.timeoutMs,
    t.dedupKey,
    ...(w.key ? [t.key] : []),
    ...(w.trace ? [w.trace.traceparent, w.trace.tracestate] : []),
    ...(w.deps ? [t.after ? JSON.stringify({after: t.after, onParentFailure: t.onParentFailure}) : null] : []),
  ];
}

/** A MySQL error of an unknown column (ER_BAD_FIELD_ERROR) naming one of the trace columns. */
function isMissingTraceColumn(e: unknown): boolean {
  const x = e as {code?: unknown; errno?: unknown; message?: unknown} | null;
  return (
    (x?.code === 'ER_BAD_FIELD_ERROR' || x?.errno === 1054) && typeof x.message === 'string' && /\btrace(parent|state)\b/.test(x.message)
  );
}

/**
 * `list` with parents before their dependents (stable otherwise), so the relay, reading rows in id
 * order, has written a parent of the same call when it writes its dependent. A parent in the call
 * must have an explicit `id` (that is how `after` names it); a cycle is refused.
 */
function parentsFirst(list: TaskSpec[], tasks: NewTask[]): TaskSpec[] {
  assertAcyclic(tasks);
  const index = new Map<string, number>();
  list.forEach((s, i) => {
    if (s.id !== undefined) index.set(s.id, i);
  });
  const out: number[] = [];
  const placed = new Set<number>();
  const place = (i: number): void => {
    if (placed.has(i)) return;
    placed.add(i);
    for (const p of tasks[i]!.after ?? []) {
      const j = index.get(p);
      if (j !== undefined) place(j);
    }
    out.push(i);
  };
  list.forEach((_, i) => place(i));
  return out.map((i) => list[i]!);
}

/**
 * Writes tasks into `task_outbox` on the caller's connection, inside the caller's open transaction:
 * the tasks are dispatched if and only if that transaction commits. Validates exactly like
 * `submit()` (type, payload, delay/runAt, pool, priority, retries, timeout, dedup key, key, id) and throws
 * AxError('invalid_input') before writing anything; SQL errors are the caller's to handle (they
 * come from the caller's transaction). Uses nothing of ax's own pools or connections. One
 * multi-row INSERT for many tasks. When an OpenTelemetry span is active (core/trace.ts), its W3C
 * trace context is written on every row (traceparent, tracestate); on a table without those
 * columns the INSERT is sent again without them (MySQL undoes only the refused statement).
 */
export async function enqueueInTransaction(conn: SqlConnection, tasks: TaskSpec | TaskSpec[], opts: EnqueueOptions = {}): Promise<void> {
  let list = Array.isArray(tasks) ? tasks : [tasks];
  if (list.length === 0) return;
  if (list.length > 10_000) throw invalid('enqueue at most 10,000 tasks per call');
  if (!conn || typeof conn.query !== 'function')
    throw invalid('enqueueInTransaction needs a mysql2 promise connection inside an open transaction');
  const table = opts.table ?? 'task_outbox';
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(table)) throw invalid(`table "${table}" is not a plain table name`);
  const defaults: TaskDefaults = {maxRetries: opts.maxRetries ?? 5, payloadLimitBytes: opts.payloadLimitBytes ?? 65_536, cell: 'default'};
  const now = (opts.clock ?? systemClock).now();
  // The priority and task_key columns only when a task sets them: a task_outbox from before them
  // (not yet upgraded by `ax migrate --outbox`) still takes tasks at the default level, without a key.
  const sets = (field: 'priority' | 'key' | 'after'): boolean =>
    list.some((s) => s !== null && typeof s === 'object' && s[field] !== undefined);
  // The trace context active now (the caller's request), for every row of the call.
  const trace = untraced.has(table) ? null : tracing.active();
  const w: Written = {priority: sets('priority'), key: sets('key'), deps: sets('after'), trace};
  const columnsOf = (x: Written): string[] =>
    OUTBOX_PRODUCER_COLUMNS.filter(
      (c) =>
        (c !== 'priority' || x.priority) &&
        (c !== 'task_key' || x.key) &&
        (c !== 'deps' || x.deps) &&
        ((c !== 'traceparent' && c !== 'tracestate') || x.trace),
    );
  // Dependencies: parents of the same call first (the relay reads rows in id order).
  if (w.deps) {
    let n = 0;
    const tasks = list.map((spec, i) => {
      try {
        return validateTaskSpec(spec, defaults, now, () => `00000000-0000-7000-8000-${String(n++).padStart(12, '0')}`);
      } catch (e) {
        if (list.length > 1 && e instanceof Error) e.message = `task ${i}: ${e.message}`;
        throw e;
      }
    });
    list = parentsFirst(list, tasks);
  }
  const valid = list.map((spec, i) => {
    try {
      // The outbox has no columns for them: refused rather than dropped without a word.
      for (const gate of ['debounce', 'throttle'] as const)
        if (spec !== null && typeof spec === 'object' && (spec as unknown as Record<string, unknown>)[gate] !== undefined)
          throw invalid(`${gate} is not carried by the outbox: submit() it, or use dedupKey for a business key`);
      return validateTaskSpec(spec, defaults, now, () => '00000000-0000-7000-8000-000000000000');
    } catch (e) {
      if (list.length > 1 && e instanceof Error) e.message = `task ${i}: ${e.message}`;
      throw e;
    }
  });
  // created_at in UTC, explicitly (delay_ms counts from it), so the row does not depend on the
  // column default of whatever task_outbox DDL the business database has.
  const insert = (x: Written): Promise<unknown> => {
    const columns = columnsOf(x);
    const one = `(${columns.map(() => '?').join(', ')}, UTC_TIMESTAMP(3))`;
    const rows = valid.map((t, i) => rowOf(t, list[i]!, x));
    return conn.query(`INSERT INTO ${table} (${columns.join(', ')}, created_at) VALUES ${rows.map(() => one).join(', ')}`, rows.flat());
  };
  try {
    await insert(w);
  } catch (e) {
    // A table not upgraded yet takes the tasks without their trace: a failed statement leaves the
    // caller's transaction as it was (MySQL rolls back the statement only), so it is written again.
    if (!w.trace || !isMissingTraceColumn(e)) throw e;
    untraced.add(table);
    await insert({...w, trace: null});
  }
}
