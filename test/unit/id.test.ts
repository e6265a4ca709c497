/** Task ids: UUIDv7 with a per-millisecond counter (RFC 9562 §6.2 method 1) and CSPRNG random bits. */
import {describe, expect, it} from 'vitest';
import {COUNTER_BITS, createIdGenerator, isTaskId, nextIdClock, v7PrefixAt, type ByteSource} from '../../src/core/task/id.js';

const T0 = 1_700_000_000_000;
/** The 48-bit millisecond timestamp of a UUIDv7. */
const msOf = (id: string): number => Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16);
/** The 42-bit counter: rand_a (12 bits) and the top 30 bits of rand_b (after the 2 variant bits). */
const counterOf = (id: string): number => {
  const hex = id.replace(/-/g, '');
  const randA = Number.parseInt(hex.slice(13, 16), 16);
  const randBTop = Number.parseInt(hex.slice(16, 24), 16) % 2 ** 30;
  return randA * 2 ** 30 + randBTop;
};
/** A byte source that hands out `value` for every byte, and counts its calls. */
const constantBytes = (value: number): ByteSource & {calls: number} => {
  const src = {
    calls: 0,
    fill(b: Uint8Array) {
      src.calls++;
      b.fill(value);
    },
  };
  return src;
};

describe('task ids', () => {
  it('100k ids made in a tight loop are strictly increasing and unique', () => {
    const gen = createIdGenerator(() => Date.now());
    const ids = Array.from({length: 100_000}, gen);
    for (let i = 1; i < ids.length; i++)
      if (!((ids[i - 1] as string) < (ids[i] as string))) expect.fail(`id ${i} does not sort after id ${i - 1}`);
    expect(new Set(ids).size).toBe(ids.length);
    // Many share a millisecond (that is what the counter is for).
    expect(new Set(ids.map(msOf)).size).toBeLessThan(ids.length);
  });

  it('ids within one millisecond count up by one from a random seed below 2^41', () => {
    const gen = createIdGenerator(() => T0);
    const ids = Array.from({length: 1000}, gen);
    const c0 = counterOf(ids[0] as string);
    expect(c0).toBeLessThan(2 ** (COUNTER_BITS - 1));
    ids.forEach((id, i) => {
      expect(msOf(id)).toBe(T0);
      expect(counterOf(id)).toBe(c0 + i);
    });
  });

  it('sets version 7 and variant 10, and the timestamp of the clock', () => {
    const gen = createIdGenerator(() => T0 + 123);
    for (let i = 0; i < 1000; i++) {
      const id = gen();
      expect(isTaskId(id)).toBe(true);
      expect(id[14]).toBe('7');
      expect('89ab').toContain(id[19]);
      expect(msOf(id)).toBe(T0 + 123);
    }
  });

  it('a clock moving backwards still gives increasing ids (they keep the last millisecond)', () => {
    let t = T0 + 10_000;
    const gen = createIdGenerator(() => t);
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) ids.push(gen());
    t -= 5000; // NTP stepped the clock back 5 s
    for (let i = 0; i < 100; i++) ids.push(gen());
    t += 5001; // and it caught up
    for (let i = 0; i < 100; i++) ids.push(gen());
    for (let i = 1; i < ids.length; i++) expect((ids[i - 1] as string) < (ids[i] as string)).toBe(true);
    expect(msOf(ids[150] as string)).toBe(T0 + 10_000);
    expect(msOf(ids[299] as string)).toBe(T0 + 10_001);
  });

  it('a counter overflow moves the timestamp on by one millisecond and reseeds', () => {
    const seed = () => 7;
    expect(nextIdClock(undefined, T0 + 0.9, seed)).toEqual({ms: T0, counter: 7});
    expect(nextIdClock({ms: T0, counter: 41}, T0, seed)).toEqual({ms: T0, counter: 42});
    expect(nextIdClock({ms: T0, counter: 2 ** COUNTER_BITS - 1}, T0, seed)).toEqual({ms: T0 + 1, counter: 7});
    expect(nextIdClock({ms: T0, counter: 2 ** COUNTER_BITS - 1}, T0 - 50, seed)).toEqual({ms: T0 + 1, counter: 7});
    expect(nextIdClock({ms: T0, counter: 99}, T0 + 1, seed)).toEqual({ms: T0 + 1, counter: 7});
  });

  it('takes its random bits from the injected byte source, in blocks', () => {
    const zeros = constantBytes(0);
    const gen = createIdGenerator(() => T0, zeros);
    expect(gen()).toBe('018bcfe5-6800-7000-8000-000000000000');
    expect(gen()).toBe('018bcfe5-6800-7000-8000-000100000000');
    for (let i = 0; i < 1000; i++) gen();
    // 4 bytes an id (+ 6 for each new millisecond) from 256-byte blocks: far fewer calls than ids.
    expect(zeros.calls).toBeLessThan(30);
    const ones = createIdGenerator(() => T0, constantBytes(0xff));
    // The seed's top counter bit stays 0 (room to count), everything else random is 1.
    expect(ones()).toBe('018bcfe5-6800-77ff-bfff-ffffffffffff');
  });

  it('by default two generators in the same millisecond make different ids (CSPRNG seeds)', () => {
    const a = createIdGenerator(() => T0);
    const b = createIdGenerator(() => T0);
    const ids = new Set([...Array.from({length: 100}, a), ...Array.from({length: 100}, b)]);
    expect(ids.size).toBe(200);
  });

  it('v7PrefixAt: every id of a millisecond starts with its prefix and sorts (as text) between it and the next one', () => {
    for (const ms of [T0, T0 + 0xfff, 0x0fffffffffff, 0x1000000]) {
      const ids = [
        createIdGenerator(() => ms, constantBytes(0)),
        createIdGenerator(() => ms, constantBytes(0xff)),
        createIdGenerator(() => ms),
      ].map((g) => g());
      for (const id of ids) {
        expect(id.slice(0, 13)).toBe(v7PrefixAt(ms));
        expect(id >= v7PrefixAt(ms) && id < v7PrefixAt(ms + 1)).toBe(true);
        expect(id >= v7PrefixAt(ms - 1)).toBe(true);
        expect(id < v7PrefixAt(ms)).toBe(false);
      }
    }
    // Fractions round down; out-of-range times clamp to the 48 bits.
    expect(v7PrefixAt(T0 + 0.9)).toBe(v7PrefixAt(T0));
    expect(v7PrefixAt(-5)).toBe('00000000-0000');
    expect(v7PrefixAt(2 ** 60)).toBe('ffffffff-ffff');
  });
});
