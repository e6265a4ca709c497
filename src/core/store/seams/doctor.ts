/** What `ax doctor` reads beyond the other seams (DoctorStore; on MySQL: mysql/doctor.ts). */

import type {PoolName} from '../../task/model.js';

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
