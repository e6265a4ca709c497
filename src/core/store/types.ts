import type {TypeSelector} from '../cells/cells.js';
import type {WorkerMemoryDoc} from '../memory.js';
import type {ForcedReplay, HistoryEntry, JsonObject, NewTask, PoolName, Priority, TaskRecord} from '../task/model.js';
import type {TaskState} from '../task/state.js';
import type {ArchiveStore} from './archive-types.js';

export type * from './archive-types.js';

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
  deferred?: Array<{id: string; type: string; delayMs: number; parked: 'paused' | 'breaker' | 'capped' | 'rate'; reason: string}>;
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
   * store counts the breaker outcome without reading the row first (outcomes.ts applyOutcomes).
   */
  type?: string;
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
  /** running → succeeded. */
  | (OutcomeBase & {kind: 'complete'})
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

/**
 * Why a waiting task is parked (the `tasks.parked` column): paused by hand, its breaker open, no
 * live worker handles it, over its type's max running (`capped`), or waiting for the rate-limit
 * slot reserved for it (`rate`: it runs then without taking a token).
 */
export type ParkedKind = 'paused' | 'breaker' | 'unhandled' | 'capped' | 'rate';

export type OutcomeKind = Outcome['kind'];

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
  /** See ClaimedTask.retryBase. */
  retryBase: number;
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
  /** The row's priority: the level of the pool's queue a doorbell for it goes to. */
  priority: Priority;
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

export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  pools: Record<string, number>;
  /** The task types it has handlers for (registered in the type registry too). */
  types?: string[];
}

/** One task type's cumulative counters in a worker, since the worker started. */
export interface TypeCounters {
  /** Attempts that ended succeeded, failed (retried later) and dead. */
  succeeded: number;
  failed: number;
  dead: number;
  /** Tasks handed back without an attempt (never started, pool full, another pool's task). */
  released: number;
  /**
   * Attempt durations (succeeded, failed, dead) per bucket of DURATION_BUCKETS_MS
   * (core/worker/type-stats.ts): `hist[i]` counts durations ≤ bucket i and above bucket i − 1; the
   * last entry counts those above every bucket. Fixed buckets, so workers' histograms add up.
   */
  hist: number[];
}

/** What a worker's heartbeat stores beside its row: its per-type counters (JSON in `workers.stats`). */
export interface WorkerStatsDoc {
  /** The worker's heartbeat interval: it is stale after a few of them without a beat. */
  heartbeatMs: number;
  /** Counters per task type (bounded: at most MAX_STATS_TYPES types, the rest under `other`). */
  types: Record<string, TypeCounters>;
  /** Its memory and the trend of its resident memory (absent from an older ax, or a malformed doc: see validMemory). */
  memory?: WorkerMemoryDoc;
}

export interface WorkerRow extends WorkerInfo {
  inFlight: number;
  startedAt: Date;
  heartbeatAt: Date;
  /** How long ago the last heartbeat was, by the database clock (never negative). */
  heartbeatAgeMs: number;
  stoppedAt: Date | null;
  /** The counters of the last heartbeat (null: a worker that reports none, e.g. an older ax). */
  stats: WorkerStatsDoc | null;
  /** The heartbeat before it, for a rate from one read (null until the second heartbeat). */
  prev: {at: Date; stats: WorkerStatsDoc} | null;
}

/** A store that holds connections: close it, or `await using` it. */
export interface Closable {
  /** Ends the connection pool; idempotent. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export interface TasksInsertParams {
  tasks: NewTask[];
  /** Recorded in history as who submitted (host:pid). */
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
  /** Recheck delays of what the claim parks (paused, breaker); absent: ADMISSION_DEFAULTS. */
  admission?: {pausedRecheckMs: number; probeRecheckMs: number};
}
export interface LeasesRenewParams {
  held: Array<{id: string; fence: number}>;
  leaseMs: number;
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
   * Writes new tasks and their `submitted` history, skipping existing ones (see InsertResult).
   * Throws AxError('invalid_input') when the database refuses a value of the batch (one the task
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
   * Undoes a mark made in advance (a replay's, or the producer's INSERT) for doorbells that could not be rung: published_at
   * back to NULL and the fence moved on, only for rows still claimable at the fence given, so the
   * scheduler rings them again at once instead of after AX_REPUBLISH_AFTER. A row already claimed
   * (the publish reached the broker after all) is left alone. One statement.
   */
  doorbellsForget(p: DoorbellsMarkParams): Promise<void>;
  /**
   * Claims due `submitted`/`failed` tasks among `ids` for `worker`: state → running, attempt + 1,
   * fence + 1, lease = now + leaseMs. Ids not claimable are reported in `skipped`.
   */
  tasksClaim(p: TasksClaimParams): Promise<ClaimResult>;
  /** Extends the leases of tasks still held with these fences; returns the ids renewed. */
  leasesRenew(p: LeasesRenewParams): Promise<string[]>;
  /** Applies outcomes, each guarded by its transition (see Outcome), with history, in one transaction. */
  outcomesApply(p: OutcomesApplyParams): Promise<OutcomeResult>;
}

export interface HoldsTakeParams {
  owner: string;
  horizonMs: number;
  holdMs: number;
  limit: number;
}
export interface HoldsReleaseParams {
  owner: string;
}

/** The database clock, for services that compare due times with it. */
export interface DbClockStore {
  /** The database's NOW(3). */
  clockNow(): Promise<Date>;
}

/** The scheduler's dispatch holds on delayed tasks and retries. */
export interface DispatchHoldStore extends DbClockStore {
  /**
   * For scheduler `owner`: takes hold of unpublished submitted/failed tasks due within `horizonMs`
   * that no live scheduler holds (hold = until max(run_at, now) + `holdMs`), renews its existing
   * holds, and returns everything it holds, oldest due first. Brand-new immediate tasks are left to
   * their producer's own publish.
   */
  holdsTake(p: HoldsTakeParams): Promise<HeldForDispatch[]>;
  /** Lets go of every hold of `owner` (graceful scheduler stop); returns how many. */
  holdsRelease(p: HoldsReleaseParams): Promise<number>;
}

export interface LeasesFindExpiredParams {
  limit: number;
}
export interface TasksFindUndispatchedParams {
  limit: number;
  republishAfterMs: number;
}

/** What the rescuer and the reconciler look for (they write through HotPathStore's outcomes and marks). */
export interface RescueStore {
  /** Running tasks whose lease expired before the database's now, oldest first. */
  leasesFindExpired(p: LeasesFindExpiredParams): Promise<ExpiredLease[]>;
  /**
   * Due `submitted`/`failed` tasks never published since they became due, or published longer than
   * `republishAfterMs` ago and still unclaimed; oldest due first.
   */
  tasksFindUndispatched(p: TasksFindUndispatchedParams): Promise<HeldForDispatch[]>;
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

/**
 * What an admin action tells the store to record in `admin_audit` (see core/audit/audit.ts). The
 * store adds the time (database clock), the count and the ids of the tasks the change touched.
 */
export interface AuditContext {
  /** AX_OPERATOR, else user@host (operatorName). */
  operator: string;
  /** The command, e.g. `tasks cancel`, `dlq replay`. */
  command: string;
  /** The selection as given (ids or filter flags); stored as JSON. */
  filter: Record<string, unknown>;
  reason: string | null;
}

/** One row of the audit trail. */
export interface AuditRecord {
  id: number;
  at: Date;
  operator: string;
  command: string;
  filter: Record<string, unknown>;
  reason: string | null;
  taskCount: number;
  /** The ids touched, or null when there were more than AUDIT_MAX_IDS (the filter and time are the reference). */
  taskIds: string[] | null;
}

export interface AuditListParams {
  limit: number;
  /** Only rows older than this id (the cursor of the previous page). */
  after?: number;
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
   * Cancels a submitted or failed task, and with `running` a running one (its history row, to
   * cancelled with the attempt's number, notes `cancelled by <audit operator, else actor>[: reason]`).
   * Returns the state it was in (null: unknown id), and the attempt it stopped if it was running.
   */
  tasksCancel(p: TasksCancelParams): Promise<{from: TaskState | null; cancelled: boolean; stopped?: StoppedAttempt}>;
  /**
   * Cancels up to `limit` tasks of `type` in `states` (submitted, failed, running), smallest ids first:
   * a plain read of the candidates (idx_tasks_due, the waiting entries), then a transaction that
   * locks them by primary key, re-checks them and cancels those still waiting (one guarded UPDATE,
   * one history INSERT, one audit row; none when nothing was cancelled); candidates that moved in
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

export interface TasksCreatedCountParams {
  since: Date;
  until: Date;
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

/** Which dead tasks: every filter optional, combined with AND; values are bound parameters. */
export interface DeadFilter {
  type?: string;
  /** Dead (finished) at or after. */
  since?: Date;
  /** Dead before. */
  until?: Date;
  /** A substring of the last error (LIKE wildcards in it match literally). */
  errorContains?: string;
}

export interface DeadListParams extends DeadFilter {
  limit: number;
  /** Only tasks listed after this one (the last id of the previous page): keyset on (finished_at, id). */
  after?: string;
}

/** A dead task as `ax dlq list` shows it: no payload. */
export interface DeadTaskRow {
  id: string;
  type: string;
  pool: PoolName;
  attempt: number;
  maxRetries: number;
  /** See TaskRecord.retryBase. */
  retryBase: number;
  createdAt: Date;
  /** When it died. */
  finishedAt: Date;
  lastError: string | null;
}

/** Dead tasks counted per type and exact last error (the first 1000 characters). */
export interface DeadErrorGroup {
  type: string;
  error: string | null;
  count: number;
  firstSeen: Date;
  lastSeen: Date;
  /** The smallest id among them. */
  sampleId: string;
}

export interface DeadReplayParams {
  /** Up to a few thousand ids (one transaction). */
  ids: string[];
  /** Recorded in history as who replayed (host:pid). */
  actor: string;
  /** Recorded with the replay: the operator, the command and selection, the reason. */
  audit: AuditContext;
  /**
   * A forced replay: succeeded and cancelled tasks are replayed too, and each replayed row keeps
   * {by: audit.operator, at, reason: audit.reason} for the handler (ctx.replay). Needs a reason.
   * Without it, only dead tasks, and the row's forced-replay stamp is cleared.
   */
  force?: {at: Date};
  /**
   * The new payload text of each row replayed, from its payload as read under the transaction's
   * row lock (a --patch applied and validated). A throw rolls the whole transaction back (nothing
   * of this call changes) and is rethrown. Omitted: payloads are kept (and not read).
   */
  rewrite?: (payload: JsonObject, id: string) => string;
  /**
   * The patch behind `rewrite`, as recorded (already bounded, see patchRecord in core/dlq/replay.ts):
   * each replayed task's history note ends with `; patch <it>`.
   */
  patch?: string;
}

export interface DeadPageParams extends DeadFilter {
  limit: number;
  /** Only ids after this one (the last id of the previous page): keyset on id. */
  afterId?: string;
  /** Also read each payload (MEDIUMTEXT: only when needed, e.g. to validate a --patch). */
  withPayload?: boolean;
}

/** A dead task of a page in id order: its id, and its payload when asked for. */
export interface DeadPageRow {
  id: string;
  payload?: JsonObject;
}

export interface DeadReplayResult {
  /** Now submitted and due, not yet rung for: ring (publish) them, then mark them at `fence`. */
  replayed: Array<DispatchRef & {fence: number}>;
  /** Not replayed: no longer dead (another replay, a cancel…) with the state found, or unknown (null). */
  skipped: Array<{id: string; state: TaskState | null}>;
}

/**
 * The dead-letter queue: dead tasks, read through a range of idx_tasks_due (cell, state = 'dead');
 * the cost is a scan of the dead rows the filter keeps, sorted.
 */
export interface DeadLetterStore {
  /** Newest death first (finished_at, then id, descending). */
  deadList(p: DeadListParams): Promise<DeadTaskRow[]>;
  /** Per type × exact last error: count, first and last death, a sample; unordered. */
  deadErrorGroups(p: DeadFilter): Promise<DeadErrorGroup[]>;
  /**
   * Dead tasks in id order after `afterId`, at most `limit`: the pages a replay (and its --patch
   * check) walks: the dead rows of idx_tasks_due past the cursor (a type checked in the index), sorted.
   */
  deadPage(p: DeadPageParams): Promise<DeadPageRow[]>;
  /**
   * Replays the dead tasks among `ids` in one transaction: dead → submitted, due now, marked
   * published in advance (the caller rings them right after the commit, and calls doorbellsForget
   * for those it could not ring, so no separate mark statement follows), retry_base = attempt (a fresh retry budget and backoff; attempts keep counting), a history row
   * "replayed by <operator>: <reason>", and one audit row listing the ids replayed (none when none
   * was). Guarded by state = 'dead' in the UPDATE, so two concurrent replays replay each task once.
   */
  deadReplay(p: DeadReplayParams): Promise<DeadReplayResult>;
}

export interface DlqScanAdvanceParams {
  /** The watermark read before the pass (null: the cell has none yet). */
  from: Date | null;
  to: Date;
}

/**
 * The dead-letter scan's watermark (table dlq_scan, one row per cell): how far the deaths of the
 * cell have been reported, shared by its schedulers and kept across their restarts.
 */
export interface DlqScanStore {
  /** The watermark, or null before the cell's first scan. */
  dlqScanGet(): Promise<Date | null>;
  /**
   * Moves the watermark from `from` to `to` only if it is still `from` (a compare-and-set; `from`
   * null creates it only if there is none): true when this call moved it, false when another
   * scheduler did first. One statement.
   */
  dlqScanAdvance(p: DlqScanAdvanceParams): Promise<boolean>;
}

export interface WorkersUpsertParams {
  info: WorkerInfo;
  inFlight: number;
  /** The worker's counters now; the row keeps the previous ones as `prev`. */
  stats?: WorkerStatsDoc;
}
export interface WorkersListParams {
  /** Only workers whose last heartbeat is at most this old (stopped or not); all when absent. */
  seenWithinMs?: number;
}
export interface WorkersStopParams {
  id: string;
}

/** The `workers` registry: heartbeats of running workers. */
export interface WorkerRegistryStore {
  /**
   * Registers a worker or records its heartbeat (now, by the database clock): the stats given
   * replace the row's, which become `prev` with the previous heartbeat time, in one statement.
   */
  workersUpsert(p: WorkersUpsertParams): Promise<void>;
  workersStop(p: WorkersStopParams): Promise<void>;
  /** The workers of the cell, latest heartbeat first (idx_workers_cell). */
  workersList(p?: WorkersListParams): Promise<WorkerRow[]>;
}

/** Due tasks of one type in one pool (the queue they are rung on). */
export interface DuePoolRow {
  type: string;
  pool: PoolName;
  due: number;
  oldestDueAt: Date;
}

/** A task whose history has more than one success in a window. */
export interface SuccessRepeat {
  taskId: string;
  type: string;
  successes: number;
  /** The task was force-replayed (`ax dlq replay --force`): a second success was asked for. */
  forced: boolean;
}

/** How long the attempts of one type that ended in a window took (claim to outcome, database clock). */
export interface AttemptTimes {
  type: string;
  /** Attempts that ended: succeeded, failed or dead (hand-backs excluded: they never ran). */
  attempts: number;
  failed: number;
  /** Of those, attempts that hit their timeout (error `timeout: …`). */
  timeouts: number;
  avgMs: number;
  maxMs: number;
  /**
   * How long after it was due each task's latest attempt started (claim − run_at; earlier attempts'
   * run_at is gone): the wheel's and the queues' lateness together. Null when none is known.
   */
  startLateAvgMs: number | null;
  startLateMaxMs: number | null;
}

export interface SinceParams {
  /** The window's start (required: it bounds the read). */
  since: Date;
  /** Read at most this many of the window's latest history rows (a sample on a busy system). */
  sample: number;
}

/**
 * What `ax doctor` reads beyond InspectStore and the worker registry. Each is one statement over an
 * index range whose cost is bounded by the small states (due rows) or by a sample of the window's
 * latest history rows: idx_history_failures (to_state, at) covers every target state, not only
 * failures, and yields the sample's row ids from the index alone before any row is read.
 */
export interface DoctorStore {
  /** Due submitted/failed tasks per type × pool, with the oldest due run_at (idx_tasks_due). */
  duePerPool(): Promise<DuePoolRow[]>;
  /** Among the latest `sample` successes since `since`: tasks with more than one, at most `limit`, by task id. */
  successRepeats(p: SinceParams & {limit: number}): Promise<SuccessRepeat[]>;
  /** Per type: the latest `sample` attempts that ended since `since` and their durations; sorted by type. */
  attemptTimes(p: SinceParams): Promise<AttemptTimes[]>;
}

/** A task type's registry row (`task_types`): operator state and the cluster-wide breaker. */
export interface TypeRecord {
  type: string;
  paused: boolean;
  pausedBy: string | null;
  pausedReason: string | null;
  pausedAt: Date | null;
  /** Limits and breaker thresholds set with `ax types set` (core/flow/settings.ts); {} when none. */
  settings: Record<string, unknown>;
  breaker: {state: 'closed' | 'open' | 'half_open'; until: Date | null; openings: number; changedAt: Date | null};
  createdAt: Date;
  updatedAt: Date;
}

/** What a worker's admission step reads every refresh (two small statements). */
export interface FlowView {
  /** The database clock when read. */
  at: Date;
  /**
   * Registry rows that say something (paused, breaker not closed or ever moved, settings): the rest
   * run freely. A breaker that moved once is in it for good: its changedAt is the next
   * transition's compare-and-set and the start of its closed window.
   */
  types: TypeRecord[];
  /** Live workers (heartbeat within `liveMs`, not stopped) per type they have a handler for. */
  handlers: Record<string, string[]>;
}

export interface FlowViewParams {
  /** A worker counts as live while its last heartbeat is at most this old. */
  liveMs: number;
}

/** The registry as `ax types list` shows it. */
export interface TypesReport extends FlowView {
  /** Every registry row (FlowView.types has only those that say something). */
  all: TypeRecord[];
  /** Waiting tasks parked per type and kind. */
  parked: Record<string, Partial<Record<ParkedKind, number>>>;
}

/** One row of a type's history: paused, resumed, breaker transitions. */
export interface TypeEvent {
  at: Date;
  event: string;
  actor: string;
  detail: string | null;
}

export interface TypeHistoryParams {
  type: string;
  limit: number;
}

export interface TypeSetPausedParams {
  type: string;
  paused: boolean;
  /** Recorded as paused_by and in the type's history. */
  operator: string;
  reason: string | null;
  audit: AuditContext;
}

export interface TypeSetPausedResult {
  /** False when the type already was in that state (nothing written, no audit row). */
  changed: boolean;
  /** Whether it had a registry row before (false: the row was created by this call). */
  existed: boolean;
  record: TypeRecord;
}

export interface TasksDeferParams {
  /** Unclaimed tasks (ids from doorbells) the admission step refused, each with how long to wait and why. */
  tasks: Array<{id: string; delayMs: number; parked: ParkedKind | null; reason: string}>;
  /** Recorded in history (host:pid). */
  actor: string;
  /**
   * A task parked `unhandled` since longer than this goes dead ("no live worker has a handler")
   * instead of waiting again.
   */
  unhandledDeadAfterMs: number;
  /**
   * Workers live within this (FlowView's liveMs): a task to park `unhandled` whose type a live
   * worker registered since the caller's snapshot is made due at once instead (likewise a task to
   * park `paused` whose type was resumed since).
   */
  liveMs: number;
}

export interface TasksDeferResult {
  /** Now submitted, due later, unpublished (the scheduler rings them when due); no attempt used. */
  deferred: string[];
  /** Dead after waiting AX_UNHANDLED_DEAD_AFTER for a handler. */
  dead: Array<{id: string; type: string}>;
  /** Not claimable any more (running, finished) or unknown (state null): left alone. */
  skipped: Array<{id: string; state: TaskState | null}>;
}

export interface ParkedReleaseParams {
  type: string;
  /** Which parked tasks: e.g. ['paused'] on resume, ['unhandled'] when a handler registers. */
  kinds: ParkedKind[];
  limit: number;
}

/** Attempt outcomes of one type in one second, summed over the workers. */
export interface OutcomeCount {
  type: string;
  /** The start of the second (database clock). */
  at: Date;
  ok: number;
  failed: number;
}

export interface OutcomeCountsParams {
  /** The seconds from now − windowMs on. */
  windowMs: number;
}

export interface BreakerTransitionParams {
  type: string;
  /** The state the caller decided from: the update applies only if the row is still in it. */
  expect: {state: TypeRecord['breaker']['state']; changedAt: Date | null};
  to: TypeRecord['breaker'];
  /** The history row: event name and detail. */
  event: string;
  detail: string;
  actor: string;
  /** An operator's reset is audited. */
  audit?: AuditContext;
}

export interface TypeSetSettingsParams {
  type: string;
  /** The whole settings object to store (merged by the caller). */
  settings: Record<string, unknown>;
  operator: string;
  /** Empty the type's rate-limit bucket state (the rate changed): the next claim starts from a full bucket. */
  resetBucket?: boolean;
  audit: AuditContext;
}

export interface HandlersRegisterParams {
  types: string[];
}

/**
 * The type registry and flow control: pause state, settings, breaker state per type, which live
 * workers handle which type, and the parked backlog. Pause/resume are audited in their transaction.
 */
export interface FlowStore extends DbClockStore {
  /** Creates registry rows for these types when missing (a worker's handlers, on start). */
  typesRegister(p: HandlersRegisterParams): Promise<void>;
  /** The state the admission step needs (see FlowView). Two statements, index-only on small tables. */
  flowView(p: FlowViewParams): Promise<FlowView>;
  /** Every registry row, the live handlers and the parked counts (a range of idx_tasks_due over the waiting states). */
  typesReport(p: FlowViewParams): Promise<TypesReport>;
  /** A type's history, newest first. */
  typeHistory(p: TypeHistoryParams): Promise<TypeEvent[]>;
  /**
   * Pauses or resumes a type in one transaction: the registry row (created if missing) locked, the
   * change, a history row and an audit row — none of them when the type already was in that state.
   */
  typeSetPaused(p: TypeSetPausedParams): Promise<TypeSetPausedResult>;
  /**
   * Parks unclaimed tasks in one transaction: a locking read, then per (delay, kind) one UPDATE
   * guarded by the defer transition (claimable at the fence read) that makes them due later,
   * unpublished, fence + 1 (a doorbell already in flight cannot mark them); `unhandled` ones parked
   * longer than unhandledDeadAfterMs go dead instead (unhandledDead). One history INSERT. Attempts
   * untouched.
   */
  tasksDefer(p: TasksDeferParams): Promise<TasksDeferResult>;
  /**
   * Makes up to `limit` parked tasks of a type due now (parked cleared, unpublished), smallest ids
   * first, and returns them to ring (then mark at `fence`). Call again until fewer come back.
   */
  parkedRelease(p: ParkedReleaseParams): Promise<Array<DispatchRef & {fence: number}>>;
  /** Per type and second over the window (one grouped range read of idx_type_outcomes_second). */
  outcomeCounts(p: OutcomeCountsParams): Promise<OutcomeCount[]>;
  /** Deletes outcome rows older than `olderThanMs` (at most a few thousand); returns how many. */
  outcomesPurge(p: {olderThanMs: number}): Promise<number>;
  /**
   * Moves a type's breaker (compare-and-set on its state and changedAt, so of several workers
   * deciding the same transition one wins) with a history row (and an audit row when given), in
   * one transaction. Returns whether it moved.
   */
  breakerTransition(p: BreakerTransitionParams): Promise<boolean>;
  /** Stores a type's settings (row created if missing) with a history and an audit row. */
  typeSetSettings(p: TypeSetSettingsParams): Promise<TypeRecord>;
}

/**
 * Everything ax's task database offers, for composition roots and tests. Services and commands
 * take the narrow seams above (or a Pick of them), never this.
 */
export type TaskStore = HotPathStore &
  DispatchHoldStore &
  RescueStore &
  InspectStore &
  DeadLetterStore &
  DlqScanStore &
  WorkerRegistryStore &
  DoctorStore &
  ArchiveStore &
  FlowStore &
  Closable;

/** The task store and the schedules in the same database: what `openStore()` hands out. */
export type AxStore = TaskStore & ScheduleStore;

/** A cron schedule as stored. */
export interface ScheduleRecord {
  name: string;
  cron: string;
  tz: string;
  type: string;
  payload: string;
  pool: PoolName;
  /** The level of every occurrence (and of the doorbells rung for it). */
  priority: Priority;
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

export interface SchedulesAddParams {
  schedule: NewSchedule;
}
export interface ScheduleNameParams {
  name: string;
}
export interface SchedulesSetPausedParams {
  name: string;
  paused: boolean;
  /** When given, the next fire time is set too. */
  nextFireAt?: Date | null;
}
export interface SchedulesDueParams {
  horizonMs: number;
}
export interface SchedulesAdvanceParams {
  name: string;
  expectedNext: Date | null;
  next: Date | null;
  last: {fireAt: Date; taskId: string} | null;
}
export interface OccurrencesPreviousParams {
  name: string;
  before: Date;
  excludeId?: string;
}

/**
 * Storage of cron schedules (same database, same cell as the tasks). Occurrences are ordinary
 * tasks with `scheduleName` set and the dedup key `cron:<name>@<fire time ISO>`, so each
 * (schedule, fire time) exists at most once however many schedulers create it.
 */
export interface ScheduleStore {
  /** Throws AxError('conflict') when the name exists. */
  schedulesAdd(p: SchedulesAddParams): Promise<void>;
  schedulesGet(p: ScheduleNameParams): Promise<ScheduleRecord | null>;
  schedulesList(): Promise<ScheduleRecord[]>;
  /** Returns false when the name does not exist. */
  schedulesSetPaused(p: SchedulesSetPausedParams): Promise<boolean>;
  /** Deletes the schedule; returns false when it did not exist. */
  schedulesRemove(p: ScheduleNameParams): Promise<boolean>;
  /** Unpaused schedules whose next occurrence is due within `horizonMs` (or unknown). */
  schedulesDue(p: SchedulesDueParams): Promise<ScheduleRecord[]>;
  /**
   * Moves a schedule on after its occurrences were created, only if its next fire time is still
   * `expectedNext` (another scheduler may have done it first). Returns whether it moved.
   */
  schedulesAdvance(p: SchedulesAdvanceParams): Promise<boolean>;
  /** The latest occurrence of a schedule due before `before`, other than `excludeId` (for the overlap policy). */
  occurrencesPrevious(p: OccurrencesPreviousParams): Promise<{id: string; state: TaskState} | null>;
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
  /** As written: validated by the relay (an unknown level fails the row); null on a table without the column. */
  priority: string | null;
  maxRetries: number | null;
  timeoutMs: number | null;
  dedupKey: string | null;
  createdAt: Date;
  attempts: number;
  lastError: string | null;
  failedAt: Date | null;
}

export interface OutboxClaimParams {
  owner: string;
  limit: number;
  leaseMs: number;
  /** Only rows of these types (a cell's relay; see cells/cells.ts typeSelector); absent: every row. */
  types?: TypeSelector;
}
export interface OutboxMarkSentParams {
  ids: number[];
  owner: string;
}
export interface OutboxMarkFailedParams {
  rows: Array<{id: number; error: string}>;
  owner: string;
}
export interface OutboxReleaseParams {
  ids: number[];
  owner: string;
  error: string;
}
export interface OutboxPurgeSentParams {
  olderThanMs: number;
  limit: number;
}
export interface OutboxListParams {
  limit: number;
}
export interface OutboxRowStatesParams {
  ids: number[];
}
export interface OutboxRetryFailedParams {
  /** These rows, or every failed row. */
  ids: number[] | 'all';
}

export interface OutboxLag {
  unsent: number;
  failed: number;
  oldestAgeMs: number | null;
}

/**
 * The relay's seam on the business database's `task_outbox`. Claims are short transactions with
 * `FOR UPDATE SKIP LOCKED` so several relays share one table; no lock is held across a publish.
 */
export interface OutboxRelayStore {
  /** Takes up to `limit` unsent, unfailed rows not claimed by a live relay, oldest first, for `leaseMs`. */
  outboxClaim(p: OutboxClaimParams): Promise<OutboxRow[]>;
  /** Marks rows sent (only those still claimed by `owner`); returns how many. */
  outboxMarkSent(p: OutboxMarkSentParams): Promise<number>;
  /** Marks rows that can never be relayed as failed, with the reason; they are skipped from then on. */
  outboxMarkFailed(p: OutboxMarkFailedParams): Promise<void>;
  /** Hands rows back after a transient error (the error is recorded; another pass retries them). */
  outboxRelease(p: OutboxReleaseParams): Promise<void>;
  /** Deletes sent rows older than `olderThanMs`, at most `limit`; returns how many. */
  outboxPurgeSent(p: OutboxPurgeSentParams): Promise<number>;
  /** Unsent rows and the age of the oldest (the outbox lag). */
  outboxLag(): Promise<OutboxLag>;
}

/** `ax outbox …` and `ax migrate --outbox`: inspection and repair of `task_outbox`. */
export interface OutboxAdminStore {
  /** The business database's name (for messages). */
  readonly database: string;
  outboxLag(): Promise<OutboxLag>;
  /** Rows not yet sent nor failed, oldest first. */
  outboxListUnsent(p: OutboxListParams): Promise<OutboxRow[]>;
  /** Failed rows, oldest first. */
  outboxListFailed(p: OutboxListParams): Promise<OutboxRow[]>;
  /** Where each row stands: pending, sent or failed (missing ids are absent from the map). */
  outboxRowStates(p: OutboxRowStatesParams): Promise<Map<number, 'pending' | 'sent' | 'failed'>>;
  /** Clears the failure of these rows (or all failed rows) so the relay tries them again; returns how many. */
  outboxRetryFailed(p: OutboxRetryFailedParams): Promise<number>;
  /** Whether task_outbox exists in the business database. */
  outboxTableExists(): Promise<boolean>;
  /**
   * Creates task_outbox if missing and gives a table made before them its CHECK constraints
   * (idempotent). Throws AxError('invalid_input'), changing nothing, when existing rows break a
   * constraint (their ids are in the message).
   */
  outboxCreateTable(): Promise<void>;
}

/** One numbered migration of ax's database and when it was applied (null: pending). */
export interface MigrationStatus {
  version: number;
  name: string;
  appliedAt: Date | null;
}

export interface MigrateReport {
  database: string;
  applied: Array<{version: number; name: string}>;
  current: number;
  latest: number;
}

/** `ax migrate`: the numbered, forward-only migrations of ax's own database. */
export interface SchemaStore extends Closable {
  /** The database's name (for messages). */
  readonly database: string;
  /** Every known migration with its applied time. */
  schemaStatus(): Promise<MigrationStatus[]>;
  /** Applies the pending migrations in order under a named lock; concurrent runs are safe. */
  schemaMigrate(): Promise<MigrateReport>;
}

/** Everything the business database's outbox offers, for composition roots and tests. */
export type OutboxStore = OutboxRelayStore & OutboxAdminStore & Closable;

/** Why MySQL could not be used: `details.reason` of the AxError('unavailable') the adapter throws. */
export type DbFailureReason =
  | 'unreachable' // no server answers at the URL's host and port, or the connection broke
  | 'access_denied' // the server refused the login: unknown user or wrong password (it never says which)
  | 'permission_denied' // logged in, but the user may not use the database or a table
  | 'unknown_database' // the database named in the URL does not exist
  | 'not_migrated'; // the database exists but ax's schema (or task_outbox) is missing or old
