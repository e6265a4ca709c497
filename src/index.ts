/**
 * The ax SDK. Producers: `connect()` then `submit()`. Workers: export `defineHandlers({...})` from a
 * module and run `ax worker --handlers <module>`.
 */
export {connect, type ConnectOptions} from './compose.js';
export type {AxClient} from './core/client.js';
export type {CancelResult} from './core/inspect/cancel.js';
export type {DlqAdmin, ReplayInput, ReplayOptions} from './core/admin/dlq.js';
export {
  defineHandlers,
  TaskResult,
  UnrecoverableError,
  type HandlerDefinition,
  type TaskContext,
  type TaskOutcome,
  type HandlerMap,
} from './core/worker/handlers.js';
export {AxError, type AxErrorCode} from './core/errors.js';
export {loadConfig, type AxConfig} from './core/config/config.js';
export type {FlushReport} from './core/producer/producer.js';
export type {TaskSpec, TaskRecord, HistoryEntry, JsonObject, PoolName} from './core/task/model.js';
export type {TaskState} from './core/task/state.js';
export {enqueueInTransaction, type SqlConnection, type EnqueueOptions} from './core/outbox/enqueue.js';
export {OUTBOX_DDL} from './core/outbox/schema.js';
export {startConsole, type ConsoleOptions} from './sdk-console.js';
export type {WebServer} from './web/server.js';
