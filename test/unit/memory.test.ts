import {describe, expect, it} from 'vitest';
import {MEMORY_SAMPLES, MemorySampler, memoryTrend} from '../../src/core/memory.js';
import {fakeClock} from '../helpers/clock.js';

const MiB = 1024 * 1024;
const m = (xs: number[]) => xs.map((x) => x * MiB);

describe('memoryTrend', () => {
  it('a steady rise over enough samples is growing, with where it went from and to', () => {
    expect(memoryTrend(m([100, 110, 121, 133, 146, 160]), 60_000)).toEqual({
      growing: true,
      fromBytes: 100 * MiB,
      toBytes: 160 * MiB,
      spanMs: 300_000,
    });
  });

  it('fewer than five samples are not judged', () => {
    expect(memoryTrend(m([100, 200, 300, 400]), 60_000)).toEqual({growing: false, reason: 'too few samples'});
  });

  it('noise, a spike that went away, and growth that is small in bytes or share are steady', () => {
    expect(memoryTrend(m([120, 131, 118, 126, 133, 121]), 60_000).growing).toBe(false);
    expect(memoryTrend(m([100, 100, 400, 100, 100, 100]), 60_000).growing).toBe(false);
    // +25 MiB: under the 32 MiB floor though +25 %.
    expect(memoryTrend(m([100, 105, 110, 115, 120, 125]), 60_000).growing).toBe(false);
    // +40 MiB on 1 GiB: under 20 %.
    expect(memoryTrend(m([1000, 1010, 1020, 1030, 1040]), 60_000).growing).toBe(false);
    // Rose, then fell back below the first third's peak.
    expect(memoryTrend(m([100, 180, 120, 130, 140, 150]), 60_000).growing).toBe(false);
  });
});

describe('MemorySampler', () => {
  it('keeps one sample per interval on the clock, at most MEMORY_SAMPLES, and reports the current reading each time', () => {
    const clock = fakeClock(0);
    let rss = 100;
    const s = new MemorySampler(clock, () => ({rss, heapUsed: rss / 2}), 60_000);
    expect(s.doc()).toEqual({rssBytes: 100, heapUsedBytes: 50, sampleEveryMs: 60_000, rssSamples: [100]});
    rss = 150;
    clock.advance(5000);
    // A heartbeat between samples: the reading is current, the samples unchanged.
    expect(s.doc()).toMatchObject({rssBytes: 150, rssSamples: [100]});
    for (let i = 0; i < MEMORY_SAMPLES + 3; i++) {
      clock.advance(60_000);
      rss = 200 + i;
      s.doc();
    }
    const d = s.doc();
    expect(d.rssSamples).toHaveLength(MEMORY_SAMPLES);
    expect(d.rssSamples.at(-1)).toBe(200 + MEMORY_SAMPLES + 2);
    expect(d.rssSamples[0]).toBe(203);
  });
});
