import {FlowGate} from '../flow/gate.js';
import {pathToFileURL} from 'node:url';
import {isAbsolute, resolve} from 'node:path';
import {AxError, errorMessage, invalid} from '../errors.js';
import type {AxConfig} from '../config/config.js';
import {cpuPoolSize, ioPoolSize} from '../config/config.js';
import type {Broker} from '../broker/types.js';
import type {Logger} from '../log.js';
import type {WorkerStore} from './worker.js';
import {POOLS, type PoolName} from '../task/model.js';
import type {Clock, Random, TimerHandle} from '../time.js';
import type {AxEvents} from '../events.js';
import {type HandlerMap, loadHandlers} from './handlers.js';
import {createCpuPool} from './cpu-pool.js';
import {createIoPool} from './io-pool.js';
import type {ExecutionPool, ProgressListener} from './pool.js';
import {Worker} from './worker.js';

export interface WorkerServiceOptions {
  config: AxConfig;
  store: WorkerStore;
  broker: Broker;
  clock: Clock;
  random: Random;
  logger: Logger;
  /** Path or file URL of the module exporting defineHandlers({...}). */
  handlersModule: string;
  /** Pools to run (default: both). */
  pools?: PoolName[];
  workerId?: string;
  /** Where the worker emits its events (default: its own emitter, `worker.events`). */
  events?: AxEvents;
  /** Told of each stray error of handler code in a CPU-pool thread (see CpuPoolOptions.onStray). */
  onThreadStray?: (kind: 'unhandledRejection' | 'uncaughtException') => void;
  /**
   * More cells this process serves with the same handlers module (`ax worker --cell a,b`): each
   * gets a worker of its own — its own pools, queues, store and broker, so one cell's backlog never
   * takes another's slots — and its own events; the module's onStart and onStop run once for all.
   */
  moreCells?: Array<Pick<WorkerServiceOptions, 'config' | 'store' | 'broker' | 'logger' | 'workerId'>>;
}

/** Resolves a handlers module given on the command line to a file URL. */
export function handlersUrl(spec: string, cwd = process.cwd()): string {
  if (spec.startsWith('file:')) return spec;
  return pathToFileURL(isAbsolute(spec) ? spec : resolve(cwd, spec)).href;
}

/**
 * Builds a Worker from configuration: loads the handlers module, creates the IO pool
 * (ioConcurrency or cores × 2 × (1 + ioWaitRatio)) and the CPU pool (cpuThreads or cores + 1),
 * each with a local queue of poolQueueCapacity. Throws invalid_input when the module cannot be
 * loaded, exports no handlers, or a pool name is unknown.
 */
export async function createWorkerService(o: WorkerServiceOptions): Promise<Worker> {
  const url = handlersUrl(o.handlersModule);
  return buildWorker(o, await loadHandlers(url), url);
}

/** A started worker (one per cell served) together with its handlers module's lifecycle. */
export interface RunningWorker extends AsyncDisposable {
  /** The worker of the first cell. */
  worker: Worker;
  /** Every worker, one per cell, the first cell's first. */
  workers: Worker[];
  /**
   * Drains the worker (Worker.stop with `graceMs`), then awaits the module's onStop for what is
   * left of `graceMs` (at least ON_STOP_FLOOR_MS; see drainThenStop). Resolves
   * `{onStopFailed: true}` when onStop threw or outlasted that budget (logged at error).
   * Idempotent; `await using` disposal is this with AX_SHUTDOWN_GRACE.
   */
  stop(graceMs: number): Promise<{onStopFailed: boolean}>;
}

/**
 * Loads the handlers module, awaits its onStart, builds the worker and starts it. When the start
 * fails after onStart, onStop is awaited before the error is thrown. Throws invalid_input as
 * createWorkerService does, AxError('internal') wrapping a throw of onStart, or the start's error.
 */
export async function startWorkerService(o: WorkerServiceOptions): Promise<RunningWorker> {
  const url = handlersUrl(o.handlersModule);
  const handlers = await loadHandlers(url);
  const {onStart, onStop} = handlers.lifecycle;
  const hookCtx = {logger: o.logger.child({handlers: o.handlersModule})};
  if (onStart) {
    try {
      await onStart(hookCtx);
    } catch (e) {
      throw new AxError('internal', `the handlers module's onStart failed: ${errorMessage(e)}`, {cause: e});
    }
  }
  const runStop = async (graceMs: number): Promise<{onStopFailed: boolean}> => {
    if (!onStop) return {onStopFailed: false};
    let timer: TimerHandle | undefined;
    try {
      await Promise.race([
        onStop(hookCtx),
        new Promise((_, reject) => (timer = o.clock.setTimeout(() => reject(new Error(`still running after ${graceMs}ms`)), graceMs))),
      ]);
      return {onStopFailed: false};
    } catch (e) {
      o.logger.error("the handlers module's onStop failed", {error: e});
      return {onStopFailed: true};
    } finally {
      if (timer !== undefined) o.clock.clearTimeout(timer);
    }
  };
  const workers: Worker[] = [];
  try {
    for (const cell of [
      o,
      ...(o.moreCells ?? []).map((c) => ({...o, events: undefined, moreCells: undefined, workerId: undefined, ...c})),
    ]) {
      const w = await buildWorker(cell, handlers, url);
      workers.push(w);
      await w.start();
    }
  } catch (e) {
    await Promise.all(workers.map((w) => w.stop({graceMs: 0}).catch(() => undefined)));
    await runStop(o.config.shutdownGraceMs);
    throw e;
  }
  let stopping: Promise<{onStopFailed: boolean}> | undefined;
  const stop = (graceMs: number): Promise<{onStopFailed: boolean}> =>
    (stopping ??= drainThenStop(
      o.clock,
      graceMs,
      async (ms) => void (await Promise.all(workers.map((w) => w.stop({graceMs: ms})))),
      (budgetMs) => runStop(budgetMs),
    ));
  return {
    worker: workers[0] as Worker,
    workers,
    stop,
    [Symbol.asyncDispose]: async () => void (await stop(o.config.shutdownGraceMs)),
  };
}

/** The least time onStop gets when the drain used the whole grace period. */
export const ON_STOP_FLOOR_MS = 1000;

/**
 * Runs `drain` with the grace period, then `onStop` with what is left of it (at least
 * ON_STOP_FLOOR_MS), so the whole stop takes at most `graceMs + ON_STOP_FLOOR_MS`: within a
 * supervisor's termination period (Kubernetes: 30 s) that is a little longer than the grace.
 * Elapsed time is measured on the clock's monotonic time. Errors of either step propagate.
 */
export async function drainThenStop<T>(
  clock: Clock,
  graceMs: number,
  drain: (graceMs: number) => Promise<void>,
  onStop: (budgetMs: number) => Promise<T>,
): Promise<T> {
  const started = clock.monotonic();
  await drain(graceMs);
  const left = graceMs - (clock.monotonic() - started);
  return onStop(Math.max(left, ON_STOP_FLOOR_MS));
}

async function buildWorker(o: WorkerServiceOptions, handlers: HandlerMap, url: string): Promise<Worker> {
  const names = o.pools ?? [...POOLS];
  for (const n of names) if (!(POOLS as readonly string[]).includes(n)) throw invalid(`unknown pool "${n}": use ${POOLS.join(', ')}`);
  if (names.length === 0) throw invalid('a worker needs at least one pool');
  const cfg = o.config;
  const pools: Partial<Record<PoolName, ExecutionPool>> = {};
  // The pools are made before the worker that writes their handlers' progress reports; they report
  // only for jobs the worker gave them, so never before it exists.
  const onProgress: ProgressListener = (job, r) => worker.onProgress(job, r);
  if (names.includes('io')) {
    pools.io = createIoPool({
      size: ioPoolSize(cfg),
      capacity: cfg.poolQueueCapacity,
      handlers,
      clock: o.clock,
      logger: o.logger,
      onProgress,
    });
  }
  if (names.includes('cpu')) {
    pools.cpu = await createCpuPool({
      size: cpuPoolSize(cfg),
      capacity: cfg.poolQueueCapacity,
      handlersModule: url,
      clock: o.clock,
      logger: o.logger,
      onProgress,
      ...(o.onThreadStray ? {onStray: o.onThreadStray} : {}),
    });
  }
  const flow = new FlowGate({
    store: o.store,
    clock: o.clock,
    logger: o.logger,
    refreshMs: cfg.flowRefreshMs,
    admission: {pausedRecheckMs: cfg.pausedRecheckMs, unhandledRecheckMs: cfg.unhandledRecheckMs},
    unhandledDeadAfterMs: cfg.unhandledDeadAfterMs,
  });
  const worker = new Worker({
    flow,
    store: o.store,
    broker: o.broker,
    clock: o.clock,
    random: o.random,
    logger: o.logger,
    handlers,
    pools,
    ...(o.workerId === undefined ? {} : {workerId: o.workerId}),
    ...(o.events === undefined ? {} : {events: o.events}),
    shutdownGraceMs: cfg.shutdownGraceMs,
    cancelGraceMs: cfg.cancelGraceMs,
    heartbeatMs: cfg.heartbeatMs,
    leaseMs: cfg.leaseMs,
    tasksPerMessage: cfg.doorbellBatch,
    defaultTimeoutMs: cfg.taskTimeoutMs,
    backoff: {baseMs: cfg.retryBaseMs, maxMs: cfg.retryMaxMs},
  });
  return worker;
}
