/**
 * The worker's stop fits in the grace period: onStop gets what the drain left of it (with a small
 * floor), not another full grace period after a drain that used it all.
 */
import {describe, expect, it} from 'vitest';
import {ON_STOP_FLOOR_MS, drainThenStop} from '../../src/core/worker/service.js';
import type {Clock} from '../../src/core/time.js';

/** A clock whose time moves only when the test says so; no timers are needed here. */
function manualClock(): Clock & {advance(ms: number): void} {
  let t = 0;
  return {
    now: () => t,
    monotonic: () => t,
    setTimeout: () => ({}),
    clearTimeout: () => undefined,
    advance: (ms) => void (t += ms),
  };
}

describe('drainThenStop', () => {
  const run = async (graceMs: number, drainTakesMs: number) => {
    const clock = manualClock();
    const seen: {drainGrace?: number; budget?: number} = {};
    const out = await drainThenStop(
      clock,
      graceMs,
      async (ms) => {
        seen.drainGrace = ms;
        clock.advance(drainTakesMs);
      },
      async (budgetMs) => {
        seen.budget = budgetMs;
        return 'stopped';
      },
    );
    return {out, ...seen};
  };

  it('gives onStop the rest of the grace period after the drain', async () => {
    expect(await run(30_000, 10_000)).toEqual({out: 'stopped', drainGrace: 30_000, budget: 20_000});
    expect(await run(30_000, 0)).toMatchObject({budget: 30_000});
  });

  it('a drain that used the whole grace leaves onStop only the floor, so the stop ends near the grace', async () => {
    expect(ON_STOP_FLOOR_MS).toBe(1000);
    expect(await run(30_000, 30_000)).toMatchObject({budget: ON_STOP_FLOOR_MS});
    expect(await run(30_000, 31_000)).toMatchObject({budget: ON_STOP_FLOOR_MS});
    expect(await run(200, 150)).toMatchObject({budget: ON_STOP_FLOOR_MS});
  });

  it('runs onStop only after the drain, and not at all when the drain throws', async () => {
    const clock = manualClock();
    const order: string[] = [];
    await drainThenStop(
      clock,
      1000,
      async () => void order.push('drain'),
      async () => void order.push('onStop'),
    );
    expect(order).toEqual(['drain', 'onStop']);
    await expect(
      drainThenStop(
        clock,
        1000,
        async () => {
          throw new Error('drain broke');
        },
        async () => void order.push('onStop again'),
      ),
    ).rejects.toThrow('drain broke');
    expect(order).toEqual(['drain', 'onStop']);
  });
});
