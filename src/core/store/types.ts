import type {HistoryEntry, NewTask, PoolName, TaskRecord} from '../task/model.js';
import type {TaskState} from '../task/state.js';

/** Result of writing a batch of new tasks. Every input id appears in exactly one list. */
export interface InsertResult {
  /** Newly written. */
  inserted: string[];
  /** Already there with the same content (same id, or same dedup key): idempotent success. */
  existing: Array<{id: string; existingId: string; state: TaskState}>;
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

/** What the doorbell needs to route a task. */
export interface DispatchRef {
  id: string;
  type: string;
  pool: PoolName;
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
  /** Writes new tasks and their `submitted` history, skipping existing ones (see InsertResult). */
  insertTasks(tasks: NewTask[], actor: string): Promise<InsertResult>;
  /** Records that the doorbell for these tasks was confirmed by the broker. */
  markPublished(ids: string[]): Promise<void>;
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
  findUndispatched(limit: number, republishAfterMs: number): Promise<DispatchRef[]>;
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
