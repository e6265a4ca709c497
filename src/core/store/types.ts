import type {HistoryEntry, NewTask, PoolName, TaskRecord} from '../task/model.js';
import type {TaskState} from '../task/state.js';

/** Result of writing a batch of new tasks. Every input id appears in exactly one list. */
export interface InsertResult {
  /** Newly written. */
  inserted: string[];
  /** Already there with the same content (same id, or same dedup key): idempotent success. */
  existing: Array<{id: string; existingId: string; state: TaskState; fence: number}>;
  /** Same id or dedup key with different content: refused, nothing written for them. */
  conflicts: Array<{id: string; existingId: string; reason: string}>;
}

/** A task a worker now holds: the row as claimed (attempt and fence already incremented). */
export interface ClaimedTask {
  id: string;
  type: string;
  pool: PoolName;
  payload: string;
  attempt: number;
  maxRetries: number;
  fence: number;
  timeoutMs: number | null;
}

export interface ClaimResult {
  claimed: ClaimedTask[];
  /** Ids that were not claimable: already running/terminal, not yet due (state given), or unknown (null). */
  skipped: Array<{id: string; state: TaskState | null; notDue?: boolean}>;
}

/**
 * The end of one attempt, or a hand-back. Applied only while the row is still `running` with the
 * same fence, so a late (zombie) completion changes nothing.
 */
export interface Outcome {
  id: string;
  fence: number;
  to: 'succeeded' | 'failed' | 'dead';
  /** For `failed`: run again after this many ms (database clock). */
  retryDelayMs?: number;
  error?: string | null;
  /** A release: the attempt is given back (attempt − 1) and no error is recorded against it. */
  release?: boolean;
  /** With a release: move the task to this pool's queue from now on (its handler runs there). */
  pool?: PoolName;
  /** Apply only when the lease has already expired (the rescuer), so a renewal in between wins. */
  onlyIfLeaseExpired?: boolean;
}

export interface OutcomeResult {
  applied: string[];
  /** Outcomes whose row had moved on (other fence, not running, lease renewed): nothing written. */
  stale: string[];
}

/** A running row whose lease expired, as the rescuer sees it. */
export interface ExpiredLease {
  id: string;
  fence: number;
  attempt: number;
  maxRetries: number;
  worker: string | null;
}

/** A doorbell that was rung: the task and the fence it was rung for (0 for a task never claimed). */
export interface RungRef {
  id: string;
  fence: number;
}

/** What the doorbell needs to route a task. */
export interface DispatchRef {
  id: string;
  type: string;
  pool: PoolName;
}

/** A delayed task a scheduler holds in its wheel. */
export interface HeldForDispatch extends DispatchRef {
  runAt: Date;
  scheduleName: string | null;
  /** Attempts used so far: 0 for a first run, more for a retry waiting in `failed`. */
  attempt: number;
  /** The row's fence when read: a doorbell rung for it is marked only while the fence is unchanged. */
  fence: number;
  /** The task's dedup key (a cron occurrence's names its schedule and fire time). */
  dedupKey: string | null;
}

export interface ListFilter {
  state?: TaskState;
  type?: string;
  /** Created at or after. */
  since?: Date;
  limit: number;
}

export interface StatsRow {
  type: string;
  state: TaskState;
  count: number;
}

export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  pools: Record<string, number>;
}

export interface WorkerRow extends WorkerInfo {
  inFlight: number;
  startedAt: Date;
  heartbeatAt: Date;
  stoppedAt: Date | null;
}

/**
 * The storage seam. MySQL is the truth: every state change is a guarded update checked against the
 * transition table, written together with its history rows in one transaction. All batch methods
 * take up to a few thousand ids per call. Methods throw AxError('unavailable') when the database
 * cannot be reached and retry deadlocks/lock-wait timeouts a bounded number of times.
 */
export interface TaskStore {
  readonly cell: string;
  /**
   * Writes new tasks and their `submitted` history, skipping existing ones (see InsertResult).
   * Throws AxError('invalid_input') when the database refuses a value of the batch (one the task
   * checks let through): the batch, not the server, is at fault.
   */
  insertTasks(tasks: NewTask[], actor: string): Promise<InsertResult>;
  /**
   * Records that the doorbell for these tasks was confirmed by the broker (and drops scheduler
   * holds), only for rows still submitted/failed at the fence they were rung for: a mark that
   * arrives after the task was claimed (and perhaps failed, waiting for its retry) changes nothing.
   */
  markPublished(rung: RungRef[]): Promise<void>;
  /**
   * For scheduler `owner`: takes hold of unpublished submitted/failed tasks due within `horizonMs`
   * that no live scheduler holds (hold = until max(run_at, now) + `holdMs`), renews its existing
   * holds, and returns everything it holds, oldest due first. Brand-new immediate tasks are left to
   * their producer's own publish.
   */
  holdForDispatch(owner: string, horizonMs: number, holdMs: number, limit: number): Promise<HeldForDispatch[]>;
  /** Lets go of every hold of `owner` (graceful scheduler stop); returns how many. */
  releaseDispatch(owner: string): Promise<number>;
  /**
   * Claims due `submitted`/`failed` tasks among `ids` for `worker`: state → running, attempt + 1,
   * fence + 1, lease = now + leaseMs. Ids not claimable are reported in `skipped`.
   */
  claim(ids: string[], worker: string, leaseMs: number): Promise<ClaimResult>;
  /** Extends the leases of tasks still held with these fences; returns the ids renewed. */
  renewLeases(held: Array<{id: string; fence: number}>, leaseMs: number): Promise<string[]>;
  /** Applies outcomes guarded by fence (see Outcome), with history, in one transaction. */
  applyOutcomes(outcomes: Outcome[], actor: string): Promise<OutcomeResult>;
  /** Running tasks whose lease expired before the database's now, oldest first. */
  findExpiredLeases(limit: number): Promise<ExpiredLease[]>;
  /**
   * Due `submitted`/`failed` tasks never published since they became due, or published longer than
   * `republishAfterMs` ago and still unclaimed; oldest due first.
   */
  findUndispatched(limit: number, republishAfterMs: number): Promise<HeldForDispatch[]>;
  /** Cancels a submitted or failed task. Returns the state it was in (null: unknown id). */
  cancel(id: string, actor: string, reason: string | null): Promise<{from: TaskState | null; cancelled: boolean}>;
  getTask(id: string): Promise<TaskRecord | null>;
  history(id: string): Promise<HistoryEntry[]>;
  listTasks(filter: ListFilter): Promise<TaskRecord[]>;
  stats(): Promise<StatsRow[]>;
  upsertWorker(info: WorkerInfo, inFlight: number): Promise<void>;
  stopWorker(id: string): Promise<void>;
  listWorkers(): Promise<WorkerRow[]>;
  /** The database clock. */
  now(): Promise<Date>;
  close(): Promise<void>;
}

/** A cron schedule as stored. */
export interface ScheduleRecord {
  name: string;
  cron: string;
  tz: string;
  type: string;
  payload: string;
  pool: PoolName;
  maxRetries: number | null;
  timeoutMs: number | null;
  overlap: 'allow' | 'skip';
  misfire: 'skip' | 'fire-once';
  paused: boolean;
  /** Fire time of the pending occurrence: the latest one created (null before the first). */
  nextFireAt: Date | null;
  lastFireAt: Date | null;
  lastTaskId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export type NewSchedule = Omit<ScheduleRecord, 'paused' | 'lastFireAt' | 'lastTaskId' | 'createdAt' | 'updatedAt'>;

/**
 * Storage of cron schedules (same database, same cell as the tasks). Occurrences are ordinary
 * tasks with `scheduleName` set and the dedup key `cron:<name>@<fire time ISO>`, so each
 * (schedule, fire time) exists at most once however many schedulers create it.
 */
export interface ScheduleStore {
  /** Throws AxError('conflict') when the name exists. */
  addSchedule(s: NewSchedule): Promise<void>;
  getSchedule(name: string): Promise<ScheduleRecord | null>;
  listSchedules(): Promise<ScheduleRecord[]>;
  /** Returns false when the name does not exist. */
  setPaused(name: string, paused: boolean, nextFireAt?: Date | null): Promise<boolean>;
  /** Deletes the schedule; returns false when it did not exist. */
  removeSchedule(name: string): Promise<boolean>;
  /** Unpaused schedules whose next occurrence is due within `horizonMs` (or unknown). */
  dueSchedules(horizonMs: number): Promise<ScheduleRecord[]>;
  /**
   * Moves a schedule on after its occurrences were created, only if its next fire time is still
   * `expectedNext` (another scheduler may have done it first). Returns whether it moved.
   */
  advanceSchedule(
    name: string,
    expectedNext: Date | null,
    next: Date | null,
    last: {fireAt: Date; taskId: string} | null,
  ): Promise<boolean>;
  /** The latest occurrence of a schedule due before `before`, other than `excludeId` (for the overlap policy). */
  previousOccurrence(name: string, before: Date, excludeId?: string): Promise<{id: string; state: TaskState} | null>;
}

/** A `task_outbox` row as the relay reads it. */
export interface OutboxRow {
  id: number;
  taskId: string | null;
  type: string;
  payload: string;
  runAt: Date | null;
  delayMs: number | null;
  pool: string | null;
  maxRetries: number | null;
  timeoutMs: number | null;
  dedupKey: string | null;
  createdAt: Date;
  attempts: number;
  lastError: string | null;
  failedAt: Date | null;
}

/**
 * The outbox seam (the business database's `task_outbox`). Claims are short transactions with
 * `FOR UPDATE SKIP LOCKED` so several relays share one table; no lock is held across a publish.
 */
export interface OutboxStore {
  /** Takes up to `limit` unsent, unfailed rows not claimed by a live relay, oldest first, for `leaseMs`. */
  claim(owner: string, limit: number, leaseMs: number): Promise<OutboxRow[]>;
  /** Marks rows sent (only those still claimed by `owner`); returns how many. */
  markSent(ids: number[], owner: string): Promise<number>;
  /** Marks rows that can never be relayed as failed, with the reason; they are skipped from then on. */
  markFailed(rows: Array<{id: number; error: string}>, owner: string): Promise<void>;
  /** Hands rows back after a transient error (the error is recorded; another pass retries them). */
  release(ids: number[], owner: string, error: string): Promise<void>;
  /** Deletes sent rows older than `olderThanMs`, at most `limit`; returns how many. */
  purgeSent(olderThanMs: number, limit: number): Promise<number>;
  /** Unsent rows and the age of the oldest (the outbox lag). */
  lag(): Promise<{unsent: number; failed: number; oldestAgeMs: number | null}>;
  listFailed(limit: number): Promise<OutboxRow[]>;
  /** Clears the failure of these rows (or all failed rows) so the relay tries them again. */
  retryFailed(ids: number[] | 'all'): Promise<number>;
  close(): Promise<void>;
}
