/**
 * Entry of a CPU-pool worker thread (see cpu-pool.ts). Loads the handlers module once, reports
 * `{ready: true}` or `{loadError}`, then runs jobs one at a time: `{jobId, ...}` in,
 * `{jobId, outcome}` out. Interruption is by thread termination, so the handler's AbortSignal is
 * local and never aborted from outside; its logger writes JSON lines to stderr.
 */
import {parentPort, workerData} from 'node:worker_threads';
import {errorMessage, stackHead} from '../errors.js';
import {createLogger} from '../log.js';
import type {JsonObject} from '../task/model.js';
import {loadHandlers, runHandler, type HandlerMap, type TaskOutcome} from './handlers.js';

export interface ThreadData {
  handlersModule: string;
}
export interface ThreadJob {
  jobId: number;
  taskId: string;
  type: string;
  attempt: number;
  payload: JsonObject;
}
export type ThreadMessage = {ready: true} | {loadError: string} | {jobId: number; outcome: TaskOutcome};

async function main(): Promise<void> {
  const port = parentPort;
  if (!port) throw new Error('cpu-thread must be started as a worker thread');
  const post = (m: ThreadMessage): void => port.postMessage(m);
  let handlers: HandlerMap;
  try {
    handlers = await loadHandlers((workerData as ThreadData).handlersModule);
  } catch (e) {
    post({loadError: errorMessage(e)});
    return; // no message listener: the thread exits
  }
  const logger = createLogger('info', {thread: 'cpu'});
  port.on('message', (job: ThreadJob) => {
    const {jobId, taskId, type, attempt, payload} = job;
    const handler = handlers.byType.get(type);
    const ctx = {taskId, type, attempt, payload, signal: new AbortController().signal, logger: logger.child({taskId, type, attempt})};
    const run: Promise<TaskOutcome> = handler
      ? runHandler(handler, ctx)
      : Promise.resolve({ok: false, message: 'unknown task type', unrecoverable: true});
    run
      .catch((e: unknown): TaskOutcome => {
        const stack = stackHead(e);
        return {ok: false, message: `handler failed: ${errorMessage(e)}`, unrecoverable: false, ...(stack === undefined ? {} : {stack})};
      })
      .then((outcome) => post({jobId, outcome}));
  });
  post({ready: true});
}

await main();
