import type {AxConfig} from './config/config.js';
import type {Broker} from './broker/types.js';
import type {Logger} from './log.js';
import {type FlushReport, Producer} from './producer/producer.js';
import {failureReport, type FailureFilterInput, type FailureReport, parseFailureFilter} from './inspect/failures.js';
import {cancelTask, showTask, type TaskDetail} from './inspect/inspect.js';
import type {ScheduleStore, TaskStore} from './store/types.js';
import {createCronAdmin, type CronAdmin} from './cron/admin.js';
import {createDlqAdmin, type DlqAdmin} from './dlq/admin.js';
import {createTypesAdmin, type TypesAdmin} from './types/admin.js';
import type {TaskSpec} from './task/model.js';
import type {TaskState} from './task/state.js';
import type {Clock, Random} from './time.js';

/** The producer-side SDK handle returned by `connect()`. */
export interface AxClient {
  /** Validates, buffers and resolves with the task id (waits only when the buffer is full). */
  submit(task: TaskSpec): Promise<string>;
  /** Resolves when everything submitted so far is durable (see Producer.flush). */
  flush(): Promise<FlushReport>;
  /**
   * Cancels a submitted or failed task, recorded in the audit trail; returns its state before. Throws not_found for an unknown
   * id and conflict for a task that is running or finished.
   */
  cancel(id: string, reason?: string): Promise<{id: string; from: TaskState}>;
  /** A task and its history; throws not_found. */
  getTask(id: string): Promise<TaskDetail>;
  /** Cron schedules: add, list, show, pause, resume, remove, trigger (see CronAdmin). */
  cron: CronAdmin;
  /** Dead tasks: list, show, stats, replay (see DlqAdmin); replays are audited. */
  dlq: DlqAdmin;
  /** Task types: list, show, pause, resume (see TypesAdmin); pause and resume are audited. */
  types: TypesAdmin;
  /**
   * Failed attempts of every task (retried or dead) per type × error signature, the largest groups
   * first; the window defaults to the last hour (see `ax errors`). Throws invalid_input for bad input.
   */
  errors(filter?: FailureFilterInput): Promise<FailureReport>;
  /** Flushes, then closes the connections. */
  close(): Promise<FlushReport>;
}

export interface ClientParts {
  config: AxConfig;
  store: TaskStore & ScheduleStore;
  broker: Broker;
  clock: Clock;
  random: Random;
  logger: Logger;
  actor: string;
  /** The operator recorded in the audit trail for admin actions (cancel); throws invalid_input when AX_OPERATOR is bad. */
  operator: () => string;
  /** Closes the store and broker. */
  release: () => Promise<void>;
  /** See ProducerOptions.giveUpAfterMs (one-shot callers such as `ax submit`). */
  giveUpAfterMs?: number;
}

export function createClient(p: ClientParts): AxClient {
  const producer = new Producer({
    store: p.store,
    broker: p.broker,
    clock: p.clock,
    random: p.random,
    logger: p.logger,
    defaults: {maxRetries: p.config.maxRetries, payloadLimitBytes: p.config.payloadLimitBytes, cell: p.config.cell},
    batchSize: p.config.submitBatchSize,
    flushMs: p.config.submitFlushMs,
    bufferLimit: p.config.submitBufferLimit,
    actor: p.actor,
    ...(p.giveUpAfterMs === undefined ? {} : {giveUpAfterMs: p.giveUpAfterMs}),
  });
  let closing: Promise<FlushReport> | undefined;
  return {
    // Only the admin API: the scheduler's cron policy (materialize, repair, …) is not the SDK's.
    cron: createCronAdmin({config: p.config, store: p.store, broker: p.broker, clock: p.clock, logger: p.logger, actor: p.actor}),
    dlq: createDlqAdmin({...p, payloadLimitBytes: p.config.payloadLimitBytes}),
    types: createTypesAdmin({...p, flowRefreshMs: p.config.flowRefreshMs}),
    submit: (t) => producer.submit(t),
    flush: () => producer.flush(),
    cancel: (id, reason) => cancelTask(p.store, id, p.actor, reason ?? null, p.operator()),
    getTask: (id) => showTask(p.store, id),
    errors: async (filter = {}) => {
      const now = p.clock.now();
      return failureReport(p.store, parseFailureFilter(filter, now), now);
    },
    close: () =>
      (closing ??= (async () => {
        try {
          return await producer.close();
        } finally {
          await p.release();
        }
      })()),
  };
}
