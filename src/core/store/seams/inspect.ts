/**
 * Admin and inspection of tasks (InspectStore): reads, stats, the backlog, cancels. On MySQL:
 * mysql/inspect.ts (reads), tasks-cancel.ts (cancels), failures.ts, audit.ts.
 */

import type {HistoryEntry, TaskRecord} from '../../task/model.js';
import type {TaskState} from '../../task/state.js';
import type {AuditContext, AuditListParams, AuditRecord} from './audit.js';
import type {DbClockStore} from './common.js';
import type {DeadErrorGroup} from './dlq.js';

export interface ListFilter {
  state?: TaskState;
  type?: string;
  /** Created at or after. */
  since?: Date;
  /** Created before. */
  until?: Date;
  /** A substring of the last error (LIKE wildcards in it match literally). */
  errorContains?: string;
  /** The dedup key, exactly (uq_tasks_dedup). */
  dedupKey?: string;
  /** The task key (task_key), exactly; checked on each row the index range yields. */
  key?: string;
  /** A payload field equals a value: `path` is a JSON path (`$.orderId`), the scalar compared as text. */
  payload?: {path: string; value: string};
  /**
   * The keyset cursor: only tasks after this position in the list's order (created_at, id)
   * descending — created before `createdAt`, or at it with a smaller id. The previous page's last task.
   */
  after?: {createdAt: Date; id: string};
  limit: number;
}

/** A task as a bulk action selects it: which, its state, and its place in the list's order. */
export interface TaskRef {
  id: string;
  state: TaskState;
  createdAt: Date;
}

export interface StatsRow {
  type: string;
  state: TaskState;
  count: number;
}

/** The live work of one task type, read at `at` (the database clock). */
export interface BacklogRow {
  type: string;
  /** submitted or failed with run_at <= now: waiting for a worker. */
  due: number;
  /** submitted or failed with run_at > now: delayed tasks and backed-off retries. */
  delayed: number;
  /**
   * Of `delayed`: submitted tasks that wait for their parents or for their batch to end (docs/workflows.md):
   * not due until released. Absent: not counted.
   */
  waiting?: number;
  running: number;
  /** Dead now (the dead-letter queue), whenever they died. */
  dead: number;
  /** run_at of the oldest due task (null when none is due): its age is how late the type runs. */
  oldestDueAt: Date | null;
}

/** The states a backlog read counts: the live ones and dead. */
export type BacklogState = 'submitted' | 'failed' | 'running' | 'dead';

export interface BacklogReport {
  /** The database clock when the counts were read. */
  at: Date;
  /** One row per type with any due, delayed, running or dead task, sorted by type. */
  rows: BacklogRow[];
}

/** A backlog read with its counts per state over every type (submitted and failed: due and delayed alike). */
export interface BacklogByState extends BacklogReport {
  states: Record<BacklogState, number>;
}

/** Tasks of one type that reached a terminal state within a window (transitions, from history). */
export interface TerminalCountRow {
  type: string;
  state: 'succeeded' | 'dead' | 'cancelled';
  /** Transitions into `state` in the window (a task replayed and dead again counts twice). */
  count: number;
}

export interface TasksGetParams {
  id: string;
}

export interface HistoryListParams {
  taskId: string;
}

export interface TasksCancelManyParams {
  type: string;
  /** submitted and/or failed, and running (each running attempt is stopped: see StoppedAttempt). */
  states: TaskState[];
  limit: number;
  actor: string;
  reason: string | null;
  audit: AuditContext;
}

export interface TasksCancelIdsParams {
  /** The tasks to cancel (one transaction: callers send a few hundred at a time). */
  ids: readonly string[];
  actor: string;
  reason: string | null;
  audit: AuditContext;
}

export interface TasksCancelParams {
  id: string;
  actor: string;
  reason: string | null;
  /**
   * Also cancel the task when it is running (transition cancelRunning: the fence moves on, see
   * StoppedAttempt). Without it a running task is left alone (`cancelled: false`), as the cron
   * admin's cancels of its own occurrences want.
   */
  running?: boolean;
  /** When given, an audit row (command `tasks cancel`) is written in the cancel's transaction, only if it cancelled. */
  audit?: AuditContext;
}

/**
 * A running attempt a cancel ended in the database (running → cancelled): the fence the attempt
 * held (the row's is now one more, so its outcome is stale) and the worker that runs it. The
 * caller tells that worker (a control message) to stop the handler; the row is the truth either way.
 */
export interface StoppedAttempt {
  id: string;
  fence: number;
  attempt: number;
  worker: string | null;
}

/** A task a bulk cancel cancelled: the state it was in, and for a running one its stopped attempt. */
export interface CancelledTask {
  id: string;
  from: TaskState;
  stopped?: StoppedAttempt;
}

/** Which failed attempts `ax errors` counts: a bounded time window, optionally one type. */
export interface FailureFilter {
  /** Failed at or after (required: it bounds the scan). */
  since: Date;
  /** Failed before. */
  until?: Date;
  type?: string;
  /** Only the deaths (running → dead), not the retried failures. */
  deadOnly?: boolean;
}

/** A time range cut into buckets of `bucketMs` from `since` (the last one may end at `until`, shorter). */
export interface BucketParams {
  since: Date;
  until: Date;
  bucketMs: number;
}

/** Transitions into a state within one bucket: `at` is the bucket's start. */
export interface TransitionBucketRow {
  at: Date;
  state: 'succeeded' | 'failed' | 'dead' | 'cancelled';
  count: number;
}

/** Tasks created within one bucket: `at` is the bucket's start. */
export interface CreatedBucketRow {
  at: Date;
  count: number;
}

export interface TasksCreatedCountParams {
  since: Date;
  until: Date;
}

/** Admin and inspection (`ax tasks …`, the SDK's getTask/cancel); the DLQ, types and stats features extend it. */
export interface InspectStore extends DbClockStore {
  tasksGet(p: TasksGetParams): Promise<TaskRecord | null>;
  /** The named tasks of the cell that exist, in no order: one read per 1,000 ids (PRIMARY). */
  tasksGetMany(p: {ids: readonly string[]}): Promise<TaskRecord[]>;
  /** A task's history, oldest first. */
  historyList(p: HistoryListParams): Promise<HistoryEntry[]>;
  /**
   * Newest first ((created_at, id) descending), filtered, from the `after` position on (a keyset:
   * never an OFFSET). All filter values are bound parameters.
   */
  tasksList(p: ListFilter): Promise<TaskRecord[]>;
  /** tasksList's selection and order with the id, state and creation time of each task only (bulk actions). */
  tasksListRefs(p: ListFilter): Promise<TaskRef[]>;
  /** Counts per type × state. */
  tasksStats(): Promise<StatsRow[]>;
  /**
   * The backlog per type: due, delayed, running, dead and the oldest due run_at. Reads only the
   * small states through an index range (never a scan of the finished tasks): the query behind the
   * metrics gauges, `ax top` and `ax tasks stats`.
   */
  backlog(): Promise<BacklogReport>;
  /** The same read as backlog() (one statement), with the counts per state as well: the overview's. */
  backlogByState(): Promise<BacklogByState>;
  /**
   * Terminal transitions (succeeded, dead, cancelled) at or after `since`, per type × state,
   * unordered. A range of idx_history_failures (to_state, at) and one primary-key lookup of the
   * task per transition (its cell and type): the cost is the window's terminal transitions, never
   * the 30-day tables, so callers keep `since` bounded.
   */
  terminalCounts(p: {since: Date}): Promise<TerminalCountRow[]>;
  /**
   * Cancels a submitted or failed task, and with `running` a running one, in one transaction with
   * its history row (and the audit row when `audit` is given). A waiting task's row notes the
   * reason; a running one's is its attempt's (the worker it ran on, its start), noting `cancelled by
   * <audit operator, else actor>[: reason]`, and its fence moves on (see StoppedAttempt). Returns the state it was in (null: unknown id), and the attempt it stopped if it was running.
   */
  tasksCancel(p: TasksCancelParams): Promise<{from: TaskState | null; cancelled: boolean; stopped?: StoppedAttempt}>;
  /**
   * Cancels up to `limit` tasks of `type` in `states` (submitted, failed, running), smallest ids first:
   * a plain read of the candidates (idx_tasks_due, the waiting entries), then a transaction that
   * locks them by primary key, re-checks them and cancels those still in `states` (a guarded UPDATE
   * per transition: cancel for the waiting ones, cancelRunning for the running ones, whose attempts
   * are stopped; one history INSERT, one audit row; no audit row when none matched); candidates that moved in
   * between are replaced by a next round. Call again until fewer than `limit` come back.
   */
  tasksCancelMany(p: TasksCancelManyParams): Promise<CancelledTask[]>;
  /**
   * Cancels the named tasks that are submitted, failed or running, in one transaction: the rows
   * locked by primary key and re-checked, a guarded UPDATE per transition (cancel, cancelRunning:
   * their attempts are stopped), one history INSERT and one audit row (none when nothing was
   * cancelled). Unknown ids and tasks in other states are left alone (absent from the result).
   */
  tasksCancelIds(p: TasksCancelIdsParams): Promise<CancelledTask[]>;
  /** The audit trail, newest first (append-only: nothing edits or deletes it). */
  auditList(p: AuditListParams): Promise<AuditRecord[]>;
  /**
   * Failed attempts of a time window (history rows running → failed or dead: retried failures,
   * deaths, rescued leases, releases) per type × exact error (the first 1000 characters): count,
   * first and last seen, the smallest task id; unordered. One statement through
   * idx_history_failures (to_state, at): its cost is the failures of the window, not the history.
   */
  failureGroups(p: FailureFilter): Promise<DeadErrorGroup[]>;
  /**
   * How many tasks were created in [since, until) (the database's created_at): one range of
   * idx_tasks_created (cell, created_at), so its cost is the tasks of the window. The submit rate
   * of `ax top`.
   */
  tasksCreatedCount(p: TasksCreatedCountParams): Promise<number>;
  /**
   * tasksCreatedCount per bucket (buckets without tasks are absent): one range of idx_tasks_created,
   * covering, grouped in a small temporary table (a row per bucket). The overview's backfill.
   */
  tasksCreatedBuckets(p: BucketParams): Promise<CreatedBucketRow[]>;
  /**
   * History transitions into succeeded, failed, dead and cancelled in [since, until) per bucket and
   * state (empty ones absent): a range of idx_history_failures (to_state, at) over the four states,
   * and each transition's task by PRIMARY (its cell). The cost is the window's transitions, never the
   * tables: the overview's rates and its counts of what finished within its window. `failed` counts
   * the retried failures, rescued leases and the attempts a full pool queue handed back.
   */
  transitionBuckets(p: BucketParams): Promise<TransitionBucketRow[]>;
  /** The indexed payload fields of the database (every cell in it), oldest first (mysql/payload-index.ts). */
  payloadIndexes(): Promise<PayloadIndexInfo[]>;
  /**
   * Indexes payload field `field` (letters, digits, _ and dots, checked by the caller): online DDL
   * that takes about the time of a scan of the table; then the searches of that field read the
   * index. Audited once ready. created false: it was declared before; built: this call ran the DDL
   * (false: it was ready, nothing changed; true with created false: a half-built one was finished).
   * Throws conflict past the store's maximum of fields, timeout when a transaction holds a table's
   * metadata lock too long (the field stays building).
   */
  payloadIndexAdd(p: {field: string; audit: AuditContext}): Promise<{field: PayloadIndexInfo; created: boolean; built: boolean}>;
  /** Drops the index of `field` (instant); false, nothing changed, when it has none. Audited. Throws timeout as add does. */
  payloadIndexRemove(p: {field: string; audit: AuditContext}): Promise<boolean>;
}

/** A payload field with an index (`ax payload-index`). */
export interface PayloadIndexInfo {
  id: number;
  /** The field as in `--payload field=value`: `orderId`, `customer.id`. */
  field: string;
  /** building: its DDL has not finished (searches read the rows, as without an index); ready: searches use it. */
  state: 'building' | 'ready';
  createdAt: Date;
  createdBy: string | null;
}
