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
  /** A substring of the last error (LIKE wildcards in it match literally). */
  errorContains?: string;
  /** The dedup key, exactly (uq_tasks_dedup). */
  dedupKey?: string;
  /** A payload field equals a value: `path` is a JSON path (`$.orderId`), the scalar compared as text. */
  payload?: {path: string; value: string};
  limit: number;
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
  running: number;
  /** Dead now (the dead-letter queue), whenever they died. */
  dead: number;
  /** run_at of the oldest due task (null when none is due): its age is how late the type runs. */
  oldestDueAt: Date | null;
}

export interface BacklogReport {
  /** The database clock when the counts were read. */
  at: Date;
  /** One row per type with any due, delayed, running or dead task, sorted by type. */
  rows: BacklogRow[];
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
  /** Newest first, filtered. All filter values are bound parameters. */
  tasksList(p: ListFilter): Promise<TaskRecord[]>;
  /** Counts per type × state. */
  tasksStats(): Promise<StatsRow[]>;
  /**
   * The backlog per type: due, delayed, running, dead and the oldest due run_at. Reads only the
   * small states through an index range (never a scan of the finished tasks): the query behind the
   * metrics gauges, `ax top` and `ax tasks stats`.
   */
  backlog(): Promise<BacklogReport>;
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
}
