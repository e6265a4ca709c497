import {createRequire} from 'node:module';
import path from 'node:path';
import {pathToFileURL} from 'node:url';
import {Worker} from 'node:worker_threads';
import {errorMessage, invalid, stackHead} from '../errors.js';
import type {Logger} from '../log.js';
import type {Clock, TimerHandle} from '../time.js';
import type {ThreadAbort, ThreadData, ThreadJob, ThreadMessage, ThreadStray} from './cpu-thread.js';
import {NOT_STARTED, outcomeToResult, WITHDRAWN, type ExecutionPool, type JobResult, type PoolJob, type ProgressListener} from './pool.js';

export interface CpuPoolOptions {
  size: number;
  capacity: number;
  /** File URL or path of the user's handlers module (loaded once per thread). */
  handlersModule: string;
  clock: Clock;
  logger: Logger;
  /**
   * Told of each stray error of handler code in a thread (logged here at error with its stack):
   * the worker counts unhandled rejections with its own.
   */
  onStray?: (kind: 'unhandledRejection' | 'uncaughtException') => void;
  /** Told of a running job's progress reports (see TaskContext.progress), posted by its thread. */
  onProgress?: ProgressListener;
}

interface Job {
  id: number;
  job: PoolJob;
  state: 'queued' | 'running' | 'done';
  resolve: (r: JobResult) => void;
  thread: Thread | null;
  timer: TimerHandle | null;
  /** A cancel asked its handler to stop (see ExecutionPool.cancel); the timer is then the grace period's. */
  cancelling?: boolean;
}

interface Thread {
  worker: Worker;
  state: 'starting' | 'idle' | 'busy' | 'dying';
  job: Job | null;
  error: string | null;
}

const RESTART_DELAY_MS = 1000;

/**
 * Where the thread starts. From built JS: `cpu-thread.js`, inheriting the process's execArgv.
 * From TypeScript source (vitest, tsx): `cpu-thread.ts`, with tsx registered by an `--import`
 * data: URL that calls tsx's `register()` — plain `--import tsx` does not work here: on Node 20
 * tsx's entry registers its hooks only when `isMainThread` (tsx#354, node#47747).
 */
function threadEntry(): {url: URL; execArgv?: string[]} {
  if (!import.meta.url.endsWith('.ts')) return {url: new URL('./cpu-thread.js', import.meta.url)};
  const api = pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm/api')).href;
  const boot = `import {register} from ${JSON.stringify(api)}; register();`;
  return {url: new URL('./cpu-thread.ts', import.meta.url), execArgv: ['--import', `data:text/javascript,${encodeURIComponent(boot)}`]};
}

/** A file URL for a path (relative paths against the cwd); URLs are returned unchanged. */
function toModuleUrl(spec: string): string {
  return /^[a-z][a-z0-9+.-]+:/i.test(spec) ? spec : pathToFileURL(path.resolve(spec)).href;
}

/**
 * Creates the CPU pool: `size` worker threads, each loading `handlersModule` once and running one
 * job at a time, with up to `capacity` jobs queued. Resolves once every thread has loaded the
 * module; rejects with invalid_input (and stops the threads) when it cannot be loaded. On timeout
 * or abort the job's thread is terminated and replaced; on a cancel the handler's signal in the
 * thread is aborted first and the thread terminated only if the job is still running after the
 * grace period; a thread that dies (uncaught error,
 * process.exit) fails its job as retryable and is replaced. A replacement that fails to load is
 * retried every second (logged as an error); queued jobs wait meanwhile. A stray error in handler
 * code in a thread is logged at error with its stack and reported to `onStray`: after an
 * unhandled rejection the thread keeps running; after an uncaught exception the job the thread
 * runs fails (retryable) with that error and the thread is replaced.
 */
export async function createCpuPool(opts: CpuPoolOptions): Promise<ExecutionPool> {
  const {size, capacity, clock, logger} = opts;
  if (!Number.isInteger(size) || size < 1) throw invalid(`cpu pool size must be an integer >= 1, got ${size}`);
  if (!Number.isInteger(capacity) || capacity < 0) throw invalid(`cpu pool capacity must be an integer >= 0, got ${capacity}`);
  const entry = threadEntry();
  const data: ThreadData = {handlersModule: toModuleUrl(opts.handlersModule)};
  const threads = new Set<Thread>();
  const queue: Job[] = [];
  let running = 0;
  let nextId = 1;
  let phase: 'starting' | 'open' | 'closed' = 'starting';
  let draining = false;
  let drained: Promise<{notStarted: string[]}> | null = null;
  let onIdle: (() => void) | null = null;

  const finish = (j: Job, r: JobResult): boolean => {
    if (j.state === 'done') return false;
    if (j.state === 'running') running--;
    else if (queue.includes(j)) queue.splice(queue.indexOf(j), 1);
    j.state = 'done';
    if (j.timer) clock.clearTimeout(j.timer);
    j.resolve(r);
    if (running + queue.length === 0) onIdle?.();
    return true;
  };

  /** Ends the job on its thread now and terminates the thread (replaced on exit). */
  const kill = (j: Job, r: JobResult): void => {
    const t = j.thread;
    if (t) {
      t.job = null;
      t.state = 'dying';
      void t.worker.terminate();
    }
    finish(j, r);
  };

  /** Sends the head of the queue to an idle thread. */
  const dispatch = (t: Thread, j: Job): void => {
    queue.shift();
    running++;
    j.state = 'running';
    j.thread = t;
    t.job = j;
    t.state = 'busy';
    const {taskId, type, attempt, payload, timeoutMs, replay, parents} = j.job;
    j.timer = clock.setTimeout(
      () => kill(j, {kind: 'timeout', message: `timed out after ${timeoutMs}ms (worker thread terminated)`}),
      timeoutMs,
    );
    const msg: ThreadJob = {
      jobId: j.id,
      taskId,
      type,
      attempt,
      payload,
      ...(replay === undefined ? {} : {replay}),
      ...(parents === undefined ? {} : {parents}),
    };
    try {
      t.worker.postMessage(msg);
    } catch (e) {
      t.job = null;
      t.state = 'idle';
      finish(j, {kind: 'fail', unrecoverable: true, message: `cannot send payload to worker thread: ${errorMessage(e)}`});
    }
  };

  /** A stray error posted by a thread: log, report, and on an uncaught exception end the thread. */
  const onStray = (t: Thread, m: ThreadStray): void => {
    const error = Object.assign(new Error(m.message), m.stack === undefined ? {} : {stack: m.stack});
    const taskId = t.job?.job.taskId;
    if (m.stray === 'unhandledRejection') {
      logger.error('unhandled promise rejection in a CPU worker thread (the thread keeps running)', {error, ...(taskId ? {taskId} : {})});
    } else {
      logger.error('uncaught exception in a CPU worker thread; its job fails and the thread is replaced', {
        error,
        ...(taskId ? {taskId} : {}),
      });
      t.error = `uncaught exception: ${m.message}`;
      const message = `handler failed: uncaught exception in worker thread: ${m.message}`;
      const stack = stackHead(error);
      if (t.job) kill(t.job, {kind: 'fail', unrecoverable: false, message, ...(stack === undefined ? {} : {stack})});
      else if (t.state !== 'dying') {
        t.state = 'dying';
        void t.worker.terminate();
      }
    }
    opts.onStray?.(m.stray);
  };

  const pump = (): void => {
    for (const t of threads) {
      const next = queue[0];
      if (!next) return;
      if (t.state === 'idle') dispatch(t, next);
    }
  };

  const spawn = (): Promise<void> => {
    const worker = new Worker(entry.url, {workerData: data, execArgv: entry.execArgv});
    const t: Thread = {worker, state: 'starting', job: null, error: null};
    threads.add(t);
    return new Promise<void>((resolve, reject) => {
      worker.on('message', (m: ThreadMessage) => {
        if ('ready' in m) {
          if (t.state === 'starting') t.state = 'idle';
          resolve();
          pump();
        } else if ('loadError' in m) {
          t.error = m.loadError;
        } else if ('stray' in m) {
          onStray(t, m);
        } else if ('progress' in m) {
          if (t.job?.id === m.progress && t.job.state === 'running') opts.onProgress?.(t.job.job, {percent: m.percent, note: m.note});
        } else if (t.job?.id === m.jobId) {
          const j = t.job;
          t.job = null;
          t.state = 'idle';
          finish(j, outcomeToResult(m.outcome));
          pump();
        }
      });
      worker.on('error', (e) => (t.error = errorMessage(e)));
      worker.on('exit', (code) => {
        threads.delete(t);
        const wasStarting = t.state === 'starting';
        const why = t.error ?? `exit code ${code}`;
        t.state = 'dying';
        if (wasStarting) reject(invalid(`CPU worker thread did not start: ${why}`));
        const j = t.job;
        t.job = null;
        if (j) finish(j, {kind: 'fail', unrecoverable: false, message: `worker thread exited: ${why}`});
        if (phase !== 'open') return;
        if (!wasStarting) return void spawn().catch(() => {}); // its own exit handler reports
        logger.error('cpu pool: worker thread failed to start; retrying', {error: why, retryMs: RESTART_DELAY_MS});
        clock.setTimeout(() => phase === 'open' && void spawn().catch(() => {}), RESTART_DELAY_MS).unref?.();
      });
    });
  };

  const stopThreads = async (): Promise<void> => {
    phase = 'closed';
    await Promise.all([...threads].map((t) => t.worker.terminate()));
  };

  try {
    await Promise.all(Array.from({length: size}, spawn));
  } catch (e) {
    await stopThreads();
    throw e;
  }
  phase = 'open';

  return {
    name: 'cpu',
    size,
    capacity,
    get running() {
      return running;
    },
    get queued() {
      return queue.length;
    },
    tryRun(job) {
      if (draining || running + queue.length >= size + capacity) return null;
      return new Promise<JobResult>((resolve) => {
        queue.push({id: nextId++, job, state: 'queued', resolve, thread: null, timer: null});
        pump();
      });
    },
    drain(graceMs) {
      draining = true;
      drained ??= new Promise<string[]>((resolve) => {
        if (running + queue.length === 0) return resolve([]);
        const timer = clock.setTimeout(() => {
          onIdle = null;
          phase = 'closed'; // no replacements for the threads killed below
          logger.warn('cpu pool: shutdown grace period expired', {graceMs, running, queued: queue.length});
          const notStarted = queue.map((j) => j.job.taskId);
          for (const j of [...queue]) finish(j, {kind: 'aborted', message: NOT_STARTED});
          for (const t of threads) if (t.job) kill(t.job, {kind: 'aborted', message: `shutdown grace period of ${graceMs}ms expired`});
          resolve(notStarted);
        }, graceMs);
        onIdle = () => {
          onIdle = null;
          clock.clearTimeout(timer);
          resolve([]);
        };
      }).then(async (notStarted) => {
        await stopThreads();
        return {notStarted};
      });
      return drained;
    },
    withdraw(f) {
      const out: string[] = [];
      for (const j of [...queue])
        if (f(j.job)) {
          out.push(j.job.taskId);
          finish(j, {kind: 'aborted', message: WITHDRAWN});
        }
      return out;
    },
    abort(taskId, reason) {
      for (const j of [...queue]) if (j.job.taskId === taskId) finish(j, {kind: 'aborted', message: reason});
      for (const t of [...threads]) if (t.job?.job.taskId === taskId) kill(t.job, {kind: 'aborted', message: reason});
    },
    cancel(taskId, reason, graceMs) {
      let found = false;
      for (const j of [...queue])
        if (j.job.taskId === taskId) {
          found = true;
          finish(j, {kind: 'aborted', message: reason});
        }
      for (const t of [...threads]) {
        const j = t.job;
        if (j?.job.taskId !== taskId) continue;
        found = true;
        if (j.cancelling) continue;
        j.cancelling = true;
        // The handler's signal in the thread, then the thread itself once the grace period is over.
        const ask: ThreadAbort = {abort: j.id, reason};
        try {
          t.worker.postMessage(ask);
        } catch {
          // A thread that cannot take the message is terminated at the grace period's end anyway.
        }
        if (j.timer) clock.clearTimeout(j.timer);
        j.timer = clock.setTimeout(() => {
          logger.warn('handler ignored its cancel: worker thread terminated after the grace period', {
            taskId,
            type: j.job.type,
            attempt: j.job.attempt,
            graceMs,
          });
          kill(j, {kind: 'aborted', message: `${reason} (worker thread terminated after the cancel grace period of ${graceMs}ms)`});
        }, graceMs);
      }
      return found;
    },
  };
}
