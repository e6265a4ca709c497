/**
 * Entry of a CPU-pool worker thread (see cpu-pool.ts). Loads the handlers module once, reports
 * `{ready: true}` or `{loadError}`, then runs jobs one at a time: `{jobId, ...}` in,
 * `{jobId, outcome}` out. `{abort: jobId, reason}` in (an operator's cancel) aborts that job's
 * AbortSignal; past the cancel's grace period, and on a timeout, the main thread terminates the
 * thread instead. The handler's logger writes JSON lines to stderr. `ctx.progress` is checked here
 * (a bad call throws in the handler) and posted as `{progress: jobId, percent, note}`, at most one
 * message per PROGRESS_POST_MS per job (the latest report wins; the last one of a burst follows
 * once the thread's event loop is free).
 *
 * Stray errors in handler code (outside the awaited attempt) are posted to the main thread as
 * `{stray, message, stack}`: an unhandled rejection, after which the thread keeps running, or an
 * uncaught exception, after which the thread takes no more jobs and waits to be terminated and
 * replaced (it exits by itself after STRAY_EXIT_MS if nobody does).
 */
import type {ParentInfo} from '../task/links.js';
import {parentPort, workerData} from 'node:worker_threads';
import {errorMessage, stackHead} from '../errors.js';
import {createLogger} from '../log.js';
import type {ForcedReplay, JsonObject} from '../task/model.js';
import {loadHandlers, runHandler, type HandlerMap, type RunOutcome} from './handlers.js';
import {checkProgress, type ProgressReport} from './results.js';

export interface ThreadData {
  handlersModule: string;
}
export interface ThreadJob {
  jobId: number;
  taskId: string;
  type: string;
  attempt: number;
  payload: JsonObject;
  /** See TaskContext.replay (a Date survives postMessage). */
  replay?: ForcedReplay;
  /** See TaskContext.parents (absent: none). */
  parents?: Record<string, ParentInfo>;
}
/** Asks the handler of job `abort` to stop: its AbortSignal is aborted with `reason` (AbortError). */
export interface ThreadAbort {
  abort: number;
  reason: string;
}
/** A stray error of handler code in the thread; `stack` is the error's whole stack when it had one. */
export interface ThreadStray {
  stray: 'unhandledRejection' | 'uncaughtException';
  message: string;
  stack?: string;
}
/** A job's latest progress report (already checked). */
export interface ThreadProgress extends ProgressReport {
  progress: number;
}
export type ThreadMessage = {ready: true} | {loadError: string} | {jobId: number; outcome: RunOutcome} | ThreadProgress | ThreadStray;

/** The least time between two progress messages of one job (the worker writes at most one a second anyway). */
const PROGRESS_POST_MS = 200;

/** How long a thread that had an uncaught exception waits for the main thread to end it. */
const STRAY_EXIT_MS = 5000;

function strayOf(kind: ThreadStray['stray'], e: unknown): ThreadStray {
  const stack = typeof e === 'object' && e !== null ? (e as {stack?: unknown}).stack : undefined;
  return {stray: kind, message: errorMessage(e), ...(typeof stack === 'string' && stack !== '' ? {stack} : {})};
}

async function main(): Promise<void> {
  const port = parentPort;
  if (!port) throw new Error('cpu-thread must be started as a worker thread');
  const post = (m: ThreadMessage): void => port.postMessage(m);
  process.on('unhandledRejection', (reason) => post(strayOf('unhandledRejection', reason)));
  let broken = false;
  process.on('uncaughtException', (error) => {
    if (broken) return;
    broken = true;
    post(strayOf('uncaughtException', error));
    setTimeout(() => process.exit(1), STRAY_EXIT_MS).unref();
  });
  let handlers: HandlerMap;
  try {
    handlers = await loadHandlers((workerData as ThreadData).handlersModule);
  } catch (e) {
    post({loadError: errorMessage(e)});
    return; // no message listener: the thread exits
  }
  const logger = createLogger('info', {thread: 'cpu'});
  const controllers = new Map<number, AbortController>();
  port.on('message', (msg: ThreadJob | ThreadAbort) => {
    if ('abort' in msg) {
      controllers.get(msg.abort)?.abort(new DOMException(msg.reason, 'AbortError'));
      return;
    }
    if (broken) return; // the main thread fails this job when it ends the thread
    const {jobId, taskId, type, attempt, payload, replay, parents} = msg;
    const handler = handlers.byType.get(type);
    const controller = new AbortController();
    controllers.set(jobId, controller);
    // Leading post, then the latest of a burst once PROGRESS_POST_MS has passed (if the loop is free).
    let lastPost = -Infinity;
    let latest: ProgressReport | null = null;
    let trailing: ReturnType<typeof setTimeout> | null = null;
    const postProgress = (): void => {
      trailing = null;
      if (!latest || !controllers.has(jobId)) return;
      lastPost = performance.now();
      post({progress: jobId, percent: latest.percent, note: latest.note});
      latest = null;
    };
    const ctx = {
      taskId,
      type,
      attempt,
      payload,
      ...(replay === undefined ? {} : {replay}),
      parents: parents ?? {},
      signal: controller.signal,
      logger: logger.child({taskId, type, attempt}),
      progress(percent: number, note?: string): void {
        latest = checkProgress(percent, note);
        const wait = lastPost + PROGRESS_POST_MS - performance.now();
        if (wait <= 0) postProgress();
        else trailing ??= setTimeout(postProgress, wait);
      },
    };
    const run: Promise<RunOutcome> = handler
      ? runHandler(handler, ctx)
      : Promise.resolve({ok: false, message: 'unknown task type', unrecoverable: true});
    run
      .catch((e: unknown): RunOutcome => {
        const stack = stackHead(e);
        return {ok: false, message: `handler failed: ${errorMessage(e)}`, unrecoverable: false, ...(stack === undefined ? {} : {stack})};
      })
      .then((outcome) => {
        controllers.delete(jobId);
        if (trailing) clearTimeout(trailing);
        post({jobId, outcome});
      });
  });
  post({ready: true});
}

await main();
