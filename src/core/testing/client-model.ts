/** The shapes of the test kit's in-process client (createTestClient in ./client.ts). */
import type {AxClient} from '../client.js';
import type {FlushReport} from '../producer/producer.js';
import type {BatchInfo} from '../store/types.js';
import type {JsonObject, JsonValue, PoolName, Priority, TaskSpec} from '../task/model.js';
import type {TaskState} from '../task/state.js';
import type {HandlerDefinition, HandlerMap} from '../worker/handlers.js';
import type {RetryPolicy, TaskRun} from './attempt.js';
import type {TestClock} from './clock.js';
import type {ParentFailurePolicy} from './links.js';

export type {ParentFailurePolicy} from './links.js';

/** A TaskSpec with the dependency fields: the tasks it waits for and what their failure does to it. */
export type TestTaskSpec = TaskSpec & {after?: string[]; onParentFailure?: ParentFailurePolicy};

/** One transition of a task in the in-process client. */
export interface TestTransition {
  from: TaskState | null;
  to: TaskState;
  attempt: number;
  at: Date;
  error: string | null;
}

/** A task as the in-process client keeps it. */
export interface TestTask {
  id: string;
  type: string;
  payload: JsonObject;
  state: TaskState;
  /** Attempts used so far. */
  attempt: number;
  maxRetries: number;
  pool: PoolName;
  priority: Priority;
  key: string | null;
  dedupKey: string | null;
  /** When it is due (the clock's time). */
  runAt: Date;
  /** The tasks it waits for, and what their failure does to it. */
  after: string[];
  onParentFailure: ParentFailurePolicy;
  /** The result of its succeeded attempt, or null. */
  result: JsonValue | null;
  /** The last progress its handler reported, or null. */
  progress: {percent: number; note: string | null; at: Date} | null;
  lastError: string | null;
  /** The task whose handler submitted it (while it ran), or null when the test did. */
  submittedBy: string | null;
  history: TestTransition[];
}

/** submitBatch's options: with a callback, the tasks are one batch and the callback runs once all of them ended. */
export interface TestBatchOptions {
  /** Runs once when every task of the batch ended, with `payload.batch` = {id, total, succeeded, dead, cancelled}. */
  callback?: TaskSpec;
}

/** What submitBatch wrote. */
export interface TestBatchResult {
  /** The tasks' ids, in the order given. */
  ids: string[];
  batchId?: string;
  callbackId?: string;
  /** Tasks refused because their id or dedup key exists with other content. */
  conflicts: FlushReport['conflicts'];
  inserted: number;
  existing: number;
}

/** A batch's progress, as the real client's `batch(id)` gives it. */
export type TestBatchInfo = BatchInfo;

/** Options of createTestClient. */
export interface TestClientOptions extends RetryPolicy {
  /** The handlers (defineHandlers(...) or its table); tasks of other types stay submitted, as with a worker that lacks them. */
  handlers: HandlerMap | Record<string, HandlerDefinition>;
  /** The clock due times, retries and timeouts run on (default: a new TestClock). */
  clock?: TestClock;
  /** maxRetries of tasks that give none (default: ax's, 5). */
  maxRetries?: number;
  /** The largest payload in JSON bytes (default: ax's, 64 KiB). */
  payloadLimitBytes?: number;
}

/** What drain() and runDue() did: attempts run, and the tasks left unfinished (no handler, or waiting on such a task). */
export interface DrainReport {
  attempts: number;
  unfinished: string[];
}

/**
 * An in-process stand-in for the SDK client (`connect()`): submit, flush, cancel and close behave
 * as AxClient's, and the tasks run in the test's process, one attempt at a time, on a fake clock.
 */
export interface TestClient extends Pick<AxClient, 'submit' | 'flush' | 'close' | 'cancel'> {
  submit(spec: TestTaskSpec): Promise<string>;
  /**
   * Writes tasks that may wait for each other (`after`, in any order) at once, and with
   * `{callback}` makes them one batch (see TestBatchOptions). Throws invalid_input, nothing
   * written, for no tasks, a bad task (named by its index), an id given twice, a cycle, an unknown
   * parent, a debounce or throttle, a callback with after, a delay or a `batch` key.
   */
  submitBatch(specs: TestTaskSpec[], opts?: TestBatchOptions): Promise<TestBatchResult>;
  /** A batch's progress; not_found for an unknown id. */
  batch(id: string): Promise<TestBatchInfo>;
  readonly clock: TestClock;
  /** Every task submitted, in submit order (copies). */
  readonly tasks: TestTask[];
  /** One task (a copy); AxError not_found for an unknown id. */
  task(id: string): TestTask;
  /** The attempts run so far, in order; only those of `type` when given. */
  ran(type?: string): TaskRun[];
  /** Runs every task due now, and those that become due meanwhile (submitted by handlers, dependents); time stands still. */
  runDue(): Promise<DrainReport>;
  /**
   * Runs everything: what is due, then advances the clock to the next due time (delays, retries'
   * backoff) and again, until no task with a handler is left. Throws AxError('internal') after
   * `maxAttempts` attempts (default 10,000: a handler that resubmits itself forever).
   */
  drain(opts?: {maxAttempts?: number}): Promise<DrainReport>;
}
