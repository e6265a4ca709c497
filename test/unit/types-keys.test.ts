/**
 * Task keys as operators see them (core/types/keys.ts): the dominant key of a type's backlog, its
 * thresholds, and the sentence `ax doctor` names it with.
 */
import {describe, expect, it} from 'vitest';
import {DOMINANT_MIN_BACKLOG, dominantAdvice, dominantKey, dominantText, keysView, sharePct} from '../../src/core/types/keys.js';

const k = (key: string, backlog: number, running = 0) => ({key, backlog, running});

describe('dominantKey', () => {
  it('is the key with the most backlog when it holds at least half of the type’s backlog, keyless tasks counted', () => {
    expect(dominantKey(1000, [k('tenant:42', 930), k('tenant:7', 50)])).toEqual({key: 'tenant:42', share: 0.93, backlog: 930, of: 1000});
    expect(dominantKey(1000, [k('tenant:42', 500)])).toMatchObject({key: 'tenant:42', share: 0.5});
    // Half of the keyed backlog, but keyless tasks make the rest of the type's.
    expect(dominantKey(1000, [k('tenant:42', 499), k('tenant:7', 1)])).toBeNull();
  });

  it('needs a backlog of DOMINANT_MIN_BACKLOG: a few tasks of one tenant are no imbalance', () => {
    expect(dominantKey(DOMINANT_MIN_BACKLOG - 1, [k('a', DOMINANT_MIN_BACKLOG - 1)])).toBeNull();
    expect(dominantKey(DOMINANT_MIN_BACKLOG, [k('a', DOMINANT_MIN_BACKLOG)])).toMatchObject({key: 'a', share: 1});
  });

  it('takes the most backlog wherever it is in the list, and none when no key has backlog', () => {
    expect(dominantKey(300, [k('r', 0, 9), k('b', 200)])).toMatchObject({key: 'b'});
    expect(dominantKey(300, [k('r', 0, 9)])).toBeNull();
    expect(dominantKey(300, [])).toBeNull();
  });

  it('never gives a share above 1 when the counts come from reads a moment apart', () => {
    expect(dominantKey(150, [k('a', 160)])).toEqual({key: 'a', share: 1, backlog: 160, of: 160});
  });
});

describe('keysView', () => {
  it('carries the totals and the top list, with the dominant key', () => {
    const v = keysView({backlog: 960, withBacklog: 3, running: 4, withRunning: 2, top: [k('a', 900, 3), k('b', 50, 1), k('c', 10)]}, 1000);
    expect(v).toEqual({
      withBacklog: 3,
      backlog: 960,
      withRunning: 2,
      running: 4,
      top: [k('a', 900, 3), k('b', 50, 1), k('c', 10)],
      dominant: {key: 'a', share: 0.9, backlog: 900, of: 1000},
      indexed: true,
    });
    expect(keysView({indexed: false, backlog: 0, withBacklog: 0, running: 0, withRunning: 0, top: []}, 1000).indexed).toBe(false);
  });
});

describe('texts', () => {
  it('says the share in whole percent, 100 only when it is all', () => {
    expect(sharePct(0.934)).toBe('93 %');
    expect(sharePct(0.999)).toBe('99 %');
    expect(sharePct(1)).toBe('100 %');
  });

  it('names the key, the share, the type and its backlog', () => {
    expect(dominantText('order_notify', {key: 'tenant:42', share: 0.93, backlog: 111_600, of: 120_000})).toBe(
      "key tenant:42 holds 93 % of order_notify's backlog of 120,000",
    );
  });

  it('advises fair dispatch or a per-key limit unless one is on', () => {
    expect(dominantAdvice({})).toBe('consider --fair or --max-running-per-key');
    expect(dominantAdvice({fair: true})).toBeNull();
    expect(dominantAdvice({maxRunningPerKey: 2})).toBeNull();
    expect(dominantAdvice({ratePerKey: 5, maxRunningPerKey: null, fair: false})).toBeNull();
  });
});
