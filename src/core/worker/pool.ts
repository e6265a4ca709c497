import type {ForcedReplay, JsonObject, PoolName, Priority} from '../task/model.js';
import type {RunOutcome} from './handlers.js';
import type {ProgressReport} from './results.js';
import type {AttemptSpan} from '../trace-context.js';
import type {ParentInfo} from '../task/links.js';

/** The `aborted` message of a job that never started before drain's deadline (see ExecutionPool.drain). */
export const NOT_STARTED = 'not started';

/** The `aborted` message of a job taken back before it started (see ExecutionPool.withdraw). */
export const WITHDRAWN = 'withdrawn before it started';

/** One attempt of one task, as handed to a pool. */
export interface PoolJob {
  taskId: string;
  type: string;
  attempt: number;
  payload: JsonObject;
  /** The task's level: which local queue it waits in when the pool is busy (default normal; see levels.ts). */
  priority?: Priority;
  /** Per-attempt timeout, measured from the moment the handler starts (not from queueing). */
  timeoutMs: number;
  /** A forced replay's who/when/why (ctx.replay); absent for ordinary runs and plain replays. */
  replay?: ForcedReplay;
  /**
   * The attempt's span, for a task submitted in a trace: the IO pool runs the handler with it
   * active (the handler's own spans are its children); the CPU pool's threads do not see it.
   */
  span?: AttemptSpan;
  /** ctx.parents of a task with parents; absent (an empty object to the handler) otherwise. */
  parents?: Record<string, ParentInfo>;
}

/** Told of a running job's progress report (checked: see results.ts checkProgress). */
export type ProgressListener = (job: PoolJob, report: ProgressReport) => void;

/** How an attempt ended, from the pool's point of view. */
export type JobResult =
  /** `resultJson`: the handler's result as JSON text (checked: ≤ 64 KiB), absent for none. */
  | {kind: 'success'; resultJson?: string}
  /** `stack`: the first lines of the thrown error's stack (see stackHead in core/errors.ts), when it had one. */
  | {kind: 'fail'; message: string; unrecoverable: boolean; stack?: string}
  | {kind: 'timeout'; message: string}
  | {kind: 'aborted'; message: string};

/** A bounded executor of handler attempts (IO: event loop + p-limit; CPU: worker_threads). */
export interface ExecutionPool {
  readonly name: PoolName;
  /** Max concurrently running jobs. */
  readonly size: number;
  /** Max jobs waiting in the local queue. */
  readonly capacity: number;
  readonly running: number;
  readonly queued: number;
  /**
   * Accepts a job if running+queued < size+capacity and the pool is not draining; returns null
   * otherwise (the caller hands the task back to storage). The promise never rejects.
   */
  tryRun(job: PoolJob): Promise<JobResult> | null;
  /**
   * Stops accepting; lets running AND queued jobs finish for up to graceMs; then aborts what still
   * runs (resolved as `aborted`). Jobs never started by the deadline resolve as
   * `{kind: 'aborted', message: 'not started'}` and their taskIds are returned in `notStarted` so
   * the caller can release them without using an attempt. Calling it again returns the same promise.
   */
  drain(graceMs: number): Promise<{notStarted: string[]}>;
  /** Aborts one running or queued job (e.g. its lease was lost); it resolves as `aborted` at once. */
  abort(taskId: string, reason: string): void;
  /**
   * Takes back every job that has not started and for which `f` is true (a pause or an opening
   * breaker seen after they were queued): each resolves at once as `{kind: 'aborted', message:
   * WITHDRAWN}`; their task ids are returned. Running jobs are not touched. Synchronous.
   */
  withdraw(f: (job: PoolJob) => boolean): string[];
  /**
   * Stops one job on an operator's cancel; returns false when this pool does not have it. A queued
   * job resolves as `aborted` at once. A running one is asked to stop (its AbortSignal is aborted
   * with `reason`) and resolves with whatever it returns if it settles within `graceMs`; one still
   * running then is stopped like a timeout (resolved as `aborted`; IO: its slot is freed whether or
   * not the handler stops, CPU: the thread is terminated and replaced). Its own timeout no longer
   * applies. Optional: a pool without it only has `abort`.
   */
  cancel?(taskId: string, reason: string, graceMs: number): boolean;
}

/** Maps a handler's RunOutcome to a JobResult. */
export function outcomeToResult(o: RunOutcome): JobResult {
  if (o.ok) return o.resultJson === undefined ? {kind: 'success'} : {kind: 'success', resultJson: o.resultJson};
  return {kind: 'fail', message: o.message, unrecoverable: o.unrecoverable, ...(o.stack === undefined ? {} : {stack: o.stack})};
}

/** The reason put on an AbortSignal: a DOMException named like the platform's own aborts. */
export function abortReason(message: string, name: 'TimeoutError' | 'AbortError'): DOMException {
  return new DOMException(message, name);
}
