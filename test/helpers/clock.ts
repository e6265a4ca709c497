/** The one fake clock of the unit tests: time moves only when a test says so. */
import type {Clock, TimerHandle} from '../../src/core/time.js';

export interface FakeClock extends Clock {
  /** Moves time forward by `ms`, firing every timer due on the way in due-time order. */
  advance(ms: number): void;
  /** Like advance, but lets promise callbacks run after each timer (for async loops). */
  advanceAsync(ms: number): Promise<void>;
  /** Timers waiting to fire. */
  pending(): number;
}

/** A manual clock starting at `start` ms: wall and monotonic time are the same counter. */
export function fakeClock(start = 0): FakeClock {
  let now = start;
  let seq = 0;
  const timers = new Map<number, {at: number; fn: () => void}>();
  const nextDue = (until: number): [number, {at: number; fn: () => void}] | undefined =>
    [...timers].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
  const flush = (): Promise<void> => new Promise((r) => setImmediate(r));
  return {
    now: () => now,
    monotonic: () => now,
    setTimeout: (fn, ms) => {
      const id = ++seq;
      timers.set(id, {at: now + Math.max(0, ms), fn});
      return {id} as TimerHandle;
    },
    clearTimeout: (h) => void timers.delete((h as {id: number}).id),
    advance(ms) {
      const until = now + ms;
      for (let due = nextDue(until); due; due = nextDue(until)) {
        timers.delete(due[0]);
        now = Math.max(now, due[1].at);
        due[1].fn();
      }
      now = until;
    },
    async advanceAsync(ms) {
      const until = now + ms;
      await flush();
      for (let due = nextDue(until); due; due = nextDue(until)) {
        timers.delete(due[0]);
        now = Math.max(now, due[1].at);
        due[1].fn();
        await flush();
      }
      now = until;
    },
    pending: () => timers.size,
  };
}
