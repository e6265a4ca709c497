import {describe, expect, it} from 'vitest';
import {DbClock} from '../../src/core/scheduler/db-clock.js';
import {fakeClock} from '../helpers/clock.js';

/** A local clock we move by hand, and a database clock `skew` ms ahead of it. */
function clocks(skew: number) {
  const clock = fakeClock(1_000_000);
  let rtt = 10;
  const readDbNow = async () => {
    clock.advance(rtt / 2);
    const db = clock.now() + skew;
    clock.advance(rtt / 2);
    return new Date(db);
  };
  return {clock, readDbNow, advance: (ms: number) => clock.advance(ms), setRtt: (ms: number) => (rtt = ms), db: () => clock.now() + skew};
}

describe('database clock estimate', () => {
  it('tracks a skewed database clock and never reports a time it has not reached', async () => {
    for (const skew of [-5000, -3, 0, 7, 120_000]) {
      const c = clocks(skew);
      const d = new DbClock(c.clock, c.readDbNow);
      await d.sync();
      expect(Math.abs(d.now() - c.db())).toBeLessThanOrEqual(1);
      expect(d.safeNow()).toBeLessThanOrEqual(c.db());
      c.advance(500);
      expect(d.safeNow()).toBeLessThanOrEqual(c.db());
      expect(d.delayUntil(c.db() + 100)).toBeGreaterThanOrEqual(100);
    }
  });
  it('keeps the sample with the smallest round trip', async () => {
    const c = clocks(42);
    const d = new DbClock(c.clock, c.readDbNow);
    c.setRtt(2);
    await d.sync();
    const good = d.uncertaintyMs;
    c.setRtt(400);
    await d.sync();
    expect(d.uncertaintyMs).toBe(good);
    expect(d.safeNow()).toBeLessThanOrEqual(c.db());
  });
});
