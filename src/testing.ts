/**
 * The test kit for handler code, exported as `ax-executor/testing` (docs/testing-handlers.md):
 * `runTask` runs one attempt of a handler with a fake context and says what the worker would do
 * next; `createTestClient` runs submitted tasks in the test's own process, without MySQL or
 * RabbitMQ. It loads no driver (mysql2, amqplib): test/unit/testkit-docs.test.ts checks its imports.
 */
export {createTestClock, TEST_CLOCK_START, type TestClock} from './core/testing/clock.js';
export {
  recordingLogger,
  type LogLine,
  type ParentInfo,
  type Parents,
  type ProgressCall,
  type TestTaskContext,
} from './core/testing/context.js';
export {
  DEFAULT_TEST_TYPE,
  runTask,
  type Handlers,
  type NextStep,
  type RetryPolicy,
  type RunTaskOptions,
  type TaskRun,
} from './core/testing/attempt.js';
export {
  createTestClient,
  type DrainReport,
  type ParentFailurePolicy,
  type TestBatchInfo,
  type TestBatchOptions,
  type TestBatchResult,
  type TestClient,
  type TestClientOptions,
  type TestTask,
  type TestTaskSpec,
  type TestTransition,
} from './core/testing/client.js';
export {MAX_PROGRESS_NOTE_LENGTH, validateProgress} from './core/task/progress.js';
export {defineHandlers, TaskResult, UnrecoverableError, type TaskOutcome} from './core/worker/handlers.js';
export {AxError} from './core/errors.js';
