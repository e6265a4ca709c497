/**
 * Connecting at start while a server may be down (a deploy during an outage, a supervisor
 * restarting everything at once): retry with jittered, capped exponential backoff instead of
 * exiting, logging each failed attempt — or fail at once when the configuration says so.
 */
import {AxError, errorMessage, isAxError} from './errors.js';
import type {Logger} from './log.js';
import {backoffMs} from './retry/backoff.js';
import {type Clock, type Random, sleep} from './time.js';

/** First wait between attempts; it doubles up to `connectRetryMaxMs`. */
export const CONNECT_RETRY_BASE_MS = 250;

export interface ConnectRetryContext {
  config: {connectFailFast: boolean; connectRetryMaxMs: number};
  clock: Clock;
  random: Random;
  logger: Logger;
}

export interface ConnectRetryOptions {
  /** Aborting it ends the waiting with AxError('closed'). */
  signal?: AbortSignal;
  /** Called after each failed attempt (health details). */
  onRetry?: (info: {what: string; attempt: number; retryInMs: number; error: string}) => void;
}

/**
 * The wait before attempt `attempt + 1`: `min(max, base · 2^(attempt−1))`, then jittered down to
 * between half and all of it so restarted fleets do not reconnect in step.
 */
export function connectRetryDelay(attempt: number, maxMs: number, random: Random): number {
  return Math.round(backoffMs(attempt, {firstMs: CONNECT_RETRY_BASE_MS, maxMs, jitter: [0.5, 1]}, random));
}

/**
 * Whether a failed connection is worth retrying: an AxError('unavailable') caused by the driver or
 * the socket (refused, reset, timed out, server shutting down), unless the server answered with a
 * refusal no wait can fix (wrong user or password, no access to the database or vhost, no such
 * database). A server that answered but lacks ax's schema or task_outbox (no cause) is not retried.
 */
export function isRetryableConnectError(e: unknown): boolean {
  if (!isAxError(e, 'unavailable') || e.cause === undefined) return false;
  if (e.details?.reason === 'access_denied' || e.details?.reason === 'permission_denied') return false;
  for (let c: unknown = e, depth = 0; c && depth < 5; c = (c as {cause?: unknown}).cause, depth++) {
    const code = (c as {code?: unknown}).code;
    if (typeof code === 'string' && /ACCESS_DENIED|NOT_SUPPORTED_AUTH|BAD_DB_ERROR/.test(code)) return false;
    if (/ACCESS[-_]REFUSED|NOT[-_]ALLOWED/.test(errorMessage(c))) return false;
  }
  return true;
}

/**
 * Runs `open` until it succeeds. A retryable failure (see isRetryableConnectError) is logged at
 * warn and retried after connectRetryDelay; any other failure, or the first one when
 * `connectFailFast` is set, is thrown as is. Throws AxError('closed') when `signal` aborts.
 */
export async function connectWithRetry<T>(
  ctx: ConnectRetryContext,
  what: string,
  open: () => Promise<T>,
  o: ConnectRetryOptions = {},
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    if (o.signal?.aborted) throw new AxError('closed', `stopped while connecting to ${what}`);
    try {
      const v = await open();
      if (attempt > 1) ctx.logger.info('connected', {to: what, attempts: attempt});
      return v;
    } catch (e) {
      if (ctx.config.connectFailFast || !isRetryableConnectError(e)) throw e;
      const retryInMs = connectRetryDelay(attempt, ctx.config.connectRetryMaxMs, ctx.random);
      const error = errorMessage(e);
      ctx.logger.warn('cannot connect, retrying', {to: what, attempt, retryInMs, error});
      o.onRetry?.({what, attempt, retryInMs, error});
      try {
        await sleep(ctx.clock, retryInMs, o.signal);
      } catch {
        throw new AxError('closed', `stopped while connecting to ${what}`);
      }
    }
  }
}
