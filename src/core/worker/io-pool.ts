import pLimit from 'p-limit';
import {errorMessage, invalid, stackHead} from '../errors.js';
import type {Logger} from '../log.js';
import type {Clock, TimerHandle} from '../time.js';
import {runHandler, type HandlerMap, type TaskContext} from './handlers.js';
import {
  abortReason,
  NOT_STARTED,
  outcomeToResult,
  WITHDRAWN,
  type ExecutionPool,
  type JobResult,
  type PoolJob,
  type ProgressListener,
} from './pool.js';
import {checkProgress} from './results.js';

export interface IoPoolOptions {
  size: number;
  capacity: number;
  handlers: HandlerMap;
  clock: Clock;
  logger: Logger;
  /** Told of a running job's progress reports (see TaskContext.progress). */
  onProgress?: ProgressListener;
}

interface Entry {
  job: PoolJob;
  state: 'queued' | 'running' | 'done';
  /** Created when the handler first reads `ctx.signal` (most never do): see abortEntry. */
  controller: AbortController | null;
  abortReason?: DOMException;
  resolve: (r: JobResult) => void;
  /** Frees the p-limit slot (set when the job starts). */
  release: () => void;
  timer: TimerHandle | null;
  /** When the signal was aborted (monotonic ms), to tell a prompt stop from an ignored abort. */
  abortedAt?: number;
}

/** A handler that settles within this long after its abort is taken to have honoured it. */
const ABORT_HONOURED_MS = 1000;

const noop = (): void => {};

/** Aborts an attempt's signal, whether or not the handler has asked for it yet. */
function abortEntry(e: Entry, reason: DOMException, now: number): void {
  if (e.abortReason) return;
  e.abortReason = reason;
  e.abortedAt = now;
  e.controller?.abort(reason);
}

/** The parents of a task without parents (frozen: shared by every such context). */
const NO_PARENTS: Readonly<Record<string, never>> = Object.freeze({});

/**
 * The context of one attempt. `signal`, `logger` and `progress` are made on first use: an
 * AbortController and a child logger per task were most of the pool's CPU per no-op task
 * (measured), and a task that never reports progress needs no closure for it. They are own,
 * enumerable getters, so a handler that spreads the context (`{...ctx, payload}`) still passes them on.
 */
function taskContext(job: PoolJob, e: Entry, parent: Logger, onProgress: ProgressListener | undefined): TaskContext {
  let log: Logger | null = null;
  let report: TaskContext['progress'] | null = null;
  return {
    taskId: job.taskId,
    type: job.type,
    attempt: job.attempt,
    payload: job.payload,
    ...(job.replay === undefined ? {} : {replay: job.replay}),
    parents: job.parents ?? NO_PARENTS,
    get signal(): AbortSignal {
      if (!e.controller) {
        e.controller = new AbortController();
        if (e.abortReason) e.controller.abort(e.abortReason);
      }
      return e.controller.signal;
    },
    get logger(): Logger {
      return (log ??= parent.child({taskId: job.taskId, type: job.type, attempt: job.attempt}));
    },
    get progress(): TaskContext['progress'] {
      return (report ??= (percent, note) => {
        const r = checkProgress(percent, note);
        // An attempt that has ended (timed out, aborted) reports nothing any more.
        if (e.state === 'running') onProgress?.(job, r);
      });
    },
  };
}

/**
 * Creates the IO pool: handlers run on the event loop, at most `size` at once (p-limit), with up to
 * `capacity` more waiting. Each attempt gets its own AbortSignal; on timeout (or abort/drain) the
 * signal is aborted and the job resolves at once, freeing its slot whether or not the handler
 * stops (a handler that settles later is logged as having ignored its abort). A cancel (see
 * ExecutionPool.cancel) aborts the signal and waits up to its grace period for the handler to
 * settle, then ends the attempt the same way. Throws invalid_input
 * for a size < 1 or a negative capacity.
 */
export function createIoPool(opts: IoPoolOptions): ExecutionPool {
  const {size, capacity, handlers, clock, logger} = opts;
  if (!Number.isInteger(size) || size < 1) throw invalid(`io pool size must be an integer >= 1, got ${size}`);
  if (!Number.isInteger(capacity) || capacity < 0) throw invalid(`io pool capacity must be an integer >= 0, got ${capacity}`);
  const limit = pLimit(size);
  const entries = new Set<Entry>();
  let running = 0;
  let queued = 0;
  let draining = false;
  let drained: Promise<{notStarted: string[]}> | null = null;
  let onIdle: (() => void) | null = null;

  /** Ends a job once; returns false if it had already ended. */
  const finish = (e: Entry, r: JobResult): boolean => {
    if (e.state === 'done') return false;
    if (e.state === 'running') running--;
    else queued--;
    e.state = 'done';
    if (e.timer) clock.clearTimeout(e.timer);
    entries.delete(e);
    e.release();
    e.resolve(r);
    if (entries.size === 0) onIdle?.();
    return true;
  };

  const start = (e: Entry): Promise<void> => {
    if (e.state !== 'queued') return Promise.resolve(); // aborted while it waited
    const {job} = e;
    const handler = handlers.byType.get(job.type);
    const slot = new Promise<void>((r) => (e.release = r));
    queued--;
    running++;
    e.state = 'running';
    if (!handler) {
      finish(e, {kind: 'fail', unrecoverable: true, message: 'unknown task type'});
      return slot;
    }
    const startedAt = clock.monotonic();
    e.timer = clock.setTimeout(() => {
      const message = `timed out after ${job.timeoutMs}ms`;
      abortEntry(e, abortReason(message, 'TimeoutError'), clock.monotonic());
      finish(e, {kind: 'timeout', message});
    }, job.timeoutMs);
    const ctx = taskContext(job, e, logger, opts.onProgress);
    (job.span ? job.span.run(() => runHandler(handler, ctx)) : runHandler(handler, ctx)).then(
      (outcome) => {
        const ignored = e.abortedAt === undefined || clock.monotonic() - e.abortedAt > ABORT_HONOURED_MS;
        if (!finish(e, outcomeToResult(outcome)) && ignored) {
          logger.warn('handler settled after its attempt ended: it ignored its abort signal', {
            taskId: job.taskId,
            type: job.type,
            attempt: job.attempt,
            elapsedMs: Math.round(clock.monotonic() - startedAt),
          });
        }
      },
      (err: unknown) =>
        finish(e, {
          kind: 'fail',
          unrecoverable: false,
          message: `handler failed: ${errorMessage(err)}`,
          ...(stackHead(err) === undefined ? {} : {stack: stackHead(err)}),
        }),
    );
    return slot;
  };

  const expire = (graceMs: number): string[] => {
    const notStarted: string[] = [];
    // Synchronous: p-limit starts the next job only after a microtask, so none slips in here.
    for (const e of [...entries]) {
      if (e.state === 'queued') {
        notStarted.push(e.job.taskId);
        finish(e, {kind: 'aborted', message: NOT_STARTED});
      } else {
        const message = `shutdown grace period of ${graceMs}ms expired`;
        abortEntry(e, abortReason(message, 'AbortError'), clock.monotonic());
        finish(e, {kind: 'aborted', message});
      }
    }
    limit.clearQueue();
    return notStarted;
  };

  return {
    name: 'io',
    size,
    capacity,
    get running() {
      return running;
    },
    get queued() {
      return queued;
    },
    tryRun(job) {
      if (draining || running + queued >= size + capacity) return null;
      return new Promise<JobResult>((resolve) => {
        const e: Entry = {job, state: 'queued', controller: null, resolve, release: noop, timer: null};
        entries.add(e);
        queued++;
        limit(start, e).catch((err: unknown) => {
          logger.error('io pool: job could not start', {taskId: job.taskId, error: errorMessage(err)});
          finish(e, {kind: 'fail', unrecoverable: false, message: `could not start: ${errorMessage(err)}`});
        });
      });
    },
    drain(graceMs) {
      draining = true;
      drained ??= new Promise((resolve) => {
        if (entries.size === 0) return resolve({notStarted: []});
        const timer = clock.setTimeout(() => {
          onIdle = null;
          logger.warn('io pool: shutdown grace period expired', {graceMs, running, queued});
          resolve({notStarted: expire(graceMs)});
        }, graceMs);
        onIdle = () => {
          onIdle = null;
          clock.clearTimeout(timer);
          resolve({notStarted: []});
        };
      });
      return drained;
    },
    withdraw(f) {
      const out: string[] = [];
      for (const e of [...entries])
        if (e.state === 'queued' && f(e.job)) {
          out.push(e.job.taskId);
          finish(e, {kind: 'aborted', message: WITHDRAWN});
        }
      return out;
    },
    abort(taskId, reason) {
      for (const e of [...entries]) {
        if (e.job.taskId !== taskId) continue;
        if (e.state === 'running') abortEntry(e, abortReason(reason, 'AbortError'), clock.monotonic());
        finish(e, {kind: 'aborted', message: reason});
      }
    },
    cancel(taskId, reason, graceMs) {
      let found = false;
      for (const e of [...entries]) {
        if (e.job.taskId !== taskId) continue;
        found = true;
        if (e.state !== 'running') {
          finish(e, {kind: 'aborted', message: reason});
          continue;
        }
        if (e.abortReason) continue; // already stopping (timeout, an earlier cancel)
        abortEntry(e, abortReason(reason, 'AbortError'), clock.monotonic());
        if (e.timer) clock.clearTimeout(e.timer);
        e.timer = clock.setTimeout(() => {
          logger.warn('handler ignored its cancel: still running after the grace period; its attempt ends now', {
            taskId,
            type: e.job.type,
            attempt: e.job.attempt,
            graceMs,
          });
          finish(e, {kind: 'aborted', message: `${reason} (still running after the cancel grace period of ${graceMs}ms)`});
        }, graceMs);
      }
      return found;
    },
  };
}
