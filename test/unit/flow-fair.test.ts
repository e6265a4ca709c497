/**
 * Fair dispatch's round robin (core/flow/fair.ts) and the per-key limits of decideLimits
 * (core/flow/limits.ts), as pure policy.
 */
import {describe, expect, it} from 'vitest';
import {fairPlan, fairShares, type FairCursor, type FairKey} from '../../src/core/flow/fair.js';
import {decideLimits, fullAt, keyWeight, limitsOf, type LimitsInput, mergeLimits, parseKeyWeightFlags} from '../../src/core/flow/limits.js';

const keys = (...ks: Array<string | [string, number]>): FairKey[] =>
  ks.map((k) => (typeof k === 'string' ? {key: k, available: Infinity} : {key: k[0], available: k[1]}));
const one = (): number => 1;
const start: FairCursor = {key: null, taken: 0};

/** Runs claims of `batch` permits until `need` tasks were planned; returns how many each key got. */
function simulate(ks: FairKey[], weights: Record<string, number>, batch: number, need: number): Map<string, number> {
  let cursor = start;
  const got = new Map<string, number>();
  for (let done = 0; done < need;) {
    const p = fairPlan(ks, cursor, batch, (k) => weights[k] ?? 1);
    for (const t of p.take) got.set(t.key, (got.get(t.key) ?? 0) + t.n);
    done += p.take.reduce((a, t) => a + t.n, 0);
    cursor = p.cursor;
  }
  return got;
}

describe('fairPlan', () => {
  it('takes one per key in turn from the start, and continues after the cursor on the next claim', () => {
    const p = fairPlan(keys('a', 'b', 'c'), start, 2, one);
    expect(p.take).toEqual([
      {key: 'a', n: 1},
      {key: 'b', n: 1},
    ]);
    expect(p.cursor).toEqual({key: 'b', taken: 1});
    const q = fairPlan(keys('a', 'b', 'c'), p.cursor, 2, one);
    expect(q.take).toEqual([
      {key: 'c', n: 1},
      {key: 'a', n: 1},
    ]);
  });

  it('a key with 100k due and one with 10 share each claim: the small one is not behind the flood', () => {
    const p = fairPlan(keys(['big', 100_000], ['small', 10]), start, 50, one);
    // One each in turn until the small key runs out, then the big key takes the rest.
    expect(p.take).toEqual([
      {key: 'big', n: 40},
      {key: 'small', n: 10},
    ]);
  });

  it('weights 3:1 give shares of 3:1 over many claims of any size', () => {
    for (const batch of [1, 2, 5, 50]) {
      const got = simulate(keys('a', 'b'), {a: 3}, batch, 4000);
      const ratio = got.get('a')! / got.get('b')!;
      expect(ratio, `batch ${batch}`).toBeGreaterThan(2.9);
      expect(ratio, `batch ${batch}`).toBeLessThan(3.1);
    }
  });

  it('a turn cut short by the batch is finished by the next claim', () => {
    const p = fairPlan(keys('a', 'b'), start, 2, (k) => (k === 'a' ? 3 : 1));
    expect(p.cursor).toEqual({key: 'a', taken: 2});
    expect(fairPlan(keys('a', 'b'), p.cursor, 2, (k) => (k === 'a' ? 3 : 1)).take).toEqual([
      {key: 'a', n: 1},
      {key: 'b', n: 1},
    ]);
  });

  it('passes over keys with nothing available, returns fewer when all run out, and a gone cursor key moves on', () => {
    expect(fairPlan(keys(['a', 0], ['b', 2], ['c', 0]), start, 5, one).take).toEqual([{key: 'b', n: 2}]);
    expect(fairPlan([], start, 5, one).take).toEqual([]);
    // The cursor's key has no due tasks any more: the next key after it takes the turn.
    expect(fairPlan(keys('a', 'c'), {key: 'b', taken: 0}, 1, one).take).toEqual([{key: 'c', n: 1}]);
    expect(fairPlan(keys('a', 'b'), {key: 'z', taken: 0}, 1, one).take).toEqual([{key: 'a', n: 1}]);
  });
});

describe('fairShares', () => {
  it("splits a claim's doorbells by weight, rounding up, at least one each", () => {
    expect(fairShares(50, ['a', 'b'], () => 1)).toEqual(
      new Map([
        ['a', 25],
        ['b', 25],
      ]),
    );
    expect(fairShares(50, ['a', 'b'], (k) => (k === 'a' ? 3 : 1))).toEqual(
      new Map([
        ['a', 38],
        ['b', 13],
      ]),
    );
    // Many keys, few doorbells: one each, so doorbells already spread over keys keep their own tasks.
    expect(
      fairShares(
        50,
        Array.from({length: 51}, (_, i) => `k${i}`),
        () => 1,
      ).get('k7'),
    ).toBe(1);
    expect(fairShares(10, ['a', 'a', 'b'], () => 1)).toEqual(
      new Map([
        ['a', 5],
        ['b', 5],
      ]),
    );
  });
});

describe('decideLimits per key', () => {
  const c = (id: string, key: string | null, prepaid: 'rate' | 'key-rate' | null = null) => ({id, key, prepaid});

  it('max running per key: a key at its cap waits in waves; other keys and keyless tasks run', () => {
    const d = decideLimits(
      [c('a1', 'a'), c('a2', 'a'), c('a3', 'a'), c('b1', 'b'), c('n1', null)],
      {maxRunningPerKey: 2},
      {running: 0, bucket: null, keys: {running: new Map([['a', 1]]), buckets: new Map()}},
      0,
    );
    expect(d.run).toEqual(['a1', 'b1', 'n1']);
    expect(d.deferred.map((x) => [x.id, x.parked, x.delayMs])).toEqual([
      ['a2', 'key-capped', 250],
      ['a3', 'key-capped', 250],
    ]);
    expect(d.deferred[0]!.reason).toMatch(/2 of its type with key "a" running/);
  });

  it('rate per key: a bucket per key; the k-th over waits k / rate; a prepaid slot takes no token', () => {
    const d = decideLimits(
      [c('a1', 'a'), c('a2', 'a'), c('a3', 'a'), c('b1', 'b'), c('a4', 'a', 'key-rate')],
      {ratePerKey: 2},
      {running: 0, bucket: null, keys: {running: new Map(), buckets: new Map([['a', {tokens: 1, atMs: 0}]])}},
      0,
    );
    expect(d.run).toEqual(['a1', 'b1', 'a4']);
    expect(d.deferred.map((x) => [x.id, x.parked, x.delayMs])).toEqual([
      ['a2', 'key-rate', 500],
      ['a3', 'key-rate', 1000],
    ]);
    expect(d.keyBuckets?.get('a')).toEqual({tokens: -2, atMs: 0});
    expect(d.keyBuckets?.get('b')).toEqual({tokens: 1, atMs: 0});
  });

  it('a key bucket is full again once its reserved slots and its burst have come back', () => {
    expect(fullAt({tokens: -2, atMs: 1000}, 2)).toBe(3000); // 4 tokens at 2/s
    expect(fullAt({tokens: 2, atMs: 1000}, 2)).toBe(1000); // full already
    expect(fullAt({tokens: 0.5, atMs: 0}, 0.5)).toBe(1000); // burst 1 at 0.5/s
  });

  it('the type cap still holds over the keys', () => {
    const d = decideLimits([c('a1', 'a'), c('b1', 'b'), c('c1', 'c')], {maxRunning: 2, maxRunningPerKey: 5}, {running: 0, bucket: null}, 0);
    expect(d.run).toEqual(['a1', 'b1']);
    expect(d.deferred.map((x) => x.parked)).toEqual(['capped']);
  });
});

describe('per-key settings', () => {
  it('merges, clears, and refuses bad values before anything changes', () => {
    const l = mergeLimits({}, {maxRunningPerKey: '2', ratePerKey: '30/m', fair: true, keyWeights: {'tenant:42': '3'}});
    expect(l).toEqual({maxRunningPerKey: 2, ratePerKey: 0.5, fair: true, keyWeights: {'tenant:42': 3}});
    expect(mergeLimits(l, {fair: false, keyWeights: {'tenant:42': 'none'}, ratePerKey: null})).toEqual({maxRunningPerKey: 2});
    const bads: LimitsInput[] = [
      {maxRunningPerKey: 0},
      {ratePerKey: '0/s'},
      {keyWeights: {'t:1': 0}},
      {keyWeights: {'t:1': 101}},
      {keyWeights: {' t': 2}},
    ];
    for (const bad of bads)
      expect(() => mergeLimits(l, bad), JSON.stringify(bad)).toThrow(expect.objectContaining({code: 'invalid_input'}));
    expect(parseKeyWeightFlags(['tenant:42=3', 'a=b=none'])).toEqual({'tenant:42': '3', 'a=b': 'none'});
    // Keys named like object properties are keys: kept, read back, never an inherited value.
    const odd = mergeLimits({}, {keyWeights: JSON.parse('{"__proto__": 3, "constructor": 2}') as Record<string, number>});
    expect(Object.entries(odd.keyWeights!)).toEqual([
      ['__proto__', 3],
      ['constructor', 2],
    ]);
    const stored = limitsOf(JSON.parse(JSON.stringify({fair: true, ...odd})) as Record<string, unknown>);
    expect([keyWeight(stored, '__proto__'), keyWeight(stored, 'constructor'), keyWeight(stored, 'toString')]).toEqual([3, 2, 1]);
    expect(keyWeight({keyWeights: {a: 2}}, 'hasOwnProperty')).toBe(1);
    expect(() => mergeLimits({}, {keyWeights: {'t:1': [3] as unknown as number}})).toThrow(/key weight/);
    expect(() => parseKeyWeightFlags(['tenant:42'])).toThrow(/KEY=WEIGHT/);
    expect(() => parseKeyWeightFlags(['=3'])).toThrow(/KEY=WEIGHT/);
  });
});
