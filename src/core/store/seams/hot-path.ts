/**
 * The hot path of the task database (HotPathStore): producers insert and ring, workers claim,
 * renew and write outcomes. On MySQL: mysql/tasks-insert.ts, doorbells.ts, tasks-claim.ts,
 * leases.ts, outcomes.ts.
 */

import type {ForcedReplay, JsonValue, NewTask, PoolName, Priority} from '../../task/model.js';
import type {TaskState} from '../../task/state.js';
import type {TraceContext} from '../../trace-context.js';
import type {ParentRow} from '../../task/links.js';
import type {DispatchRef, ParkedKind, RungRef} from './common.js';

/** Result of writing a batch of new tasks. Every input id appears in exactly one list. */
export interface InsertResult {
  /**
   * Newly written. A debounced task is written even when it is replaced in the same transaction (a
   * later one of its key came in the batch, or an earlier one held the key): see `replaced`.
   */
  inserted: string[];
  /** Already there with the same content (same id, or same dedup key): idempotent success. */
  existing: Array<{id: string; existingId: string; state: TaskState; fence: number}>;
  /** Same id or dedup key with different content: refused, nothing written for them. */
  conflicts: Array<{id: string; existingId: string; reason: string}>;
  /**
   * Tasks with a throttle whose key's window was open: not written; `keptId` is the task that
   * opened the window. Absent when the batch had no throttled task.
   */
  throttled?: Array<{id: string; keptId: string; key: string}>;
  /**
   * Debounced tasks of this batch written but cancelled at once as replaced by `by` (also in
   * `inserted`): nobody should ring them. Tasks of earlier batches it replaced are not listed.
   */
  replaced?: Array<{id: string; by: string; key: string}>;
}

/** A task a worker now holds: the row as claimed (attempt and fence already incremented). */
export interface ClaimedTask {
  id: string;
  type: string;
  pool: PoolName;
  /** The row's priority: the worker runs it at this level and re-rings it there. */
  priority: Priority;
  payload: string;
  attempt: number;
  maxRetries: number;
  /** Attempts used before the latest DLQ replay: this is attempt `attempt − retryBase` of the budget. */
  retryBase: number;
  fence: number;
  timeoutMs: number | null;
  /** How long after its run_at the claim took it, on the database clock (ms, ≥ 0): the start delay. */
  lateMs: number;
  /** Set when this run comes from a forced replay (`dlq replay --force`), else null. */
  replay: ForcedReplay | null;
  /**
   * Fair dispatch claimed this task on another task's doorbell (TasksClaimParams.fairTypes): the
   * id the doorbell named, whose delivery is acked with this task. That task stays due, unrung.
   */
  via?: string;
  /** The trace context of its submit (see NewTask.trace): present only when the row has one. */
  trace?: TraceContext;
  /** The row's link flags (tasks.links: dependents, parents, batch member, callback); absent when 0. */
  links?: number;
  /** The batch of a member or callback; absent otherwise. */
  batchId?: string;
}

export interface ClaimResult {
  claimed: ClaimedTask[];
  /** Ids that were not claimable: already running/terminal, not yet due (state given), or unknown (null). */
  skipped: Array<{id: string; state: TaskState | null; notDue?: boolean}>;
  /**
   * Claimable ids the claim's flow step refused (paused, breaker open or its probes out, over the
   * limits; see TasksClaimParams.lockTypes): deferred in the claim's transaction — due again after
   * delayMs, unpublished, fence + 1, no attempt used. Absent or empty when none was.
   */
  deferred?: Array<{
    id: string;
    type: string;
    delayMs: number;
    parked: 'paused' | 'breaker' | 'capped' | 'rate' | 'key-capped' | 'key-rate';
    reason: string;
  }>;
  /**
   * Batch tasks whose doorbell fair dispatch lent to another task (see ClaimedTask.via): still due,
   * written unrung (published_at NULL). The caller rings them and marks them (doorbellsMark at
   * `fence`); if it cannot, the scheduler rings them. Absent when none.
   */
  unrung?: Array<{id: string; type: string; pool: PoolName; priority: Priority; fence: number}>;
}

/** Fields every outcome has: the task and the fence of the claim it ends. */
interface OutcomeBase {
  id: string;
  fence: number;
  /**
   * How the attempt counts for its type's circuit breaker (added to type_outcomes in the outcome's
   * transaction): a success, a failure (timeouts too), or not at all (absent: unrecoverable
   * failures, hand-backs, aborts, rescues).
   */
  breaker?: 'ok' | 'failed';
  /**
   * The task's type, when the writer knows it (a worker does: types never change). With it the
   * store counts the breaker outcome without reading the row first (mysql/outcomes.ts outcomesApply).
   */
  type?: string;
  /**
   * The attempt's last progress report not yet written when it ended (see progressWrite): written
   * by the outcome's own UPDATE. Absent: the progress columns are left as they are.
   */
  progress?: {percent: number; note: string | null};
  /**
   * The link flags and batch the claim read (ClaimedTask.links, batchId): with them an ending
   * outcome updates the task's dependents and batch in its transaction (mysql/links.ts). A row
   * that gained dependents since the claim is caught by the write (it falls back to a locking read).
   */
  links?: number;
  batchId?: string;
}

/** A failed attempt's error as recorded: the message, and the first lines of its stack when known. */
export interface AttemptError {
  error: string;
  /** Truncated (≤ 2 KiB, ~10 lines); stored in the history row of this attempt only. */
  stack?: string | null;
}

/**
 * The end of one attempt, or a hand-back, keyed by the transition it makes (TRANSITIONS in
 * core/task/state.ts). Each is applied only while the row is still in the transition's source
 * state with the same fence (and, for a rescue, an expired lease), so a late (zombie) or repeated
 * outcome changes nothing.
 */
export type Outcome =
  /**
   * running → succeeded; `result` is the handler's result as JSON text (≤ 64 KiB, checked by the
   * worker), stored in the same UPDATE (`tasks.result_json`). Absent: no result (the column is
   * left as it is, so a plain complete writes nothing more).
   */
  | (OutcomeBase & {kind: 'complete'; result?: string})
  /** running → failed: retried after `retryDelayMs` (database clock). */
  | (OutcomeBase & AttemptError & {kind: 'fail'; retryDelayMs: number})
  /** running → dead: out of retries, or unrecoverable. */
  | (OutcomeBase & AttemptError & {kind: 'deadLetter'})
  /**
   * running → failed, due now, the attempt given back (attempt − 1) and no error recorded against
   * the task (`reason` goes to history only); `pool` moves it to that pool's queue from now on.
   */
  | (OutcomeBase & {kind: 'release'; reason: string; pool?: PoolName})
  /** The rescuer: running → failed with a retry, only while the lease is still expired. */
  | (OutcomeBase & {kind: 'rescue'; error: string; retryDelayMs: number})
  /** The rescuer: running → dead (out of retries), only while the lease is still expired. */
  | (OutcomeBase & {kind: 'rescueDeadLetter'; error: string})
  /**
   * running → submitted, due after `delayMs`, the attempt given back: the admission step (core/flow)
   * said the type may not run now. `parked` marks why (null: not a parked backlog, e.g. the handler
   * runs on other workers); `reason` goes to history only.
   */
  | (OutcomeBase & {kind: 'park'; reason: string; delayMs: number; parked: ParkedKind | null});

export type OutcomeKind = Outcome['kind'];

export interface OutcomeResult {
  applied: string[];
  /** Outcomes whose row had moved on (other fence, not running, lease renewed): nothing written. */
  stale: string[];
  /**
   * Dependents and batch callbacks the outcomes made due (their last parent or member ended), left
   * unrung: the caller rings them and marks them (doorbellsMark at `fence`), else the scheduler
   * rings them. Absent when none.
   */
  due?: DueTask[];
}

/** A task made due by a transaction, to ring after its commit. */
export type DueTask = DispatchRef & {fence: number};

/** Tasks with dependencies (NewTask.after), or a batch (`tasks` its members) with its callback. */
export interface TasksInsertLinkedParams {
  tasks: NewTask[];
  batch?: {id: string; callback: NewTask};
  actor: string;
}

/** InsertResult and the tasks due at once (unrung): the caller rings and marks them. */
export interface LinkedInsertResult extends InsertResult {
  due: DueTask[];
}

/** A task's place in dependencies and batches, for `ctx.parents`, `ax tasks show` and the API. */
export interface TaskLinks {
  parents: Array<{id: string; type: string; state: TaskState; edge: 'waiting' | 'succeeded' | 'dead' | 'cancelled'}>;
  dependents: Array<{id: string; type: string; state: TaskState}>;
  /** Parents still waited for (> 0: the task waits and is not due). */
  waitingFor: number;
  /** The batch it is a member or the callback of. */
  batch: BatchInfo | null;
  onParentFailure: 'cancel' | 'run' | null;
}

/** A batch's progress. */
export interface BatchInfo {
  id: string;
  callbackId: string;
  callbackState: TaskState | null;
  total: number;
  succeeded: number;
  dead: number;
  cancelled: number;
  createdAt: Date;
  /** When the counters reached the total (the callback was released then). */
  doneAt: Date | null;
}

export interface TasksInsertParams {
  tasks: NewTask[];
  /** Who submitted (host:pid): the row's submitted_by (no history row is written for an insert). */
  actor: string;
  /**
   * Ids of tasks of this batch that the caller rings right after the commit: their rows are
   * written already marked published (published_at = NOW(3)), so no doorbellsMark follows. The
   * caller must call doorbellsForget (fence 0) for those whose publish fails or is not confirmed,
   * so the scheduler rings them; if the caller dies in between, the reconciler rings them once
   * the mark is older than AX_REPUBLISH_AFTER. Ids that are not inserted (already there) are not
   * touched. Absent: every row is written unpublished.
   */
  markPublished?: readonly string[];
  /**
   * Called with the batch's result once its rows are written and locked, just before COMMIT (the
   * write then runs in a transaction, never as a lone autocommit statement). What it starts runs
   * alongside the commit: the producer publishes the doorbells of `markPublished` rows there, so
   * the broker's fsync and the commit's overlap. Safe because a claim that reads a row not yet
   * committed waits for its lock (tasksClaim) and finds nothing if it rolls back. Called again, with
   * that attempt's result, when the transaction is retried; it must not throw.
   */
  beforeCommit?: (result: InsertResult) => void;
}

export interface DoorbellsMarkParams {
  rung: RungRef[];
}

export interface TasksClaimParams {
  ids: string[];
  worker: string;
  leaseMs: number;
  /**
   * Types whose registry rows the claim locks for update (the caller's snapshot says they have a
   * limit, or a breaker that is not closed: FlowGate.locked): their rows go through the limits
   * (max running, rate; core/flow/limits.ts) and their probes are counted cluster-wide. Every other
   * type's row is read with a shared lock: pause and breaker are decided from the rows as they are
   * when the claim runs (core/flow/admission.ts flowDecision), so a pause or an opening holds for
   * every claim that commits after it; a type found half-open without the update lock gets no
   * probe from this claim. A type limited since the caller's snapshot is not limited by it.
   */
  lockTypes?: readonly string[];
  /**
   * Types the caller's snapshot says are fair (`--fair`; a subset of lockTypes): their keyed
   * doorbells are permits, shared across the keys with due tasks by weight (core/flow/fair.ts):
   * the claim takes the doorbells' own tasks within their key's share and, for the rest, other
   * keys' due tasks (ClaimedTask.via; the tasks whose doorbell went to them come back in `unrung`).
   * A type no longer fair on its row is claimed as usual.
   */
  fairTypes?: readonly string[];
  /** Recheck delays of what the claim parks (paused, breaker); absent: ADMISSION_DEFAULTS. */
  admission?: {pausedRecheckMs: number; probeRecheckMs: number};
}

export interface LeasesRenewParams {
  held: Array<{id: string; fence: number}>;
  leaseMs: number;
}

/** A running attempt's latest progress report, at the fence of its claim. */
export interface ProgressRow {
  id: string;
  fence: number;
  /** 0..100, a whole number. */
  percent: number;
  /** At most 200 characters, or null. */
  note: string | null;
}

/** A task's stored result with its state and type (HotPathStore.resultsOf). */
export interface StoredResult {
  state: TaskState;
  type: string;
  /** The handler's result (null: none, or the task has not succeeded). */
  result: JsonValue | null;
}

export interface OutcomesApplyParams {
  outcomes: Outcome[];
  actor: string;
}

/**
 * The hot path: producers insert and ring, workers claim, renew and write outcomes. MySQL is the
 * truth: every state change is a guarded update whose guard (source states, fence) comes from the
 * transition table, written with its history rows in one transaction. Batch methods take up to a
 * few thousand ids per call. Methods throw AxError('unavailable') when the database cannot be
 * reached and retry deadlocks/lock-wait timeouts a bounded number of times.
 */
export interface HotPathStore {
  /**
   * Writes new tasks in one transaction, skipping existing ones (see InsertResult). A task's
   * creation is its row (created_at, submitted_by = `actor`): no history row is written for it, the
   * timeline's first history row is its first transition. Throws AxError('invalid_input') when the database refuses a value of the batch (one the task
   * checks let through): the batch, not the server, is at fault.
   */
  tasksInsert(p: TasksInsertParams): Promise<InsertResult>;
  /**
   * Records that the doorbell for these tasks was confirmed by the broker (and drops scheduler
   * holds), only for rows still submitted/failed at the fence they were rung for: a mark that
   * arrives after the task was claimed (and perhaps failed, waiting for its retry) changes nothing.
   */
  doorbellsMark(p: DoorbellsMarkParams): Promise<void>;
  /**
   * Undoes a mark made in advance (a replay's, or the producer's INSERT) for doorbells that could
   * not be rung: published_at back to NULL and the fence moved on, only for rows still claimable at the fence given, so the
   * scheduler rings them again at once instead of after AX_REPUBLISH_AFTER. A row already claimed
   * (the publish reached the broker after all) is left alone. One statement.
   */
  doorbellsForget(p: DoorbellsMarkParams): Promise<void>;
  /**
   * Claims due `submitted`/`failed` tasks among `ids` for `worker`: state → running, attempt + 1,
   * fence + 1, lease = now + leaseMs, in one transaction; no history row is written for a claim
   * (the attempt's outcome row records its start and worker). Ids not claimable are reported in
   * `skipped`; a claimable one not yet due (an early doorbell) is skipped with `notDue` and its
   * doorbell forgotten (published_at NULL, fence + 1, as doorbellsForget) so the scheduler rings it
   * when it is due. The claim's flow step may defer claimable ones instead (see
   * ClaimResult.deferred). Throws AxError('conflict') when the rows kept changing under its
   * guarded UPDATE (5 reads).
   */
  tasksClaim(p: TasksClaimParams): Promise<ClaimResult>;
  /** Extends the leases of tasks still held with these fences; returns the ids renewed. */
  leasesRenew(p: LeasesRenewParams): Promise<string[]>;
  /** Applies outcomes, each guarded by its transition (see Outcome), with history, in one transaction. */
  outcomesApply(p: OutcomesApplyParams): Promise<OutcomeResult>;
  /**
   * Writes running attempts' progress (progress, progress_note, progress_at = now) in one UPDATE,
   * only on rows still running at the fence given: a late report of an ended or taken-over attempt
   * changes nothing. Leaves updated_at and everything else alone. Returns how many rows changed.
   */
  progressWrite(p: {rows: ProgressRow[]}): Promise<number>;
  /**
   * The state, type and stored result of tasks of this cell by id, in one primary-key read (ids
   * not found are absent from the map). For dependents' ctx.parents.
   */
  resultsOf(ids: readonly string[]): Promise<Map<string, StoredResult>>;
  /**
   * Writes tasks with dependencies, or a batch with its callback, in one transaction (see
   * mysql/links-insert.ts). Throws invalid_input, nothing written, for a parent unknown in this
   * cell or a batch task already stored.
   */
  tasksInsertLinked(p: TasksInsertLinkedParams): Promise<LinkedInsertResult>;
  /** The parents of these tasks (rows per edge: child, parent, the parent's type and state). */
  parentsOf(children: readonly string[]): Promise<ParentRow[]>;
  /** A task's parents (with their states) and dependents, waiting count and batch; null: unknown id. */
  taskLinks(id: string): Promise<TaskLinks | null>;
  /** Batches of this cell, newest first (at most `limit`), or one by id (null: unknown). */
  batchesList(p: {limit: number}): Promise<BatchInfo[]>;
  batchGet(id: string): Promise<BatchInfo | null>;
}
