import {describe, expect, it} from 'vitest';
import {TimingWheel, type FiredTimer} from '../../src/core/timing/wheel.js';

/** mulberry32: a small seeded PRNG, so failures replay. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ids = (fired: FiredTimer<unknown>[]) => fired.map((f) => f.id);

describe('TimingWheel: slot boundaries and mid-tick dues', () => {
  it('fires exactly at, just before and just after a tick boundary, never early', () => {
    const w = new TimingWheel({tickMs: 100, startMs: 0});
    w.schedule('on', 1000);
    w.schedule('before', 999);
    w.schedule('after', 1001);
    w.schedule('mid', 1050);
    expect(w.advance(998)).toEqual([]);
    expect(ids(w.advance(999))).toEqual(['before']);
    expect(ids(w.advance(999.5))).toEqual([]);
    expect(ids(w.advance(1000))).toEqual(['on']);
    expect(ids(w.advance(1000.999))).toEqual([]);
    expect(ids(w.advance(1001))).toEqual(['after']);
    expect(ids(w.advance(1049))).toEqual([]);
    expect(ids(w.advance(1050))).toEqual(['mid']);
    expect(w.size).toBe(0);
  });

  it('an entry due mid-tick is not fired by the tick start but by its due time or later', () => {
    const w = new TimingWheel({tickMs: 100, startMs: 0});
    w.schedule('a', 1050);
    expect(w.advance(1000)).toEqual([]);
    expect(w.has('a')).toBe(true);
    expect(w.advance(1100)).toEqual([{id: 'a', dueMs: 1050, value: undefined}]);
  });

  it('boundaries are relative to startMs and work with a realistic epoch time', () => {
    const start = 1_764_403_200_123;
    const w = new TimingWheel<number>({startMs: start});
    for (const d of [0, 1, 99, 100, 101, 199, 200]) w.schedule(`t${d}`, start + d, d);
    const seen: number[] = [];
    for (let t = start; t <= start + 200; t++) {
      for (const f of w.advance(t)) {
        expect(f.dueMs).toBe(t);
        seen.push(f.value!);
      }
    }
    expect(seen).toEqual([0, 1, 99, 100, 101, 199, 200]);
  });

  it('fires each entry in the next advance whose time has reached it, with coarse steps', () => {
    const w = new TimingWheel({tickMs: 100, slots: 8, startMs: 0});
    w.schedule('a', 250);
    w.schedule('b', 260);
    w.schedule('c', 370);
    expect(ids(w.advance(255))).toEqual(['a']);
    expect(ids(w.advance(369))).toEqual(['b']);
    expect(ids(w.advance(371))).toEqual(['c']);
  });
});

describe('TimingWheel: property — never early, never missed, once, in order', () => {
  type Model = Map<string, {due: number; seq: number; value: number}>;
  const expected = (model: Model, t: number) =>
    [...model.entries()]
      .filter(([, e]) => e.due <= t)
      .sort(([, a], [, b]) => a.due - b.due || a.seq - b.seq)
      .map(([id, e]) => ({id, dueMs: e.due, value: e.value}));

  for (const [seed, slots, tickMs] of [
    [1, 8, 10],
    [2, 16, 7],
    [3, 1024, 100],
    [4, 2, 5],
    [5, 3, 0.5],
  ] as const) {
    it(`matches a reference model (seed ${seed}, ${slots} slots × ${tickMs} ms)`, () => {
      const rnd = prng(seed);
      const start = 1000 + Math.floor(rnd() * 1000);
      const w = new TimingWheel<number>({slots, tickMs, startMs: start});
      const model: Model = new Map();
      const fired = new Set<string>();
      const rotation = slots * tickMs;
      let now = start;
      let seq = 0;
      let n = 0;
      for (let op = 0; op < 6000; op++) {
        const r = rnd();
        if (r < 0.5) {
          // schedule or re-schedule: mostly new ids, some existing ones; dues past, near, mid-tick, far
          const id = model.size > 0 && rnd() < 0.15 ? [...model.keys()][Math.floor(rnd() * model.size)]! : `e${n++}`;
          const shape = rnd();
          const due =
            shape < 0.1
              ? now - Math.floor(rnd() * 3 * tickMs) // already due
              : shape < 0.2
                ? now + Math.floor(rnd() * 4) * tickMs // exactly on a boundary relative to now
                : shape < 0.8
                  ? now + rnd() * rotation
                  : now + rnd() * 6 * rotation; // several rotations away
          const value = op;
          w.schedule(id, due, value);
          model.set(id, {due, seq: seq++, value});
        } else if (r < 0.6) {
          const pick = rnd();
          const id =
            pick < 0.6 && model.size > 0
              ? [...model.keys()][Math.floor(rnd() * model.size)]!
              : pick < 0.8 && fired.size > 0
                ? [...fired][0]!
                : 'nope';
          expect(w.cancel(id)).toBe(model.delete(id));
        } else {
          // advance: sub-tick, tick-sized, exact boundary, multi-rotation jump, or backwards
          const s = rnd();
          const t =
            s < 0.3
              ? now + rnd() * tickMs
              : s < 0.55
                ? now + Math.floor(rnd() * 5) * tickMs
                : s < 0.75
                  ? now + rnd() * rotation * 1.5
                  : s < 0.85
                    ? now + rnd() * rotation * 20
                    : now - rnd() * rotation;
          const want = expected(model, t);
          const got = w.advance(t);
          for (const f of got) {
            expect(f.dueMs).toBeLessThanOrEqual(t);
            expect(fired.has(f.id) && !model.has(f.id)).toBe(false);
          }
          expect(got).toEqual(want);
          for (const f of got) {
            model.delete(f.id);
            fired.add(f.id);
          }
          now = Math.max(now, t);
          expect(w.now).toBe(now);
        }
        expect(w.size).toBe(model.size);
        if (op % 50 === 0) {
          const min = Math.min(...[...model.values()].map((e) => e.due));
          expect(w.nextDueMs()).toBe(model.size ? min : undefined);
          for (const id of model.keys()) expect(w.has(id)).toBe(true);
        }
      }
      const all = w.advance(now + 100 * rotation);
      expect(all).toEqual(expected(model, Infinity));
      expect(w.size).toBe(0);
    });
  }
});

describe('TimingWheel: cancel and re-schedule', () => {
  it('cancel before firing removes it; unknown id and after-fire cancel return false', () => {
    const w = new TimingWheel({startMs: 0});
    w.schedule('a', 500);
    w.schedule('b', 500);
    w.schedule('far', 10 * 1024 * 100); // overflow heap
    expect(w.cancel('a')).toBe(true);
    expect(w.cancel('a')).toBe(false);
    expect(w.cancel('unknown')).toBe(false);
    expect(w.cancel('far')).toBe(true);
    expect(w.has('far')).toBe(false);
    expect(ids(w.advance(500))).toEqual(['b']);
    expect(w.cancel('b')).toBe(false);
    expect(w.advance(100 * 1024 * 100)).toEqual([]);
    expect(w.size).toBe(0);
  });

  it('re-scheduling moves an entry (later, earlier, into and out of the overflow, into the past) and replaces its value', () => {
    const w = new TimingWheel<string>({slots: 16, tickMs: 10, startMs: 0});
    w.schedule('x', 50, 'v1');
    w.schedule('x', 120, 'v2'); // later, still in the window
    expect(w.size).toBe(1);
    expect(w.advance(100)).toEqual([]);
    w.schedule('x', 5000, 'v3'); // into the overflow
    expect(w.advance(200)).toEqual([]);
    w.schedule('x', 210, 'v4'); // out of the overflow, back into a slot
    expect(w.dueOf('x')).toBe(210);
    expect(w.advance(209)).toEqual([]);
    expect(w.advance(210)).toEqual([{id: 'x', dueMs: 210, value: 'v4'}]);
    w.schedule('y', 300);
    w.schedule('y', 100); // into the past: fires at the next advance
    expect(w.advance(211)).toEqual([{id: 'y', dueMs: 100, value: undefined}]);
    expect(w.advance(10_000)).toEqual([]);
  });

  it('many cancels and moves of overflow entries keep results and nextDueMs right', () => {
    const w = new TimingWheel({slots: 4, tickMs: 10, startMs: 0});
    for (let i = 0; i < 5000; i++) w.schedule(`k${i}`, 1000 + i);
    for (let i = 0; i < 5000; i += 2) expect(w.cancel(`k${i}`)).toBe(true);
    for (let i = 1; i < 3000; i += 2) w.schedule(`k${i}`, 2000 + i); // moves: more dead heap nodes
    expect(w.size).toBe(2500);
    expect(w.nextDueMs()).toBe(2000 + 1); // k1 was moved to 2001; k3001 is still at 4001
    // Expected: odd i, due 2000+i if moved (i < 3000, later schedule order) else 1000+i; ties by schedule order.
    const want = [];
    for (let i = 3001; i < 5000; i += 2) want.push({id: `k${i}`, due: 1000 + i, order: i});
    for (let i = 1; i < 3000; i += 2) want.push({id: `k${i}`, due: 2000 + i, order: 10_000 + i});
    want.sort((a, b) => a.due - b.due || a.order - b.order);
    expect(ids(w.advance(100_000))).toEqual(want.map((x) => x.id));
  });
});

describe('TimingWheel: volume and distance', () => {
  it('10k tasks in one slot fire in due order, stable for ties, only when due', () => {
    const w = new TimingWheel<number>({tickMs: 100, startMs: 0});
    const rnd = prng(42);
    const dues: number[] = [];
    for (let i = 0; i < 10_000; i++) {
      const due = 700 + Math.floor(rnd() * 100); // all in bucket 7
      dues.push(due);
      w.schedule(`t${i}`, due, i);
    }
    const first = w.advance(749);
    const second = w.advance(800);
    expect(first.length + second.length).toBe(10_000);
    expect(first.every((f) => f.dueMs <= 749)).toBe(true);
    expect(second.every((f) => f.dueMs > 749)).toBe(true);
    const all = [...first, ...second];
    let disorder = 0;
    for (let i = 1; i < all.length; i++) {
      const a = all[i - 1]!;
      const b = all[i]!;
      if (!(a.dueMs < b.dueMs || (a.dueMs === b.dueMs && a.value! < b.value!))) disorder++;
    }
    expect(disorder).toBe(0);
  });

  it('stable order for equal dues (schedule order; a re-schedule ranks as new)', () => {
    const w = new TimingWheel({slots: 4, tickMs: 10, startMs: 0});
    for (const id of ['a', 'b', 'c', 'd']) w.schedule(id, 35);
    for (const id of ['p', 'q', 'r']) w.schedule(id, 500); // in the overflow heap
    w.schedule('b', 35);
    w.schedule('p', 500);
    expect(ids(w.advance(35))).toEqual(['a', 'c', 'd', 'b']);
    expect(ids(w.advance(1000))).toEqual(['q', 'r', 'p']);
  });

  it('tasks several rotations away fire exactly on time, stepping tick by tick', () => {
    const w = new TimingWheel({slots: 1024, tickMs: 100, startMs: 0});
    const rotation = 1024 * 100;
    const due = 5 * rotation + 37;
    w.schedule('far', due);
    w.schedule('near', 250);
    let fired: FiredTimer<string>[] = [];
    for (let t = 0; t < due; t += 100) {
      fired = fired.concat(w.advance(t));
      if (t < due - 37) expect(w.has('far')).toBe(true);
    }
    expect(ids(fired)).toEqual(['near']);
    expect(w.nextDueMs()).toBe(due);
    expect(w.advance(due - 1)).toEqual([]);
    expect(w.advance(due)).toEqual([{id: 'far', dueMs: due, value: undefined}]);
    expect(w.stats().bulkJumps).toBe(0);
    expect(w.stats().migrated).toBe(1);
  });

  it('nextDueMs reports the earliest pending due (ready list, slots, overflow)', () => {
    const w = new TimingWheel({slots: 8, tickMs: 10, startMs: 0});
    expect(w.nextDueMs()).toBeUndefined();
    w.schedule('far', 10_000);
    expect(w.nextDueMs()).toBe(10_000);
    w.schedule('mid', 55);
    w.schedule('mid2', 52);
    expect(w.nextDueMs()).toBe(52);
    w.advance(40);
    w.schedule('past', 12);
    expect(w.nextDueMs()).toBe(12);
    w.cancel('past');
    w.cancel('mid2');
    expect(w.nextDueMs()).toBe(55);
    w.clear();
    expect(w.size).toBe(0);
    expect(w.nextDueMs()).toBeUndefined();
    expect(w.advance(1e9)).toEqual([]);
    w.schedule('after-clear', 1e9 + 5);
    expect(ids(w.advance(1e9 + 5))).toEqual(['after-clear']);
  });
});

describe('TimingWheel: clock jumps', () => {
  it('a jump forward by hours fires everything once, in order, in bulk (no per-tick loop)', () => {
    const start = 1_764_403_200_000;
    const w = new TimingWheel<number>({tickMs: 100, startMs: start});
    const rnd = prng(7);
    const n = 100_000;
    const threeHours = 3 * 3600_000;
    for (let i = 0; i < n; i++) w.schedule(`j${i}`, start + Math.floor(rnd() * threeHours), i);
    w.schedule('later', start + 5 * 3600_000 + 50);
    const before = w.stats();
    const t0 = performance.now();
    const out = w.advance(start + 4 * 3600_000); // 144,000 ticks ahead
    const elapsed = performance.now() - t0;
    const after = w.stats();
    expect(out.length).toBe(n);
    expect(new Set(ids(out)).size).toBe(n);
    let disorder = 0;
    for (let i = 1; i < n; i++) {
      const a = out[i - 1]!;
      const b = out[i]!;
      if (!(a.dueMs < b.dueMs || (a.dueMs === b.dueMs && a.value! < b.value!))) disorder++;
    }
    expect(disorder).toBe(0);
    expect(after.bulkJumps - before.bulkJumps).toBe(1);
    // at most: empty the two loaded chunks (1024 slots) + step inside the target chunk (< 512) + 1; not 144,000
    expect(after.slotVisits - before.slotVisits).toBeLessThanOrEqual(1024 + 512 + 1);
    expect(elapsed).toBeLessThan(2000); // loose: typically tens of ms
    console.log(`jump: ${n} entries over 3 h fired in ${elapsed.toFixed(1)} ms`);
    expect(w.size).toBe(1);
    expect(w.advance(start + 5 * 3600_000 + 49)).toEqual([]);
    expect(ids(w.advance(start + 5 * 3600_000 + 50))).toEqual(['later']);
  });

  it('a jump of a year with sparse entries costs no more than one rotation of slot visits', () => {
    const w = new TimingWheel<number>({tickMs: 100, startMs: 0});
    const year = 365 * 86_400_000; // 315,360,000 ticks
    const rnd = prng(11);
    const dues: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const due = Math.floor(rnd() * year);
      dues.push(due);
      w.schedule(`y${i}`, due, i);
    }
    const t0 = performance.now();
    const out = w.advance(year);
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(out.map((f) => f.dueMs)).toEqual([...dues].sort((a, b) => a - b));
    expect(w.stats().bulkJumps).toBe(1);
    expect(w.stats().slotVisits).toBeLessThanOrEqual(1024 + 512 + 1);
  });

  it('a jump over dense chunks (bucket distribution path) keeps exact order', () => {
    const w = new TimingWheel<number>({slots: 8, tickMs: 10, startMs: 0}); // chunks of 4 buckets = 40 ms
    const rnd = prng(12);
    const want: {id: string; due: number; i: number}[] = [];
    for (let i = 0; i < 5000; i++) {
      const due = 1000 + Math.floor(rnd() * 200) + (rnd() < 0.5 ? 0.5 : 0); // ~1000 per chunk, many ties
      want.push({id: `d${i}`, due, i});
      w.schedule(`d${i}`, due, i);
    }
    want.sort((a, b) => a.due - b.due || a.i - b.i);
    const out = w.advance(1150);
    const cut = want.filter((x) => x.due <= 1150);
    expect(ids(out)).toEqual(cut.map((x) => x.id));
    expect(ids(w.advance(5000))).toEqual(want.slice(cut.length).map((x) => x.id));
  });

  it('a jump over an empty wheel does not walk ticks either', () => {
    const w = new TimingWheel({startMs: 0});
    w.advance(1e12);
    w.advance(1e12 + 50_000); // < one rotation, but the wheel is empty
    expect(w.stats().slotVisits).toBe(0);
    w.schedule('a', 1e12 + 60_000);
    expect(ids(w.advance(1e12 + 60_000))).toEqual(['a']);
  });

  it('the clock going backwards fires nothing early and does not corrupt state', () => {
    const w = new TimingWheel({tickMs: 100, slots: 16, startMs: 0});
    w.schedule('a', 10_500);
    w.schedule('b', 10_000);
    w.schedule('far', 50_000);
    expect(ids(w.advance(10_000))).toEqual(['b']);
    expect(w.advance(5_000)).toEqual([]); // backwards
    expect(w.now).toBe(10_000); // the cursor did not move back
    expect(w.advance(0)).toEqual([]);
    w.schedule('c', 10_200);
    w.schedule('past', 9_000); // due before the wheel's time
    expect(w.advance(8_000)).toEqual([]); // still backwards: 'past' is not due at 8,000
    expect(ids(w.advance(9_500))).toEqual(['past']); // due by 9,500, even though 9,500 < now
    expect(w.advance(10_199)).toEqual([]);
    expect(ids(w.advance(10_200))).toEqual(['c']);
    expect(ids(w.advance(10_500))).toEqual(['a']);
    expect(w.advance(49_999)).toEqual([]);
    expect(ids(w.advance(50_000))).toEqual(['far']);
    expect(w.size).toBe(0);
  });

  it('an entry scheduled at or before the current time fires at the next advance', () => {
    const w = new TimingWheel({startMs: 1000});
    w.advance(5000);
    w.schedule('now', 5000);
    w.schedule('past', 10);
    expect(ids(w.advance(5000))).toEqual(['past', 'now']);
  });
});

describe('TimingWheel: input validation', () => {
  it('rejects bad options and non-finite times without changing state', () => {
    expect(() => new TimingWheel({startMs: NaN})).toThrow(RangeError);
    expect(() => new TimingWheel({startMs: 0, slots: 0})).toThrow(RangeError);
    expect(() => new TimingWheel({startMs: 0, slots: 1})).toThrow(RangeError);
    expect(() => new TimingWheel({startMs: 0, slots: 1.5})).toThrow(RangeError);
    expect(() => new TimingWheel({startMs: 0, tickMs: 0})).toThrow(RangeError);
    expect(() => new TimingWheel({startMs: 0, tickMs: Infinity})).toThrow(RangeError);
    const w = new TimingWheel({startMs: 0});
    w.schedule('a', 100);
    expect(() => w.schedule('a', NaN)).toThrow(RangeError);
    expect(() => w.schedule('b', Infinity)).toThrow(RangeError);
    expect(() => w.advance(NaN)).toThrow(RangeError);
    expect(() => w.schedule('c', 1e30)).toThrow(RangeError); // beyond 2^50 ticks
    expect(w.size).toBe(1);
    expect(w.dueOf('a')).toBe(100);
    expect(ids(w.advance(100))).toEqual(['a']);
  });
});
