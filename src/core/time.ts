/**
 * Time and randomness are injected into every service so that timing, backoff and leases can be
 * tested with a fake clock. Only `systemClock` and `systemRandom` touch the real ones.
 */
export interface Clock {
  /** Wall-clock milliseconds since the epoch (used for ids and estimates, never for due checks). */
  now(): number;
  /** Monotonic milliseconds, for measuring elapsed time and timeouts. */
  monotonic(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export interface TimerHandle {
  unref?(): unknown;
}

export type Random = () => number;

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

export const systemRandom: Random = () => Math.random();

/** Resolves after `ms` on the given clock; rejects with the signal's reason when aborted. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clock.clearTimeout(handle);
      reject(signal?.reason);
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, {once: true});
  });
}
