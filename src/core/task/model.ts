import type {TaskState} from './state.js';
import type {TraceContext} from '../trace-context.js';

export const POOLS = ['io', 'cpu'] as const;
export type PoolName = (typeof POOLS)[number];

/**
 * Priority levels, highest first. Each level of a pool has its own RabbitMQ queue (quorum queues
 * have no message priorities) and its own local queue in the worker, which picks among them by
 * weight (see worker/levels.ts), so a higher level is served first and a lower one never starves.
 */
export const PRIORITIES = ['high', 'normal', 'low'] as const;
export type Priority = (typeof PRIORITIES)[number];
export const DEFAULT_PRIORITY: Priority = 'normal';

/** True for one of PRIORITIES. */
export function isPriority(p: unknown): p is Priority {
  return typeof p === 'string' && (PRIORITIES as readonly string[]).includes(p);
}

/** A JSON object: the only payload shape ax accepts. */
export type JsonObject = {[key: string]: JsonValue};
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;

/** What a producer asks for. Everything but `type` is optional. */
export interface TaskSpec {
  /** `domain_action`: lower-case words joined by `_`, at least two. */
  type: string;
  /** A JSON object, at most `payloadLimitBytes` when serialised. Default `{}`. */
  payload?: JsonObject;
  /** Run after this delay (ms or a string like `5s`). Exclusive with `runAt`. */
  delay?: number | string;
  /** Run at this time (Date or ISO-8601 with an offset). Exclusive with `delay`. */
  runAt?: Date | string;
  /** Queue/pool to dispatch to. Default `io`. */
  pool?: PoolName;
  /** `high`, `normal` (default) or `low`: the level of the pool's queue it is rung on. */
  priority?: Priority;
  /** Retries after the first attempt before the task is dead. Default from config (5). */
  maxRetries?: number;
  /** Per-attempt timeout (ms or `30s`); default: the handler's, else config (10m). */
  timeout?: number | string;
  /** A business key unique per cell: submitting it again returns the existing task. */
  dedupKey?: string;
  /**
   * Who the task is for (a tenant, customer or account, e.g. `tenant:42`): per-key limits and fair
   * dispatch of its type apply per key (`ax types set --max-running-per-key`, `--rate-per-key`,
   * `--fair`). At most MAX_TASK_KEY_LENGTH characters, no control characters. Default: none.
   */
  key?: string;
  /**
   * Trailing-edge debounce: of the tasks of this type submitted with the same `key` while the
   * earlier one has not started, only the last runs, `window` (ms or `5s`, 1 ms to 24 h) after its
   * submit; the earlier ones are cancelled as replaced. Exclusive with `throttle`, `dedupKey`,
   * `delay` and `runAt`.
   */
  debounce?: GateSpec;
  /**
   * Leading-edge throttle: the first task of this type with this `key` opens a window of `window`;
   * the submits with the key while it is open are not written (flush() reports them with the kept
   * task's id). Exclusive with `debounce` and `dedupKey`.
   */
  throttle?: GateSpec;
  /** A caller-chosen id (UUID); lets a producer retry a submit blindly. */
  id?: string;
  /**
   * Dependencies (docs/workflows.md): the ids of up to 100 tasks this one waits for, in the same
   * `submitBatch` call or already stored in this cell. It is stored at once, waiting (`submitted`,
   * not due), and becomes due when all of them succeeded. Exclusive with delay, runAt, debounce and
   * throttle. Unknown ids, ids of another cell and cycles are refused (invalid_input), nothing written.
   */
  after?: string[];
  /** When a parent ends dead or cancelled: `cancel` this task (default, cascading) or `run` it anyway. */
  onParentFailure?: 'cancel' | 'run';
}

/** A debounce or throttle as given: the key (per cell and task type) and the window. */
export interface GateSpec {
  /** 1 to 128 characters, no control characters, no whitespace at either end. */
  key: string;
  /** ms or a duration string (`500ms`, `5s`), from 1 ms to 24 h. */
  window: number | string;
}

/** A validated debounce or throttle. */
export interface TaskGate {
  key: string;
  windowMs: number;
}

/** A validated task, ready to be written. `delayMs` is relative to the moment it is written. */
export interface NewTask {
  id: string;
  type: string;
  payload: string; // canonical JSON text
  pool: PoolName;
  priority: Priority;
  maxRetries: number;
  timeoutMs: number | null;
  dedupKey: string | null;
  /** The task's key (TaskSpec.key), or null. */
  key: string | null;
  /** Absolute due time (epoch ms) when the producer gave one. */
  runAtMs: number | null;
  /** Due time as an offset from the submit call (producer clock); used when runAtMs is null. */
  delayMs: number;
  /** Wall-clock ms of the submit call, so buffered delays are not stretched by the flush interval. */
  submittedAtMs: number;
  /** sha256 of type + payload, hex, 32 chars: "same content" for idempotent re-submits. */
  contentHash: string;
  /** The cron schedule this task is an occurrence of (set by the scheduler, never by producers). */
  scheduleName?: string | null;
  /** TaskSpec.debounce validated (its delay is its window), or null; absent means null. */
  debounce?: TaskGate | null;
  /** TaskSpec.throttle validated, or null; absent means null. */
  throttle?: TaskGate | null;
  /**
   * The W3C trace context active at the submit (or written on its outbox row), kept on the row
   * (tasks.traceparent, tasks.tracestate): the worker's attempt span is its child. Absent or null: none.
   */
  trace?: TraceContext | null;
  /** TaskSpec.after validated (distinct ids, 1 to MAX_PARENTS); absent: no parents. */
  after?: string[];
  /** TaskSpec.onParentFailure, set with `after`. */
  onParentFailure?: 'cancel' | 'run';
  /**
   * Set by the linked submit (store/mysql/links.ts) for the columns of dependencies and batches:
   * parents waited for, link flags, batch. Absent on plain tasks (their INSERT is unchanged).
   */
  linked?: {depsLeft: number; links: number; batchId: string | null};
}

/**
 * A forced replay (`ax dlq replay --force`) as the handler sees it in `ctx.replay`: who asked,
 * when (the replaying process's clock), and why. Kept on the row until the next replay.
 */
export interface ForcedReplay {
  by: string;
  at: Date;
  reason: string;
}

/** A task row as stored. */
export interface TaskRecord {
  id: string;
  cell: string;
  type: string;
  pool: PoolName;
  priority: Priority;
  state: TaskState;
  attempt: number;
  maxRetries: number;
  /** Attempts made before the latest DLQ replay (0: never replayed): the budget counts from there. */
  retryBase: number;
  runAt: Date;
  timeoutMs: number | null;
  leaseUntil: Date | null;
  fence: number;
  /** The worker of the latest attempt (set by the claim; kept after it ends). */
  worker: string | null;
  /** The start of the latest attempt (set by the claim; null before the first, and on rows claimed before schema version 18). */
  startedAt: Date | null;
  /**
   * Who submitted it (the producer's, relay's or scheduler's host:pid), with created_at the record
   * of its creation; null on rows created before schema version 18 (their first history row says it).
   */
  submittedBy: string | null;
  dedupKey: string | null;
  /** The task's key (tenant, customer…), or null (TaskSpec.key). */
  key: string | null;
  lastError: string | null;
  publishedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  payload: JsonObject;
  /**
   * The last progress a handler reported (ctx.progress: 0..100, a note, when it was written), kept
   * after the attempt ends and across retries until a later report replaces it; null when none was.
   */
  progress: number | null;
  progressNote: string | null;
  progressAt: Date | null;
  /**
   * The result its succeeded attempt returned (null: none). Read by a single task's read (tasksGet,
   * tasksGetMany: `ax tasks show`, the API's task); absent from lists, which leave it out.
   */
  result?: JsonValue | null;
  /** The W3C trace context of its submit (NewTask.trace), or null; absent where not read. */
  trace?: TraceContext | null;
}

/**
 * One row of a task's history. The stored rows are one per transition after the task's creation
 * (whose row is the task itself) and one per attempt, written with its outcome: an attempt's row
 * (from `running`) carries its start (`startedAt`), the worker it ran on and its end (`at`).
 * A timeline as shown (`showTask`) adds the events those rows imply: see core/inspect/timeline.ts.
 */
export interface HistoryEntry {
  taskId: string;
  from: TaskState | null;
  to: TaskState;
  /**
   * The task's attempts used after the transition: an attempt's end keeps its claim's number, a
   * hand-back (release, park) one less (it gave the attempt back); the timeline relies on it.
   */
  attempt: number;
  /** The worker or process (host:pid) that made the transition; for an attempt's end, the worker the attempt ran on. */
  worker: string | null;
  at: Date;
  error: string | null;
  /** The first lines of the error's stack, for a failed or dead attempt whose error had one. */
  stack: string | null;
  /**
   * On an attempt's end (from `running`): when the attempt started (its claim). Null on other
   * transitions, and on attempts ended before schema version 18 (their start is a `running` row).
   */
  startedAt: Date | null;
}
