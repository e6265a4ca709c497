import {invalid} from '../errors.js';
import {parseDuration} from '../duration.js';
import type {Clock, TimerHandle} from '../time.js';

/** The test kit's default start: a fixed instant, so runs do not depend on the day they run. */
export const TEST_CLOCK_START = Date.UTC(2026, 0, 1);

/**
 * A manual clock for tests: time moves only when the test (or the in-process client) advances it.
 * Wall-clock and monotonic time are the same counter. It is the `Clock` ax's services take, so a
 * test can hand it on to its own code as well.
 */
export interface TestClock extends Clock {
  /**
   * Moves time forward by `by` (ms or a duration such as `5s`), firing every timer due on the way
   * in due-time order, and lets promise callbacks run after each (so a handler awaiting its
   * aborted signal gets to run). Throws invalid_input for a negative or malformed duration.
   */
  advance(by: number | string): Promise<void>;
  /** Timers waiting to fire. */
  pending(): number;
}

/** Lets the promise callbacks queued so far run (and the ones they queue). */
export const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

/**
 * A TestClock starting at `start` (epoch ms or a Date; default TEST_CLOCK_START). Throws
 * invalid_input for a start that is not a finite time.
 */
export function createTestClock(start: number | Date = TEST_CLOCK_START): TestClock {
  let now = start instanceof Date ? start.getTime() : start;
  if (typeof now !== 'number' || !Number.isFinite(now)) throw invalid('a test clock starts at a finite time (epoch ms or a Date)');
  let seq = 0;
  const timers = new Map<number, {at: number; fn: () => void}>();
  const nextDue = (until: number): [number, {at: number; fn: () => void}] | undefined => {
    let best: [number, {at: number; fn: () => void}] | undefined;
    for (const e of timers) if (e[1].at <= until && (!best || e[1].at < best[1].at)) best = e;
    return best;
  };
  return {
    now: () => now,
    monotonic: () => now,
    setTimeout: (fn, ms) => {
      const id = ++seq;
      timers.set(id, {at: now + Math.max(0, Number.isFinite(ms) ? ms : 0), fn});
      return {id} as TimerHandle;
    },
    clearTimeout: (h) => void timers.delete((h as {id: number}).id),
    async advance(by) {
      const ms = parseDuration(by, 'clock advance');
      const until = now + ms;
      await settle();
      for (let due = nextDue(until); due; due = nextDue(until)) {
        timers.delete(due[0]);
        now = Math.max(now, due[1].at);
        due[1].fn();
        await settle();
      }
      now = until;
    },
    pending: () => timers.size,
  };
}
