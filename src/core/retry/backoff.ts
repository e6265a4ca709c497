import type {Random} from '../time.js';

export interface BackoffOptions {
  /** Delay before the first retry (default 1000 ms); each further retry doubles it. */
  baseMs: number;
  /** Upper bound of the un-jittered delay (default 1 h). */
  maxMs: number;
}

/**
 * Delay before the retry that follows failed attempt number `attempt` (1-based):
 * `base·2^(attempt-1) · (1 + U[0, 0.5])`, i.e. 1–1.5 s, 2–3 s, 4–6 s, … with the defaults.
 * `random` must return values in [0, 1).
 */
export function retryDelayMs(attempt: number, opts: BackoffOptions, random: Random): number {
  return Math.round(baseDelay(attempt, opts) * (1 + 0.5 * random()));
}

function baseDelay(attempt: number, opts: BackoffOptions): number {
  const n = Math.max(1, Math.floor(attempt));
  return Math.min(opts.maxMs, opts.baseMs * 2 ** Math.min(n - 1, 40));
}

/** The [min, max] bounds of retryDelayMs for an attempt; used by tests and diagnostics. */
export function retryDelayBounds(attempt: number, opts: BackoffOptions): [number, number] {
  const base = baseDelay(attempt, opts);
  return [Math.round(base), Math.round(base * 1.5)];
}

/** What happens after a failed attempt: retry later, or dead-letter. */
export function nextAfterFailure(attempt: number, maxRetries: number, unrecoverable: boolean): 'failed' | 'dead' {
  return unrecoverable || attempt > maxRetries ? 'dead' : 'failed';
}
