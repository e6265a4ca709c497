import {pathToFileURL} from 'node:url';
import {isAbsolute, resolve} from 'node:path';
import {invalid} from '../errors.js';
import type {AxConfig} from '../config/config.js';
import {cpuPoolSize, ioPoolSize} from '../config/config.js';
import type {Broker} from '../broker/types.js';
import type {Logger} from '../log.js';
import type {TaskStore} from '../store/types.js';
import {POOLS, type PoolName} from '../task/model.js';
import type {Clock, Random} from '../time.js';
import {loadHandlers} from './handlers.js';
import {createCpuPool} from './cpu-pool.js';
import {createIoPool} from './io-pool.js';
import type {ExecutionPool} from './pool.js';
import {Worker} from './worker.js';

export interface WorkerServiceOptions {
  config: AxConfig;
  store: TaskStore;
  broker: Broker;
  clock: Clock;
  random: Random;
  logger: Logger;
  /** Path or file URL of the module exporting defineHandlers({...}). */
  handlersModule: string;
  /** Pools to run (default: both). */
  pools?: PoolName[];
  workerId?: string;
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
  const handlers = await loadHandlers(url);
  const names = o.pools ?? [...POOLS];
  for (const n of names) if (!(POOLS as readonly string[]).includes(n)) throw invalid(`unknown pool "${n}": use ${POOLS.join(', ')}`);
  if (names.length === 0) throw invalid('a worker needs at least one pool');
  const cfg = o.config;
  const pools: Partial<Record<PoolName, ExecutionPool>> = {};
  if (names.includes('io')) {
    pools.io = createIoPool({size: ioPoolSize(cfg), capacity: cfg.poolQueueCapacity, handlers, clock: o.clock, logger: o.logger});
  }
  if (names.includes('cpu')) {
    pools.cpu = await createCpuPool({
      size: cpuPoolSize(cfg),
      capacity: cfg.poolQueueCapacity,
      handlersModule: url,
      clock: o.clock,
      logger: o.logger,
    });
  }
  return new Worker({
    store: o.store,
    broker: o.broker,
    clock: o.clock,
    random: o.random,
    logger: o.logger,
    handlers,
    pools,
    ...(o.workerId === undefined ? {} : {workerId: o.workerId}),
    leaseMs: cfg.leaseMs,
    tasksPerMessage: cfg.doorbellBatch,
    defaultTimeoutMs: cfg.taskTimeoutMs,
    backoff: {baseMs: cfg.retryBaseMs, maxMs: cfg.retryMaxMs},
  });
}
