/**
 * One backoff helper (core/retry/backoff.ts backoffMs) behind every backoff of ax. Each caller's
 * shape is checked against the formula it had before the helper (kept here as the oracle), value
 * for value over many steps and random draws: the same bounds, the same jitter, the same numbers.
 */
import {describe, expect, it} from 'vitest';
import {MAX_DOUBLINGS, backoffMs, retryDelayBounds, retryDelayMs} from '../../src/core/retry/backoff.js';
import {CONNECT_RETRY_BASE_MS, connectRetryDelay} from '../../src/core/connect-retry.js';
import {cooldownMs} from '../../src/core/flow/breaker.js';
import {STORE_RETRY} from '../../src/core/worker/worker.js';
import {RECONNECT_BACKOFF} from '../../src/core/broker/amqp/broker.js';
import {SUBMIT_RETRY} from '../../src/core/producer/producer.js';
import {PASS_BACKOFF} from '../../src/core/outbox/relay.js';

/** Draws in [0, 1): the ends, a few round values and a deterministic spread. */
const DRAWS = [0, 0.25, 0.5, 0.999_999_999, ...Array.from({length: 200}, (_, i) => ((i * 7919) % 1000) / 1000 + 0.000_123)];
const STEPS = Array.from({length: 70}, (_, i) => i + 1);
const fixed = (v: number) => () => v;

describe('backoffMs', () => {
  it('doubles from firstMs, caps at maxMs, and jitters by a factor drawn from [low, high)', () => {
    const shape = {firstMs: 100, maxMs: 1000};
    expect(STEPS.slice(0, 6).map((n) => backoffMs(n, shape))).toEqual([100, 200, 400, 800, 1000, 1000]);
    const jittered = {...shape, jitter: [0.5, 1.5] as const};
    expect(backoffMs(3, jittered, fixed(0))).toBe(200);
    expect(backoffMs(3, jittered, fixed(0.5))).toBe(400);
    expect(backoffMs(3, jittered, fixed(0.999))).toBeCloseTo(599.6, 6);
  });

  it('counts a step below 1 as 1, floors a fraction, and stops doubling at maxDoublings', () => {
    const shape = {firstMs: 1, maxMs: Number.MAX_VALUE};
    expect(backoffMs(0, shape)).toBe(1);
    expect(backoffMs(-5, shape)).toBe(1);
    expect(backoffMs(2.9, shape)).toBe(2);
    expect(backoffMs(1000, shape)).toBe(2 ** MAX_DOUBLINGS);
    expect(backoffMs(1000, {...shape, maxDoublings: 3})).toBe(8);
  });

  it('refuses a jitter without a random source', () => {
    expect(() => backoffMs(1, {firstMs: 1, maxMs: 2, jitter: [0.5, 1]})).toThrow(RangeError);
  });
});

describe("each caller's backoff is the formula it had", () => {
  /** Every step × draw: the same number (one comparison of the whole table, so a difference names its cell). */
  const each = (f: (n: number, r: number) => number, oracle: (n: number, r: number) => number) => {
    const cells = STEPS.flatMap((n) => DRAWS.map((r) => `${n}@${r}`));
    const table = (g: typeof f) =>
      Object.fromEntries(STEPS.flatMap((n) => DRAWS.map((r, i) => [cells[(n - 1) * DRAWS.length + i]!, g(n, r)])));
    expect(table(f)).toEqual(table(oracle));
  };

  it('task retries (retryDelayMs, bounds)', () => {
    for (const opts of [
      {baseMs: 1000, maxMs: 3_600_000},
      {baseMs: 1, maxMs: 2 ** 45},
      {baseMs: 250, maxMs: 250},
    ]) {
      const old = (attempt: number) => Math.min(opts.maxMs, opts.baseMs * 2 ** Math.min(Math.max(1, Math.floor(attempt)) - 1, 40));
      each(
        (n, r) => retryDelayMs(n, opts, fixed(r)),
        (n, r) => Math.round(old(n) * (1 + 0.5 * r)),
      );
      for (const n of STEPS) expect(retryDelayBounds(n, opts)).toEqual([Math.round(old(n)), Math.round(old(n) * 1.5)]);
    }
  });

  it('connection retries at start (connectRetryDelay)', () => {
    for (const maxMs of [30_000, 10, 2 ** 40]) {
      each(
        (n, r) => connectRetryDelay(n, maxMs, fixed(r)),
        (n, r) => Math.round(Math.min(maxMs, CONNECT_RETRY_BASE_MS * 2 ** Math.min(n - 1, 30)) * (0.5 + 0.5 * r)),
      );
    }
  });

  it("the breaker's cool-down (cooldownMs)", () => {
    for (const s of [
      {cooldownMs: 30_000, maxCooldownMs: 600_000},
      {cooldownMs: 1000, maxCooldownMs: 86_400_000},
    ]) {
      each(
        (n) => cooldownMs(n, s as Parameters<typeof cooldownMs>[1]),
        (n) => Math.min(s.maxCooldownMs, s.cooldownMs * 2 ** Math.max(0, Math.min(n - 1, 30))),
      );
    }
  });

  it("the worker's store retries, the broker's reconnects, the producer's and the relay's retries", () => {
    // The shapes the callers use, against the formulas they replaced.
    each(
      (n) => backoffMs(n, STORE_RETRY),
      (n) => Math.min(5000, 50 * 2 ** Math.min(n, 7)),
    );
    each(
      (n, r) => backoffMs(n, RECONNECT_BACKOFF, fixed(r)),
      (n, r) => Math.min(30_000, 200 * 2 ** Math.min(n, 8)) * (0.5 + r),
    );
    each(
      // Capped at 4 s since the fault suite's two-minute outage (it was 10 s): see SUBMIT_RETRY.
      (n, r) => backoffMs(n, SUBMIT_RETRY, fixed(r)),
      (n, r) => Math.min(4000, 100 * 2 ** Math.min(n, 7)) * (0.5 + r),
    );
    each(
      (n, r) => backoffMs(n, PASS_BACKOFF, fixed(r)),
      (n, r) => Math.min(30_000, 250 * 2 ** Math.min(n, 7)) * (0.5 + r),
    );
  });
});
