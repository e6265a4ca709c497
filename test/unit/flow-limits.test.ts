/** The cluster-wide limits' policy (core/flow/limits.ts): parsing, the cap, the token bucket on a fake clock. */
import {describe, expect, it} from 'vitest';
import {
  type Bucket,
  CAP_RECHECK_MAX_MS,
  CAP_RECHECK_MS,
  decideLimits,
  limitsOf,
  mergeLimits,
  parseMaxRunning,
  parseRate,
  rateText,
  refill,
} from '../../src/core/flow/limits.js';
import {fakeClock} from '../helpers/clock.js';

const tasks = (n: number, paid = false, from = 0) =>
  Array.from({length: n}, (_, i) => ({id: `t${from + i}`, prepaid: paid ? ('rate' as const) : null}));

describe('limit settings', () => {
  it('parses --max-running: a whole number >= 1, or none; anything else is invalid_input', () => {
    expect(parseMaxRunning('20')).toBe(20);
    expect(parseMaxRunning(3)).toBe(3);
    expect(parseMaxRunning('none')).toBeNull();
    expect(parseMaxRunning(null)).toBeNull();
    for (const bad of ['0', '-1', '1.5', 'x', '', '2e3', 0, -3, 2.5])
      expect(() => parseMaxRunning(bad), String(bad)).toThrow(expect.objectContaining({code: 'invalid_input'}));
  });

  it('parses --rate: N, N/s, N/m, N/h (decimals), or none; 0, negative and malformed are invalid_input', () => {
    expect(parseRate('100/s')).toBe(100);
    expect(parseRate('100')).toBe(100);
    expect(parseRate('30/m')).toBe(0.5);
    expect(parseRate('7.2/h')).toBeCloseTo(0.002);
    expect(parseRate(' 12 / sec ')).toBe(12);
    expect(parseRate(50)).toBe(50);
    expect(parseRate('none')).toBeNull();
    for (const bad of ['0', '0/s', '-5/s', 'fast', '10/d', '/s', '1e3/s', '10/s/s', 0, -1, NaN, Infinity, '0.1/h', '2000000/s'])
      expect(() => parseRate(bad), String(bad)).toThrow(expect.objectContaining({code: 'invalid_input'}));
    expect(rateText(100)).toBe('100/s');
    expect(rateText(0.5)).toBe('30/m');
  });

  it('merges into the stored settings: absent keeps, none clears; a bad value throws before anything changes', () => {
    const cur = {maxRunning: 5, rate: 10};
    expect(mergeLimits(cur, {rate: '20/s'})).toEqual({maxRunning: 5, rate: 20});
    expect(mergeLimits(cur, {maxRunning: 'none'})).toEqual({rate: 10});
    expect(() => mergeLimits(cur, {maxRunning: 2, rate: '0'})).toThrow(/rate must be/);
    expect(cur).toEqual({maxRunning: 5, rate: 10});
    expect(limitsOf({maxRunning: 0, rate: -1, breaker: {}})).toEqual({});
    expect(limitsOf({maxRunning: 4, rate: 2.5})).toEqual({maxRunning: 4, rate: 2.5});
  });
});

describe('max running', () => {
  it('takes only what fits; the rest waits in waves of the cap, the wait capped', () => {
    const d = decideLimits(tasks(50), {maxRunning: 20}, {running: 15, bucket: null}, 0);
    expect(d.run).toEqual(['t0', 't1', 't2', 't3', 't4']);
    expect(d.deferred).toHaveLength(45);
    expect(d.deferred.every((x) => x.parked === 'capped')).toBe(true);
    expect(d.deferred[0]!.delayMs).toBe(CAP_RECHECK_MS);
    expect(d.deferred[19]!.delayMs).toBe(CAP_RECHECK_MS);
    expect(d.deferred[20]!.delayMs).toBe(2 * CAP_RECHECK_MS);
    expect(d.bucket).toBeUndefined();
    const full = decideLimits(tasks(10_000), {maxRunning: 1}, {running: 3, bucket: null}, 0);
    expect(full.run).toEqual([]);
    expect(Math.max(...full.deferred.map((x) => x.delayMs))).toBe(CAP_RECHECK_MAX_MS);
  });
});

describe('rate (token bucket, fake clock)', () => {
  it('a full bucket lets one second of tasks through; the k-th over it is deferred to its slot k / rate later', () => {
    const d = decideLimits(tasks(150), {rate: 100}, {running: 0, bucket: null}, 1000);
    expect(d.run).toHaveLength(100);
    expect(d.deferred).toHaveLength(50);
    expect(d.deferred.map((x) => x.delayMs).slice(0, 3)).toEqual([10, 20, 30]);
    expect(d.deferred.at(-1)!.delayMs).toBe(500);
    expect(d.deferred.every((x) => x.parked === 'rate')).toBe(true);
    expect(d.bucket).toEqual({tokens: -50, atMs: 1000});
    // Tasks that held a reserved slot come back prepaid and take no token.
    const back = decideLimits(tasks(50, true), {rate: 100}, {running: 0, bucket: d.bucket!}, 1500);
    expect(back.run).toHaveLength(50);
    expect(back.bucket).toEqual({tokens: 0, atMs: 1500});
  });

  it('refills at the rate up to one second of burst; a clock step back adds nothing', () => {
    expect(refill({tokens: 0, atMs: 0}, 250, 100)).toEqual({tokens: 25, atMs: 250});
    expect(refill({tokens: 0, atMs: 0}, 60_000, 100)).toEqual({tokens: 100, atMs: 60_000});
    expect(refill({tokens: 5, atMs: 1000}, 900, 100)).toEqual({tokens: 5, atMs: 1000});
    expect(refill(null, 7, 0.5)).toEqual({tokens: 1, atMs: 7});
  });

  it('three workers sharing the bucket over 30 s of a backlog run at the rate (± 1 %), each task once', () => {
    const clock = fakeClock(0);
    const rate = 100;
    let bucket: Bucket | null = null;
    const started: number[] = [];
    const waiting = new Map<string, {at: number; prepaid: 'rate' | null}>();
    for (let i = 0; i < 5000; i++) waiting.set(`t${i}`, {at: 0, prepaid: null});
    // Every 50 ms each worker claims up to 100 due tasks (the scheduler rang them), in turn.
    for (let tick = 0; tick < 600; tick++) {
      for (let w = 0; w < 3; w++) {
        const due = [...waiting].filter(([, x]) => x.at <= clock.now()).slice(0, 100);
        if (due.length === 0) continue;
        const d = decideLimits(
          due.map(([id, x]) => ({id, prepaid: x.prepaid})),
          {rate},
          {running: 0, bucket},
          clock.now(),
        );
        bucket = d.bucket!;
        for (const id of d.run) {
          waiting.delete(id);
          started.push(clock.now());
        }
        for (const x of d.deferred) waiting.set(x.id, {at: clock.now() + x.delayMs, prepaid: 'rate'});
      }
      clock.advance(50);
    }
    // The steady window: after the first second's burst.
    const inWindow = started.filter((t) => t >= 1000 && t < 30_000).length;
    expect(inWindow / 29).toBeGreaterThan(rate * 0.99);
    expect(inWindow / 29).toBeLessThan(rate * 1.01);
    expect(started.length + waiting.size).toBe(5000);
  });

  it('both limits: the cap first, then the rate (a capped task takes no token; one waiting for its slot uses no room)', () => {
    const d = decideLimits(tasks(10), {maxRunning: 4, rate: 2}, {running: 1, bucket: null}, 0);
    expect(d.run).toEqual(['t0', 't1']);
    expect(d.deferred.map((x) => [x.id, x.parked, x.delayMs])).toEqual(
      [2, 3, 4, 5, 6, 7, 8, 9].map((i) => [`t${i}`, 'rate', (i - 1) * 500]),
    );
    expect(d.bucket!.tokens).toBe(-8);
    const full = decideLimits(tasks(3), {maxRunning: 4, rate: 2}, {running: 4, bucket: {tokens: 2, atMs: 0}}, 0);
    expect(full.run).toEqual([]);
    expect(full.deferred.every((x) => x.parked === 'capped')).toBe(true);
    expect(full.bucket!.tokens).toBe(2);
  });
});
