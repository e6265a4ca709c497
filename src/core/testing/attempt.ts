import {invalid} from '../errors.js';
import {SETTINGS} from '../config/config.js';
import {parseDuration} from '../duration.js';
import type {BackoffOptions} from '../retry/backoff.js';
import {createIdGenerator, isTaskId} from '../task/id.js';
import type {ForcedReplay, JsonObject, JsonValue} from '../task/model.js';
import {MAX_RETRIES_LIMIT, validatePayload} from '../task/validate.js';
import type {Random} from '../time.js';
import {
  defineHandlers,
  isHandlerMap,
  runHandler,
  type HandlerDefinition,
  type HandlerMap,
  type ResolvedHandler,
  type TaskOutcome,
} from '../worker/handlers.js';
import {decideOutcome} from '../worker/outcome.js';
import {abortReason, outcomeToResult, type JobResult} from '../worker/pool.js';
import {createTestClock, type TestClock} from './clock.js';
import {checkParents, testContext, type LogLine, type Parents, type ProgressCall, type TestTaskContext} from './context.js';

/** What the test kit runs: a defineHandlers table, one handler definition, or a bare execute function. */
export type Handlers = HandlerMap | HandlerDefinition | ((ctx: TestTaskContext) => ReturnType<HandlerDefinition['execute']>);

/** The type a lone handler (a definition or a function) runs as when the test names none. */
export const DEFAULT_TEST_TYPE = 'test_task';

/** What the worker does after an attempt: mark it succeeded, retry it later, or dead-letter it. */
export type NextStep =
  | {action: 'complete'}
  /** The task becomes `failed` and runs again as attempt `attempt` after `delayMs` (the retry's backoff). */
  | {action: 'retry'; attempt: number; delayMs: number; error: string}
  /** The task becomes `dead` (unrecoverable, or no retries left); `error` as the dead-letter list shows it. */
  | {action: 'dead'; error: string};

/** One attempt of a handler as the test kit ran it. */
export interface TaskRun {
  taskId: string;
  type: string;
  attempt: number;
  payload: JsonObject;
  /**
   * What the handler produced, normalised as the worker does (runHandler): a returned TaskResult,
   * nothing (success), a throw (a failure with the error's name, message and stack), an
   * UnrecoverableError (unrecoverable). A timeout or an abort is a failure with the worker's message.
   */
  outcome: TaskOutcome;
  /** How the attempt ended: the handler settled, the timeout fired, or the test's signal aborted it. */
  ended: 'settled' | 'timeout' | 'aborted';
  /** The value the handler returned with its success (`TaskResult.success(value)` or `{ok: true, result}`), if any. */
  result?: JsonValue;
  /** The task's state after the attempt. */
  state: 'succeeded' | 'failed' | 'dead';
  next: NextStep;
  /** Every accepted ctx.progress() call, in order. */
  progress: ProgressCall[];
  /** Every line the handler logged through ctx.logger, in order. */
  logs: LogLine[];
  /** The context the handler got. */
  context: TestTaskContext;
}

/** Retry policy and randomness shared by runTask and the in-process client. */
export interface RetryPolicy {
  /** The retry backoff (default: ax's defaults, AX_RETRY_BASE 1s and AX_RETRY_MAX 1h). */
  retry?: Partial<BackoffOptions>;
  /**
   * The jitter's random source (values in [0, 1)). Default `() => 0`: every retry waits exactly
   * the un-jittered delay (1 s, 2 s, 4 s…), where the worker waits up to 50 % longer.
   */
  random?: Random;
}

/** Options of runTask. */
export interface RunTaskOptions extends RetryPolicy {
  /** The task type (needed with a table of several handlers; default: its only type, or `test_task`). */
  type?: string;
  /** The payload, validated as submit() does (default `{}`); the handler gets a copy read back from JSON. */
  payload?: JsonObject;
  /** The attempt number (1: the first run; default 1). */
  attempt?: number;
  /** The task's maxRetries (default: ax's default, 5). Decides retry or dead after a failure. */
  maxRetries?: number;
  /** The task's own timeout (ms or `30s`); else the handler's, else ax's default (10m). It fires on `clock`. */
  timeout?: number | string;
  /** The parents' outcomes the handler sees as ctx.parents (task id → {type, state, result}). */
  parents?: Record<string, {type: string; state: 'succeeded' | 'dead' | 'cancelled'; result?: JsonValue | null}>;
  /** A forced replay's who/when/why (ctx.replay). */
  replay?: ForcedReplay;
  /** The clock the timeout runs on (default: a new TestClock; advance it to fire the timeout). */
  clock?: TestClock;
  /** Aborting it aborts ctx.signal and ends the attempt at once, as a shutdown or a lost lease does. */
  signal?: AbortSignal;
  /** The task id (default: a new one). */
  taskId?: string;
}

/** A handler and the type it runs as, from what a test gave; invalid_input when the type has none. */
export function resolveHandler(handlers: Handlers, type: string | undefined): ResolvedHandler {
  if (isHandlerMap(handlers)) {
    if (type === undefined) {
      if (handlers.byType.size !== 1) throw invalid(`give the type to run: one of ${[...handlers.byType.keys()].join(', ')}`);
      return [...handlers.byType.values()][0] as ResolvedHandler;
    }
    const h = handlers.byType.get(type);
    if (!h) throw invalid(`no handler for task type ${type}: the handlers are ${[...handlers.byType.keys()].join(', ')}`);
    return h;
  }
  const t = type ?? DEFAULT_TEST_TYPE;
  const def: HandlerDefinition = typeof handlers === 'function' ? {execute: handlers as HandlerDefinition['execute']} : handlers;
  // The same checks as the worker's handler table (type name, pool, timeout, execute).
  return defineHandlers({[t]: def}).byType.get(t) as ResolvedHandler;
}

/** The backoff with ax's defaults filled in. */
export function backoffOf(p: RetryPolicy): BackoffOptions {
  return {
    baseMs: p.retry?.baseMs ?? (SETTINGS.retryBaseMs.default as number),
    maxMs: p.retry?.maxMs ?? (SETTINGS.retryMaxMs.default as number),
  };
}

/** One attempt to run: what the worker would hand the pool. */
export interface AttemptJob {
  taskId: string;
  type: string;
  attempt: number;
  maxRetries: number;
  payload: JsonObject;
  timeoutMs: number;
  parents: Parents;
  replay?: ForcedReplay;
}

/** The run-time parts of an attempt. */
export interface AttemptEnv {
  clock: TestClock;
  backoff: BackoffOptions;
  random: Random;
  /** An abort from outside (the test, a cancel): the attempt ends at once as aborted. */
  signal?: AbortSignal;
}

/** The largest result a handler may return, serialized (the worker's limit). */
export {RESULT_LIMIT_BYTES} from '../worker/results.js';

/**
 * Runs one attempt as the IO pool does: a context with its own AbortSignal, the timeout on
 * `env.clock` (the signal aborted with a TimeoutError and the attempt ended at once, whether or not
 * the handler stops), the outcome normalised by runHandler and decided by decideOutcome (the
 * worker's own rules for retry, backoff and dead). Never rejects for what the handler does.
 */
export async function runAttempt(h: Pick<ResolvedHandler, 'execute'>, job: AttemptJob, env: AttemptEnv): Promise<TaskRun> {
  const logs: LogLine[] = [];
  const progress: ProgressCall[] = [];
  const controller = new AbortController();
  const ctx = testContext({...job, signal: controller.signal, logs, progress, now: () => env.clock.now()});
  const ended = await new Promise<{ended: TaskRun['ended']; r: JobResult; outcome: TaskOutcome}>((resolve) => {
    const stop = (ended: 'timeout' | 'aborted', message: string): void => {
      controller.abort(abortReason(message, ended === 'timeout' ? 'TimeoutError' : 'AbortError'));
      done({ended, r: {kind: ended, message}, outcome: {ok: false, message, unrecoverable: false}});
    };
    const onAbort = (): void => {
      const reason: unknown = env.signal?.reason;
      stop('aborted', reason instanceof Error ? reason.message : String(reason ?? 'aborted'));
    };
    const timer = env.clock.setTimeout(() => stop('timeout', `timed out after ${job.timeoutMs}ms`), job.timeoutMs);
    let finished = false;
    const done = (v: {ended: TaskRun['ended']; r: JobResult; outcome: TaskOutcome}): void => {
      if (finished) return;
      finished = true;
      env.clock.clearTimeout(timer);
      env.signal?.removeEventListener('abort', onAbort);
      resolve(v);
    };
    if (env.signal?.aborted) return onAbort();
    env.signal?.addEventListener('abort', onAbort, {once: true});
    void runHandler(h, ctx).then((run) => {
      // The worker's own check of a result (JSON, ≤ 64 KiB) ran in runHandler: a bad one failed it.
      const outcome: TaskOutcome = run.ok
        ? run.resultJson === undefined
          ? {ok: true}
          : {ok: true, result: JSON.parse(run.resultJson) as JsonValue}
        : run;
      done({ended: 'settled', r: outcomeToResult(run), outcome});
    });
  });
  const {outcome, r} = ended;
  const result = outcome.ok ? outcome.result : undefined;
  const decided = decideOutcome(
    {id: job.taskId, fence: 0, attempt: job.attempt, maxRetries: job.maxRetries, retryBase: 0},
    r,
    env.backoff,
    env.random,
  );
  const next: NextStep =
    decided.kind === 'complete'
      ? {action: 'complete'}
      : decided.kind === 'fail'
        ? {action: 'retry', attempt: job.attempt + 1, delayMs: decided.retryDelayMs, error: decided.error}
        : {action: 'dead', error: decided.kind === 'deadLetter' ? decided.error : outcome.ok ? '' : outcome.message};
  const state = next.action === 'complete' ? 'succeeded' : next.action === 'retry' ? 'failed' : 'dead';
  return {
    taskId: job.taskId,
    type: job.type,
    attempt: job.attempt,
    payload: job.payload,
    outcome,
    ended: ended.ended,
    ...(result === undefined ? {} : {result}),
    state,
    next,
    progress,
    logs,
    context: ctx,
  };
}

const wholeIn = (v: unknown, lo: number, hi: number): boolean => Number.isInteger(v) && (v as number) >= lo && (v as number) <= hi;

/** The payload as submit() checks it, and the copy a handler gets (read back from JSON). */
export function checkedPayload(payload: unknown): JsonObject {
  return JSON.parse(validatePayload(payload, SETTINGS.payloadLimitBytes.default as number)) as JsonObject;
}

/**
 * Runs one attempt of a handler with a fake context (see TestTaskContext) and says what the worker
 * would do next. `handlers` is what `ax worker --handlers` loads (defineHandlers), one definition
 * `{execute, timeout?}` or a bare `execute` function. The timeout fires on `opts.clock` (advance
 * it while the attempt runs); `opts.signal` aborts the attempt. Rejects with invalid_input for bad
 * options (a payload submit() would refuse, an attempt below 1, maxRetries outside 0..100, a bad
 * timeout, malformed parents, an unknown type) before the handler runs; never for what the
 * handler does.
 */
export async function runTask(handlers: Handlers, opts: RunTaskOptions = {}): Promise<TaskRun> {
  if (opts === null || typeof opts !== 'object') throw invalid('runTask options must be an object');
  const h = resolveHandler(handlers, opts.type);
  const payload = checkedPayload(opts.payload);
  const attempt = opts.attempt ?? 1;
  if (!wholeIn(attempt, 1, Number.MAX_SAFE_INTEGER)) throw invalid('attempt must be a whole number from 1');
  const maxRetries = opts.maxRetries ?? (SETTINGS.maxRetries.default as number);
  if (!wholeIn(maxRetries, 0, MAX_RETRIES_LIMIT)) throw invalid(`maxRetries must be a whole number from 0 to ${MAX_RETRIES_LIMIT}`);
  const own = opts.timeout === undefined ? null : parseDuration(opts.timeout, 'timeout');
  if (own !== null && own < 1) throw invalid('timeout must be at least 1ms');
  const clock = opts.clock ?? createTestClock();
  if (opts.taskId !== undefined && !isTaskId(opts.taskId)) throw invalid(`taskId "${String(opts.taskId)}" is not a lower-case UUID`);
  const job: AttemptJob = {
    taskId: opts.taskId ?? createIdGenerator(() => clock.now())(),
    type: h.type,
    attempt,
    maxRetries,
    payload,
    timeoutMs: own ?? h.timeoutMs ?? (SETTINGS.taskTimeoutMs.default as number),
    parents: checkParents(opts.parents),
    ...(opts.replay === undefined ? {} : {replay: opts.replay}),
  };
  return runAttempt(h, job, {
    clock,
    backoff: backoffOf(opts),
    random: opts.random ?? (() => 0),
    ...(opts.signal ? {signal: opts.signal} : {}),
  });
}
