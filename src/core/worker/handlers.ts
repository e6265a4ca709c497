import {invalid, stackHead} from '../errors.js';
import {parseDuration} from '../duration.js';
import type {Logger} from '../log.js';
import {type ForcedReplay, POOLS, type JsonObject, type JsonValue, type PoolName} from '../task/model.js';
import {validateTypeName} from '../task/validate.js';
import type {ParentInfo} from '../task/links.js';
export type {ParentInfo} from '../task/links.js';
import {encodeResult} from './results.js';

/** A failed attempt: retried with backoff, or dead at once when unrecoverable. */
export type TaskFailure = {ok: false; message: string; unrecoverable: boolean; stack?: string};

/**
 * What a handler returns: success (with an optional JSON result, ≤ 64 KiB serialized, stored with
 * the succeeded attempt: see core/worker/results.ts), a retryable failure, or an unrecoverable one
 * (dead at once). `stack` is set by ax for a thrown error (its first lines), and stored with the
 * attempt's history.
 */
export type TaskOutcome = {ok: true; result?: JsonValue} | TaskFailure;

/**
 * An attempt's outcome as runHandler gives it to the pool: a success carries its result already
 * serialized (`resultJson`, absent for none), checked against the limit.
 */
export type RunOutcome = {ok: true; resultJson?: string} | TaskFailure;

export const TaskResult = {
  /**
   * Success; `result` (JSON: objects, arrays, strings, finite numbers, booleans, null) is stored
   * with the task (`ax tasks show`, the API, dependents' ctx.parents). A result that is not JSON or
   * is over 64 KiB serialized fails the attempt unrecoverably, with the reason in its history.
   */
  success: (result?: JsonValue): TaskOutcome => (result === undefined || result === null ? {ok: true} : {ok: true, result}),
  /** A failure: retried with backoff, dead after the last retry. */
  fail: (message: string, opts?: {unrecoverable?: boolean}): TaskOutcome => ({
    ok: false,
    message: String(message),
    unrecoverable: opts?.unrecoverable === true,
  }),
  /** A failure no retry can fix (bad payload, deleted entity): the task is dead at once. */
  unrecoverable: (message: string): TaskOutcome => ({ok: false, message: String(message), unrecoverable: true}),
};

/** Throw this from a handler to dead-letter the task at once. */
export class UnrecoverableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnrecoverableError';
  }
}

/** What a handler gets for one attempt. */
export interface TaskContext {
  taskId: string;
  type: string;
  /** 1 for the first run, 2 for the first retry, … */
  attempt: number;
  payload: JsonObject;
  /** Aborted on timeout, lost lease, or shutdown past the grace period. */
  signal: AbortSignal;
  logger: Logger;
  /**
   * Set when this run comes from `ax dlq replay --force` (the task may have succeeded before):
   * who forced it, when, and why, so the handler's own idempotency can decide. Undefined for
   * ordinary runs and plain replays of dead tasks; retries of a forced replay still see it.
   */
  replay?: ForcedReplay;
  /**
   * Reports how far the attempt is: `percent` from 0 to 100 (rounded to a whole number), `note` at
   * most 200 characters. Cheap to call often: the worker writes the latest report of each task at
   * most once a second (all tasks' in one statement), only while this attempt still holds the task.
   * Throws AxError invalid_input for a percent that is not a number in 0..100 or a note that is not
   * a string of at most 200 characters (nothing is recorded then).
   */
  progress(percent: number, note?: string): void;
  /**
   * The task's parents by id (TaskSpec.after): their type, how they ended and their result. Empty
   * for a task without parents. A parent ended dead or cancelled appears only for a task submitted
   * with `onParentFailure: 'run'` (otherwise the task was cancelled).
   */
  parents: Readonly<Record<string, ParentInfo>>;
}

export interface HandlerDefinition {
  /** Which pool runs it: `io` (event loop, p-limit) or `cpu` (worker_threads). Default `io`. */
  pool?: PoolName;
  /** Per-attempt timeout (ms or `30s`); a task's own timeout wins. Default: config (10m). */
  timeout?: number | string;
  /**
   * Runs one attempt. Return TaskResult.* (or `{ok: true, result}`), or return nothing for success;
   * throw to fail.
   */
  execute(ctx: TaskContext): Promise<TaskOutcome | void> | TaskOutcome | void;
}

export interface ResolvedHandler {
  type: string;
  pool: PoolName;
  timeoutMs: number | null;
  execute: HandlerDefinition['execute'];
}

/** What the lifecycle hooks of a handlers module get. */
export interface HandlerLifecycleContext {
  logger: Logger;
}

/**
 * The optional lifecycle of a handlers module, for resources its handlers share (a database pool,
 * an HTTP agent). Both run once, in the worker's main thread (CPU-pool threads load the module
 * but run neither).
 */
export interface HandlerLifecycle {
  /** Awaited before the worker consumes anything; a throw stops the start (nothing was claimed). */
  onStart?(ctx: HandlerLifecycleContext): Promise<void> | void;
  /**
   * Awaited after the drain on stop (no handler runs any more): close what onStart opened. The
   * process exits once it resolves, so a handle left open cannot keep the worker alive.
   */
  onStop?(ctx: HandlerLifecycleContext): Promise<void> | void;
}

/** A validated handler table, keyed by task type, with the module's lifecycle hooks. */
export interface HandlerMap {
  readonly __axHandlers: true;
  readonly byType: ReadonlyMap<string, ResolvedHandler>;
  readonly lifecycle: Readonly<HandlerLifecycle>;
}

/**
 * Validates a table of handlers (`{order_notify: {pool: 'io', timeout: '30s', execute}}`) and
 * optional lifecycle hooks (`{onStart, onStop}`), and returns them in the form `ax worker
 * --handlers` loads (export it as the module's default export or as `handlers`). Throws
 * invalid_input for bad type names, pools, timeouts, a missing execute, or hooks that are not
 * functions.
 */
export function defineHandlers(table: Record<string, HandlerDefinition>, lifecycle: HandlerLifecycle = {}): HandlerMap {
  if (table === null || typeof table !== 'object') throw invalid('defineHandlers expects an object of handlers');
  const byType = new Map<string, ResolvedHandler>();
  for (const [type, def] of Object.entries(table)) {
    validateTypeName(type);
    if (def === null || typeof def !== 'object' || typeof def.execute !== 'function')
      throw invalid(`handler ${type} must have an execute(ctx) function`);
    const pool = def.pool ?? 'io';
    if (!(POOLS as readonly string[]).includes(pool)) throw invalid(`handler ${type}: pool must be one of ${POOLS.join(', ')}`);
    const timeoutMs = def.timeout === undefined ? null : parseDuration(def.timeout, `handler ${type} timeout`);
    if (timeoutMs !== null && timeoutMs < 1) throw invalid(`handler ${type}: timeout must be at least 1ms`);
    byType.set(type, {type, pool, timeoutMs, execute: def.execute.bind(def)});
  }
  if (byType.size === 0) throw invalid('defineHandlers: no handlers given');
  if (lifecycle === null || typeof lifecycle !== 'object')
    throw invalid('defineHandlers: the lifecycle must be an object {onStart, onStop}');
  const hooks: HandlerLifecycle = {};
  for (const name of ['onStart', 'onStop'] as const) {
    const fn = lifecycle[name];
    if (fn === undefined) continue;
    if (typeof fn !== 'function') throw invalid(`defineHandlers: ${name} must be a function`);
    hooks[name] = fn.bind(lifecycle);
  }
  return {__axHandlers: true, byType, lifecycle: hooks};
}

export function isHandlerMap(x: unknown): x is HandlerMap {
  return typeof x === 'object' && x !== null && (x as HandlerMap).__axHandlers === true && (x as HandlerMap).byType instanceof Map;
}

/**
 * Loads a handlers module (path or file URL) and returns its HandlerMap, from the default export
 * or a `handlers` export. Throws invalid_input when the module cannot be loaded or exports none.
 */
export async function loadHandlers(moduleUrl: string): Promise<HandlerMap> {
  let mod: Record<string, unknown>;
  try {
    mod = (await import(moduleUrl)) as Record<string, unknown>;
  } catch (e) {
    throw invalid(`cannot load handlers module ${moduleUrl}: ${(e as Error).message}`);
  }
  const found = [mod.default, mod.handlers].find(isHandlerMap);
  if (!found) throw invalid(`handlers module ${moduleUrl} must export defineHandlers({...}) as default or as "handlers"`);
  return found;
}

/**
 * Runs one attempt of a handler and normalises whatever it does into a RunOutcome: a returned
 * TaskResult (a success's result serialized and checked: not JSON or over the limit, the attempt
 * fails unrecoverably with the reason), undefined (success), a thrown Error, a thrown non-Error, an
 * UnrecoverableError.
 */
export async function runHandler(h: Pick<ResolvedHandler, 'execute'>, ctx: TaskContext): Promise<RunOutcome> {
  try {
    const r = await h.execute(ctx);
    if (r === undefined || r === null) return {ok: true};
    if (typeof r === 'object' && 'ok' in r) {
      if (r.ok === true) {
        if (!('result' in r)) return {ok: true};
        const e = encodeResult(r.result);
        if (!e.ok) return {ok: false, message: e.message, unrecoverable: true};
        return e.json === undefined ? {ok: true} : {ok: true, resultJson: e.json};
      }
      if (r.ok === false) return {ok: false, message: String(r.message ?? 'failed'), unrecoverable: r.unrecoverable === true};
    }
    return {ok: false, message: 'handler returned something that is not a TaskResult', unrecoverable: false};
  } catch (e) {
    // By name as well: a handlers module may load its own copy of ax.
    const stack = stackHead(e);
    const withStack = stack === undefined ? {} : {stack};
    if (e instanceof UnrecoverableError || (e instanceof Error && e.name === 'UnrecoverableError'))
      return {ok: false, message: e.message, unrecoverable: true, ...withStack};
    if (e instanceof Error) return {ok: false, message: `${e.name}: ${e.message}`, unrecoverable: false, ...withStack};
    let text: string;
    try {
      text = JSON.stringify(e) ?? String(e);
    } catch {
      text = String(e);
    }
    return {ok: false, message: `handler threw a non-Error: ${text}`, unrecoverable: false};
  }
}
