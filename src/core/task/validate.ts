import {createHash} from 'node:crypto';
import {invalid} from '../errors.js';
import {parseDuration, MAX_DURATION_MS} from '../duration.js';
import {isTaskId, idFromDedupKey} from './id.js';
import {
  DEFAULT_PRIORITY,
  POOLS,
  PRIORITIES,
  isPriority,
  type JsonObject,
  type NewTask,
  type TaskGate,
  type PoolName,
  type Priority,
  type TaskSpec,
} from './model.js';

export const TYPE_NAME_RE = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$/;
export const MAX_TYPE_LENGTH = 64;
export const MAX_DEDUP_KEY_LENGTH = 191;
/** The longest task key (TaskSpec.key), in characters. */
export const MAX_TASK_KEY_LENGTH = 128;
export const MAX_PAYLOAD_DEPTH = 32;
export const MAX_RETRIES_LIMIT = 100;
/** The longest debounce or throttle window: a day. */
export const MAX_GATE_WINDOW_MS = 86_400_000;
/** A runAt this far in the past is still accepted (clock skew between producers). */
export const RUN_AT_PAST_TOLERANCE_MS = 5000;

/** Throws invalid_input unless `type` is `domain_action` (lower-case words joined by `_`, ≥ 2). */
export function validateTypeName(type: unknown): string {
  if (typeof type !== 'string' || type.length === 0) throw invalid('task type is required');
  if (type.length > MAX_TYPE_LENGTH) throw invalid(`task type is longer than ${MAX_TYPE_LENGTH} characters`);
  if (!TYPE_NAME_RE.test(type)) {
    throw invalid(`task type "${type}" is not domain_action: use lower-case words joined by "_", at least two (e.g. order_notify)`);
  }
  return type;
}

function checkJson(value: unknown, depth: number, path: string): void {
  if (depth > MAX_PAYLOAD_DEPTH) throw invalid(`payload is nested deeper than ${MAX_PAYLOAD_DEPTH} levels at ${path}`);
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw invalid(`payload has a non-finite number at ${path}`);
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((v, i) => checkJson(v, depth + 1, `${path}[${i}]`));
    return;
  }
  if (typeof value === 'object') {
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) throw invalid(`payload has a non-plain object at ${path}`);
    for (const key of Object.keys(value)) {
      if (key === '__proto__' || key === 'constructor' || key === 'prototype') {
        throw invalid(`payload has a forbidden key "${key}" at ${path}`);
      }
      checkJson((value as Record<string, unknown>)[key], depth + 1, `${path}.${key}`);
    }
    return;
  }
  throw invalid(`payload has a value of type ${typeof value} at ${path}, which JSON cannot hold`);
}

/**
 * Validates a payload and returns its JSON text. Throws invalid_input when it is not a plain JSON
 * object, holds `__proto__`/`constructor` keys, non-finite numbers, is nested deeper than 32 levels,
 * or serialises to more than `limitBytes` bytes.
 */
export function validatePayload(payload: unknown, limitBytes: number): string {
  if (payload === undefined) return '{}';
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
    throw invalid('payload must be a JSON object');
  }
  checkJson(payload, 0, '$');
  const text = JSON.stringify(payload);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > limitBytes) throw invalid(`payload is ${bytes} bytes, over the limit of ${limitBytes} bytes`);
  return text;
}

/**
 * Parses payload text given on a command line or in a file/stream: it must be a JSON object.
 * `__proto__` keys are refused (JSON.parse would otherwise create them as own properties).
 */
export function parsePayloadText(text: string, limitBytes: number, what = 'payload'): JsonObject {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw invalid(`${what} is not valid JSON: ${(e as Error).message}`);
  }
  validatePayload(value, limitBytes);
  return value as JsonObject;
}

export function contentHash(type: string, payloadText: string): string {
  return createHash('sha256').update(type).update('\0').update(payloadText).digest('hex').slice(0, 32);
}

/**
 * Parses an ISO-8601 time, refusing what `Date.parse` would roll over: February 30 becomes March 2
 * there, and 24:00 the next day. NaN for anything invalid.
 */
export function parseIsoTime(s: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2}))?)?/.exec(s);
  if (!m) return Number.NaN;
  const [y, mo, d, h = 0, mi = 0, sec = 0] = m.slice(1).map((x) => (x === undefined ? undefined : Number(x))) as number[];
  const day = new Date(Date.UTC(y!, mo! - 1, d!));
  if (day.getUTCFullYear() !== y || day.getUTCMonth() !== mo! - 1 || day.getUTCDate() !== d) return Number.NaN;
  if (h > 23 || mi > 59 || sec > 59) return Number.NaN;
  return Date.parse(s);
}

/** The priority of a task or schedule: undefined → normal; anything but a level → invalid_input. */
export function validatePriority(p: unknown): Priority {
  if (p === undefined) return DEFAULT_PRIORITY;
  if (!isPriority(p)) throw invalid(`priority "${String(p)}" is not a level: use one of ${PRIORITIES.join(', ')}`);
  return p;
}

function validateRunAt(runAt: unknown, nowMs: number): number {
  let ms: number;
  if (runAt instanceof Date) ms = runAt.getTime();
  else if (typeof runAt === 'string') {
    if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i.test(runAt.trim())) {
      throw invalid(`runAt "${runAt}" is not an ISO-8601 time with a zone, e.g. 2026-12-01T02:00:00+08:00`);
    }
    ms = parseIsoTime(runAt.trim());
  } else throw invalid('runAt must be a Date or an ISO-8601 string');
  if (!Number.isFinite(ms)) throw invalid(`runAt "${String(runAt)}" is not a valid time`);
  if (ms < nowMs - RUN_AT_PAST_TOLERANCE_MS)
    throw invalid(`runAt ${new Date(ms).toISOString()} is in the past: use a future time, or no runAt to run now`);
  if (ms - nowMs > MAX_DURATION_MS) throw invalid('runAt is more than 366 days away');
  return ms;
}

/**
 * A task key (TaskSpec.key) as given, or invalid_input: a string of 1 to MAX_TASK_KEY_LENGTH
 * characters without control characters and without whitespace at either end (MySQL compares
 * keys ignoring trailing spaces: "k" and "k " would be one key to it and two to ax).
 */
export function validateTaskKey(key: unknown, what = 'key'): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_TASK_KEY_LENGTH)
    throw invalid(`${what} must be a string of 1 to ${MAX_TASK_KEY_LENGTH} characters, e.g. tenant:42`);
  if (/[\u0000-\u001f\u007f-\u009f]/.test(key)) throw invalid(`${what} must not contain control characters`);
  if (/^\s|\s$/.test(key)) throw invalid(`${what} must not begin or end with whitespace`);
  return key;
}

/**
 * A task's `debounce` or `throttle` (`what`) as given, or invalid_input: an object of exactly `key`
 * (validateTaskKey) and `window` (a duration from 1 ms to 24 h). Undefined → null.
 */
export function validateGate(gate: unknown, what: 'debounce' | 'throttle'): TaskGate | null {
  if (gate === undefined) return null;
  if (gate === null || typeof gate !== 'object' || Array.isArray(gate))
    throw invalid(`${what} must be an object {key, window}, e.g. {"key": "user:7", "window": "5s"}`);
  const g = gate as Record<string, unknown>;
  for (const k of Object.keys(g)) if (k !== 'key' && k !== 'window') throw invalid(`unknown ${what} field "${k}": give key and window`);
  const key = validateTaskKey(g.key, `${what} key`);
  if (g.window === undefined) throw invalid(`${what} window is required, e.g. "5s"`);
  const windowMs = parseDuration(g.window, `${what} window`);
  if (windowMs < 1) throw invalid(`${what} window must be at least 1ms`);
  if (windowMs > MAX_GATE_WINDOW_MS) throw invalid(`${what} window ${String(g.window)} is over a day: the longest is 24h`);
  return {key, windowMs};
}

export interface TaskDefaults {
  maxRetries: number;
  payloadLimitBytes: number;
  cell: string;
}

/**
 * Turns a producer's TaskSpec into a NewTask or throws invalid_input naming the bad field.
 * Unknown fields are refused so that typos (`dealy`) do not pass silently.
 */
export function validateTaskSpec(spec: unknown, defaults: TaskDefaults, nowMs: number, newId: () => string): NewTask {
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) throw invalid('a task must be an object');
  const s = spec as TaskSpec & Record<string, unknown>;
  const known = new Set([
    'type',
    'payload',
    'delay',
    'runAt',
    'pool',
    'priority',
    'maxRetries',
    'timeout',
    'dedupKey',
    'key',
    'debounce',
    'throttle',
    'id',
    'after',
    'onParentFailure',
  ]);
  for (const k of Object.keys(s)) if (!known.has(k)) throw invalid(`unknown task field "${k}"`);
  const type = validateTypeName(s.type);
  const payload = validatePayload(s.payload, defaults.payloadLimitBytes);

  if (s.delay !== undefined && s.runAt !== undefined) throw invalid('give either delay or runAt, not both');
  const delayMs = s.delay === undefined ? 0 : parseDuration(s.delay, 'delay');
  const runAtMs = s.runAt === undefined ? null : validateRunAt(s.runAt, nowMs);

  const pool: PoolName = s.pool ?? 'io';
  if (!(POOLS as readonly string[]).includes(pool)) throw invalid(`pool must be one of ${POOLS.join(', ')}`);
  const priority = validatePriority(s.priority);

  const maxRetries = s.maxRetries ?? defaults.maxRetries;
  if (!Number.isInteger(maxRetries) || maxRetries < 0 || maxRetries > MAX_RETRIES_LIMIT) {
    throw invalid(`maxRetries must be a whole number from 0 to ${MAX_RETRIES_LIMIT}`);
  }
  const timeoutMs = s.timeout === undefined ? null : parseDuration(s.timeout, 'timeout');
  if (timeoutMs !== null && timeoutMs < 1) throw invalid('timeout must be at least 1ms');

  let dedupKey: string | null = null;
  if (s.dedupKey !== undefined) {
    if (typeof s.dedupKey !== 'string' || s.dedupKey.length === 0 || s.dedupKey.length > MAX_DEDUP_KEY_LENGTH) {
      throw invalid(`dedupKey must be a string of 1 to ${MAX_DEDUP_KEY_LENGTH} characters`);
    }
    // MySQL compares keys ignoring trailing spaces: "k" and "k " would be one key to the database
    // and two to ax.
    if (/\s$/.test(s.dedupKey)) throw invalid('dedupKey must not end with whitespace');
    dedupKey = s.dedupKey;
  }
  const key = s.key === undefined ? null : validateTaskKey(s.key);
  const debounce = validateGate(s.debounce, 'debounce');
  const throttle = validateGate(s.throttle, 'throttle');
  if (debounce && throttle) throw invalid('give either debounce or throttle, not both');
  const gate = debounce ? 'debounce' : throttle ? 'throttle' : null;
  // A dedup key makes one task of many submits by itself: with a gate, which would win is unclear.
  if (gate && dedupKey !== null) throw invalid(`give either dedupKey or ${gate}, not both`);
  // A debounced task runs its window after its submit: that is its due time.
  if (debounce && (s.delay !== undefined || s.runAt !== undefined))
    throw invalid('debounce sets the due time (its window after the submit): give no delay or runAt with it');
  const deps = validateAfter(s);
  let id: string;
  if (s.id !== undefined) {
    if (!isTaskId(s.id)) throw invalid(`id "${String(s.id)}" is not a lower-case UUID`);
    id = s.id;
  } else id = dedupKey !== null ? idFromDedupKey(defaults.cell, dedupKey) : newId();

  return {
    id,
    type,
    payload,
    pool,
    priority,
    maxRetries,
    timeoutMs,
    dedupKey,
    key,
    runAtMs,
    delayMs: debounce ? debounce.windowMs : delayMs,
    submittedAtMs: nowMs,
    contentHash: contentHash(type, payload),
    debounce,
    throttle,
    ...deps,
  };
}

/** The most parents a task may wait for (TaskSpec.after). */
export const MAX_PARENTS = 100;

/**
 * TaskSpec.after and onParentFailure, checked on their own (the ids' existence and cycles are the
 * submit's to check): up to MAX_PARENTS distinct task ids; exclusive with delay, runAt, debounce
 * and throttle (a dependent is due when its last parent succeeded: another due time or gate would
 * make that ill-defined). Returns nothing to add for a task without `after`.
 */
function validateAfter(s: TaskSpec & Record<string, unknown>): Pick<NewTask, 'after' | 'onParentFailure'> {
  if (s.after === undefined) {
    if (s.onParentFailure !== undefined) throw invalid('onParentFailure is only for a task with after');
    return {};
  }
  if (!Array.isArray(s.after) || s.after.length === 0) throw invalid('after must be a non-empty list of task ids');
  if (s.after.length > MAX_PARENTS) throw invalid(`after names ${s.after.length} tasks: a task waits for at most ${MAX_PARENTS}`);
  for (const a of s.after) if (!isTaskId(a)) throw invalid(`after: "${String(a)}" is not a task id (a lower-case UUID)`);
  if (new Set(s.after).size !== s.after.length) throw invalid('after names a task twice');
  for (const f of ['delay', 'runAt', 'debounce', 'throttle'] as const)
    if (s[f] !== undefined) throw invalid(`give either after or ${f}, not both: a dependent is due when its last parent succeeded`);
  const policy = s.onParentFailure ?? 'cancel';
  if (policy !== 'cancel' && policy !== 'run') throw invalid('onParentFailure must be cancel or run');
  return {after: [...s.after], onParentFailure: policy};
}
