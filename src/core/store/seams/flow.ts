/**
 * The type registry and flow control (FlowStore): pause state, settings, breakers, live handlers
 * and the parked backlog. On MySQL: mysql/flow.ts and flow-park.ts.
 */

import type {TaskState} from '../../task/state.js';
import type {AuditContext} from './audit.js';
import type {DbClockStore, DispatchRef, ParkedKind} from './common.js';

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

export interface TypeKeysParams {
  type: string;
  /** How many keys of each list: the most backlog, the most running. */
  limit: number;
}

/** One task key (TaskSpec.key) of a type: its claimable rows and its running attempts. */
export interface KeyCount {
  key: string;
  /** Claimable (submitted or failed: due and delayed, parked included). */
  backlog: number;
  running: number;
}

/** The task keys of one type (tasks without a key are not in it). */
export interface TypeKeysReport {
  /** False: the database has no index of task keys (`ax migrate --task-keys`); the counts are then 0, not read. */
  indexed?: boolean;
  /** Claimable tasks with a key. */
  backlog: number;
  /** Distinct keys with claimable tasks. */
  withBacklog: number;
  /** Running attempts of tasks with a key. */
  running: number;
  /** Distinct keys with running attempts. */
  withRunning: number;
  /**
   * The `limit` keys with the most backlog and the `limit` with the most running (each with both
   * counts), most backlog first, then most running, then by key.
   */
  top: KeyCount[];
}

/**
 * The type registry and flow control: pause state, settings, breaker state per type, which live
 * workers handle which type, and the parked backlog. Pause/resume are audited in their transaction.
 */
export interface FlowStore extends DbClockStore {
  /** Creates registry rows for these types when missing (a worker's handlers, on start). */
  typesRegister(p: HandlersRegisterParams): Promise<void>;
  /**
   * The state the admission step needs (see FlowView). Two statements on small tables (a third,
   * the clock, when no worker is live).
   */
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
   * Parks unclaimed tasks in one transaction: a locking read; for a kind whose cause may have gone
   * since the caller's snapshot (paused, breaker, unhandled), a read of the registry or the live
   * handlers, and those tasks are made due at once instead (see TasksDeferParams.liveMs); then per
   * (delay, kind) one UPDATE guarded by the defer transition (claimable at the fence read) that makes them due later,
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
  /**
   * Deletes outcome rows older than `olderThanMs` (at most a few thousand; returns how many) and
   * the per-key rate buckets that are full again (task_key_buckets.full_at passed).
   */
  outcomesPurge(p: {olderThanMs: number}): Promise<number>;
  /**
   * Moves a type's breaker (compare-and-set on its state and changedAt, so of several workers
   * deciding the same transition one wins) with a history row (and an audit row when given), in
   * one transaction. Returns whether it moved.
   */
  breakerTransition(p: BreakerTransitionParams): Promise<boolean>;
  /** Stores a type's settings (row created if missing) with a history and an audit row. */
  typeSetSettings(p: TypeSetSettingsParams): Promise<TypeRecord>;
  /**
   * Whether the tasks table has the index of task keys (`ax migrate --task-keys`), which per-key
   * limits, fair dispatch and typeKeys read. Cached for a minute once it says yes.
   */
  keysIndexed(): Promise<boolean>;
  /**
   * A type's task keys: the top keys by backlog and by running, and the totals (mysql/keys.ts).
   * Index-only ranges of idx_tasks_key; the backlog's is as long as the type's keyed backlog
   * (about half a second per million claimable rows with a key): not for a per-second loop.
   */
  typeKeys(p: TypeKeysParams): Promise<TypeKeysReport>;
}
