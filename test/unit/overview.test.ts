/**
 * The overview sampler on a fake clock and a fake store whose database clock is the fake clock:
 * consecutive samples count consecutive intervals (nothing twice, nothing missed, an outage
 * included), the window is backfilled in a few grouped reads, and the snapshot's rates and window
 * counts follow from them. Plus the pure series functions.
 */
import {describe, expect, it, vi} from 'vitest';
import {createOverviewSampler, type OverviewStore} from '../../src/core/admin/overview.js';
import {
  backfillSlices,
  bucketIntervals,
  mergeIntervals,
  type OverviewInterval,
  sampleInterval,
  seriesOf,
} from '../../src/core/inspect/overview-series.js';
import type {BucketParams, TransitionBucketRow} from '../../src/core/store/types.js';
import {fakeClock} from '../helpers/clock.js';

const T0 = Date.parse('2026-12-01T12:00:00Z');
const iv = (from: number, to: number, n = 0): OverviewInterval => ({
  from,
  to,
  submitted: n,
  succeeded: 0,
  failed: 0,
  dead: 0,
  cancelled: 0,
  backlog: null,
});

describe('overview series (pure)', () => {
  it('merges intervals in order, drops one that overlaps what is kept, and keeps only the window', () => {
    let l = mergeIntervals([], [iv(10, 20, 1)], 100);
    l = mergeIntervals(l, [iv(0, 10, 2), iv(5, 15, 9), iv(30, 40, 3)], 100);
    expect(l.map((x) => [x.from, x.submitted])).toEqual([
      [0, 2],
      [10, 1],
      [30, 3],
    ]);
    expect(mergeIntervals(l, [iv(40, 115)], 100).map((x) => x.from)).toEqual([10, 30, 40]);
  });

  it('cuts a backfill into buckets with zero for the empty ones, the last bucket ending at until', () => {
    const at = (ms: number) => new Date(ms);
    const t: TransitionBucketRow[] = [
      {at: at(1000), state: 'succeeded', count: 4},
      {at: at(1000), state: 'dead', count: 1},
    ];
    const got = bucketIntervals({since: 0, until: 2500, bucketMs: 1000}, [{at: at(0), count: 7}], t);
    expect(got.map((x) => [x.from, x.to, x.submitted, x.succeeded, x.dead, x.backlog])).toEqual([
      [0, 1000, 7, 0, 0, null],
      [1000, 2000, 0, 4, 1, null],
      [2000, 2500, 0, 0, 0, null],
    ]);
    // Rates per second; failed is retried and dead together.
    expect(seriesOf(got)[1]).toEqual({at: new Date(2000).toISOString(), submitted: 0, succeeded: 4, failed: 1, backlog: null});
    expect(seriesOf(got)[2]!.at).toBe(new Date(2500).toISOString());
  });

  it('a sample counts from the last one to a second before now, at most the window', () => {
    const o = {settleMs: 1000, firstMs: 5000, maxMs: 60_000};
    expect(sampleInterval(null, 100_000, o)).toEqual({since: 94_000, until: 99_000});
    expect(sampleInterval(99_000, 104_000, o)).toEqual({since: 99_000, until: 103_000});
    expect(sampleInterval(10_000, 104_000, o)).toEqual({since: 43_000, until: 103_000});
    expect(sampleInterval(103_000, 103_500, o)).toBeNull();
  });

  it('backfill slices: newest first, bucket edges on until − k·bucket, the oldest slice shorter', () => {
    expect(backfillSlices(1000, 26_000, 5000, 2)).toEqual([
      {since: 16_000, until: 26_000, bucketMs: 5000},
      {since: 6000, until: 16_000, bucketMs: 5000},
      {since: 1000, until: 6000, bucketMs: 5000},
    ]);
    expect(backfillSlices(2000, 26_000, 5000, 10)).toEqual([{since: 1000, until: 26_000, bucketMs: 5000}]);
  });
});

/** A store that created 2 tasks/s, and per second finished 1 (succeeded) and failed 0.5 (retried) since ever. */
function fakeStore(clock: {now(): number}, o: {backlog?: () => number} = {}) {
  const rows = (p: BucketParams): TransitionBucketRow[] => {
    const out: TransitionBucketRow[] = [];
    for (let b = p.since.getTime(); b < p.until.getTime(); b += p.bucketMs) {
      const s = (Math.min(b + p.bucketMs, p.until.getTime()) - b) / 1000;
      out.push({at: new Date(b), state: 'succeeded', count: s}, {at: new Date(b), state: 'failed', count: s / 2});
    }
    return out;
  };
  const store = {
    backlogByState: vi.fn(async () => {
      const n = o.backlog?.() ?? 7;
      return {
        at: new Date(clock.now()),
        states: {submitted: n - 2, failed: 0, running: 2, dead: 4},
        rows: [{type: 'order_notify', due: n - 3, delayed: 1, running: 2, dead: 4, oldestDueAt: new Date(clock.now() - 30_000)}],
      };
    }),
    tasksCreatedCount: vi.fn(async (p: {since: Date; until: Date}) => ((p.until.getTime() - p.since.getTime()) / 1000) * 2),
    tasksCreatedBuckets: vi.fn(async (p: BucketParams) =>
      rows(p).flatMap((r) => (r.state === 'succeeded' ? [{at: r.at, count: r.count * 2}] : [])),
    ),
    transitionBuckets: vi.fn(async (p: BucketParams) => rows(p)),
  } satisfies OverviewStore;
  return store;
}

describe('overview sampler', () => {
  it('samples at once and every interval, each interval once; backfills the window in slices after the first sample', async () => {
    const clock = fakeClock(T0);
    const store = fakeStore(clock);
    const s = createOverviewSampler({store: async () => store, clock, intervalMs: 5000, windowMs: 60_000});
    expect(s.snapshot()).toMatchObject({at: null, states: null, finished: null, series: [], backlog: null});
    s.start();
    await clock.advanceAsync(0);
    await s.backfill();
    // The first sample: [now − 6 s, now − 1 s); the backfill: the rest of the minute before it, in buckets of 5 s, one slice.
    expect(store.tasksCreatedCount).toHaveBeenCalledWith({since: new Date(T0 - 6000), until: new Date(T0 - 1000)});
    expect(store.transitionBuckets).toHaveBeenCalledTimes(2);
    expect(store.transitionBuckets.mock.calls[1]![0]).toEqual({since: new Date(T0 - 61_000), until: new Date(T0 - 6000), bucketMs: 5000});
    await clock.advanceAsync(5000);
    await clock.advanceAsync(5000);
    expect(store.tasksCreatedCount.mock.calls.map(([p]) => [p.since.getTime() - T0, p.until.getTime() - T0])).toEqual([
      [-6000, -1000],
      [-1000, 4000],
      [4000, 9000],
    ]);
    const snap = s.snapshot();
    expect(snap.at).toBe(new Date(T0 + 10_000).toISOString());
    expect(snap.states).toEqual({submitted: 5, running: 2, failed: 0, dead: 4});
    expect(snap.backlog).toBe(7);
    expect(snap.oldestDueAgeMs).toBe(30_000);
    // Contiguous 5 s points over the last minute, oldest first, each at the rates the store made.
    expect(snap.series.length).toBe(12);
    expect(snap.series.at(-1)).toEqual({at: new Date(T0 + 9000).toISOString(), submitted: 2, succeeded: 1, failed: 0.5, backlog: 7});
    expect(snap.series[0]).toMatchObject({submitted: 2, succeeded: 1, failed: 0.5, backlog: null});
    for (let i = 1; i < snap.series.length; i++) expect(Date.parse(snap.series[i]!.at) - Date.parse(snap.series[i - 1]!.at)).toBe(5000);
    // What finished within the window: 1/s succeeded over the 60 s the intervals span.
    expect(snap.finished).toEqual({succeeded: 60, dead: 0, cancelled: 0, since: new Date(T0 - 51_000).toISOString()});
    await s.stop();
    expect(clock.pending()).toBe(0);
    await clock.advanceAsync(20_000);
    expect(store.backlogByState).toHaveBeenCalledTimes(3);
  });

  it('an outage keeps the last readings and says so; the next sample counts the whole gap once', async () => {
    const clock = fakeClock(T0);
    const store = fakeStore(clock);
    let down = false;
    const s = createOverviewSampler({
      store: async () => {
        if (down) throw new Error('connect ECONNREFUSED');
        return store;
      },
      clock,
      windowMs: 3_600_000,
    });
    await s.sample();
    down = true;
    await clock.advanceAsync(20_000);
    await s.sample();
    expect(s.snapshot()).toMatchObject({at: new Date(T0).toISOString(), failures: ['sample: connect ECONNREFUSED']});
    down = false;
    await s.sample();
    expect(s.snapshot().failures).toEqual([]);
    const calls = store.tasksCreatedCount.mock.calls.map(([p]) => [p.since.getTime() - T0, p.until.getTime() - T0]);
    expect(calls).toEqual([
      [-6000, -1000],
      [-1000, 19_000],
    ]);
    expect(s.snapshot().series.at(-1)).toMatchObject({submitted: 2, succeeded: 1});
  });

  it('refuses an interval under a second or a window shorter than it', () => {
    const clock = fakeClock(T0);
    const store = async () => fakeStore(clock);
    expect(() => createOverviewSampler({store, clock, intervalMs: 10})).toThrow(RangeError);
    expect(() => createOverviewSampler({store, clock, intervalMs: 5000, windowMs: 1000})).toThrow(RangeError);
  });
});
