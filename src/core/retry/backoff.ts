import type {Random} from '../time.js';

/**
 * An exponential backoff: the delay of step n (1-based) is `firstMs · 2^(n−1)`, capped at `maxMs`,
 * then multiplied by a factor drawn uniformly from `jitter` (when given). Every backoff in ax is
 * one of these (task retries, connection retries at start, the broker's reconnects, the producer's
 * and the relay's retries, the worker's store retries, the breaker's cool-down): the callers
 * differ only in these numbers.
 */
export interface BackoffShape {
  /** The delay of step 1 (ms). */
  firstMs: number;
  /** The cap of the delay before jitter (ms). */
  maxMs: number;
  /** Doublings at most (default 30): keeps 2^k finite whatever the step. */
  maxDoublings?: number;
  /** The factor the capped delay is multiplied by, drawn from [low, high); absent: no jitter. */
  jitter?: readonly [low: number, high: number];
}

/** Doublings at most when the shape does not say. */
export const MAX_DOUBLINGS = 30;

/**
 * The delay of step `step` (1-based; a step below 1 counts as 1, a fraction is floored):
 * `min(maxMs, firstMs · 2^min(step − 1, maxDoublings)) · (low + (high − low) · random())`.
 * Not rounded: callers that need whole milliseconds round. Pure: `random` (values in [0, 1)) is
 * injected, and needed only with a jitter (RangeError without one).
 */
export function backoffMs(step: number, shape: BackoffShape, random?: Random): number {
  const doublings = Math.min(Math.max(0, Math.floor(step) - 1), shape.maxDoublings ?? MAX_DOUBLINGS);
  const delay = Math.min(shape.maxMs, shape.firstMs * 2 ** doublings);
  if (!shape.jitter) return delay;
  if (!random) throw new RangeError('a jittered backoff needs a random source');
  const [low, high] = shape.jitter;
  return delay * (low + (high - low) * random());
}

export interface BackoffOptions {
  /** Delay before the first retry (default 1000 ms); each further retry doubles it. */
  baseMs: number;
  /** Upper bound of the un-jittered delay (default 1 h). */
  maxMs: number;
}

/** A task's retry: up to 50 % longer, never shorter, than the doubled delay. */
const RETRY_JITTER = [1, 1.5] as const;
/** The task retry's doublings at most (AX_RETRY_MAX may be far above AX_RETRY_BASE · 2^30). */
const RETRY_MAX_DOUBLINGS = 40;

/** The task retry's shape before jitter. */
function retryShape(opts: BackoffOptions): BackoffShape {
  return {firstMs: opts.baseMs, maxMs: opts.maxMs, maxDoublings: RETRY_MAX_DOUBLINGS};
}

/**
 * Delay before the retry that follows failed attempt number `attempt` (1-based):
 * `base·2^(attempt-1) · (1 + U[0, 0.5])`, i.e. 1–1.5 s, 2–3 s, 4–6 s, … with the defaults; whole ms.
 * `random` must return values in [0, 1).
 */
export function retryDelayMs(attempt: number, opts: BackoffOptions, random: Random): number {
  return Math.round(backoffMs(attempt, {...retryShape(opts), jitter: RETRY_JITTER}, random));
}

/** The [min, max] bounds of retryDelayMs for an attempt; used by tests and diagnostics. */
export function retryDelayBounds(attempt: number, opts: BackoffOptions): [number, number] {
  const base = backoffMs(attempt, retryShape(opts));
  return [Math.round(base), Math.round(base * RETRY_JITTER[1])];
}

/** What happens after a failed attempt: retry later, or dead-letter. */
export function nextAfterFailure(attempt: number, maxRetries: number, unrecoverable: boolean): 'failed' | 'dead' {
  return unrecoverable || attempt > maxRetries ? 'dead' : 'failed';
}
