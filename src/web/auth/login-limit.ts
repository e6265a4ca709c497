/**
 * Failed logins are rate-limited per client address: after `maxFailures` failures within
 * `windowMs`, that address's logins are refused (without checking the token) until the oldest
 * failure leaves the window. A success does not clear earlier failures. Pure policy on an
 * injected clock; at most `maxAddresses` addresses are tracked (the oldest forgotten first).
 */
import type {Clock} from '../../core/time.js';

export interface LoginLimiter {
  /** 0 when `address` may try now, else the milliseconds until it may. */
  retryAfterMs(address: string): number;
  failed(address: string): void;
}

export function createLoginLimiter(o: {
  clock: Pick<Clock, 'now'>;
  maxFailures?: number;
  windowMs?: number;
  maxAddresses?: number;
}): LoginLimiter {
  const maxFailures = o.maxFailures ?? 5;
  const windowMs = o.windowMs ?? 60_000;
  const maxAddresses = o.maxAddresses ?? 10_000;
  const failures = new Map<string, number[]>();
  const recent = (address: string): number[] => {
    const now = o.clock.now();
    const kept = (failures.get(address) ?? []).filter((t) => t > now - windowMs);
    if (kept.length === 0) failures.delete(address);
    else failures.set(address, kept);
    return kept;
  };
  return {
    retryAfterMs(address) {
      const times = recent(address);
      if (times.length < maxFailures) return 0;
      return (times[times.length - maxFailures] as number) + windowMs - o.clock.now();
    },
    failed(address) {
      const times = recent(address);
      if (!failures.has(address) && failures.size >= maxAddresses) failures.delete(failures.keys().next().value as string);
      failures.set(address, [...times, o.clock.now()]);
    },
  };
}
