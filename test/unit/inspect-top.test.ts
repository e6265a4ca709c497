import {describe, expect, it} from 'vitest';
import {quantileMs, slopePerS, statsDelta, failurePct} from '../../src/core/inspect/rates.js';
import {
  alertLevel,
  buildSnapshot,
  pushSample,
  submitWindow,
  type TopReading,
  type TopSample,
  HISTORY_MS,
  backlogTrendPerMin,
  staleAlert,
  unreachableSnapshot,
} from '../../src/core/inspect/top.js';
import {HISTORY_FULL_MS, HISTORY_THIN_MS, historySpanMs} from '../../src/core/inspect/top-history.js';
import {typeActivity, workerView} from '../../src/core/inspect/workers.js';
import {workerStatus} from '../../src/core/liveness.js';
import {workerRow} from '../helpers/worker-row.js';
import type {TypeCounters, WorkerRow, WorkerStatsDoc} from '../../src/core/store/types.js';
import {AxEvents} from '../../src/core/events.js';
import {
  bucketOf,
  countTypeStats,
  DURATION_BUCKETS_MS,
  emptyCounters,
  MAX_STATS_TYPES,
  OTHER_TYPE,
} from '../../src/core/worker/type-stats.js';

const counters = (o: Partial<TypeCounters> & {at?: Record<number, number>}): TypeCounters => {
  const c = {...emptyCounters(), ...o};
  for (const [i, n] of Object.entries(o.at ?? {})) c.hist[Number(i)] = n;
  delete (c as {at?: unknown}).at;
  return c;
};
const doc = (types: Record<string, TypeCounters>, heartbeatMs = 5000): WorkerStatsDoc => ({heartbeatMs, types});
const T0 = Date.parse('2026-12-01T12:00:00Z');

const row = (o: Partial<WorkerRow> = {}): WorkerRow =>
  workerRow(new Date(T0), 1000, {id: 'h:1', inFlight: 2, startedAt: new Date(T0 - 60_000), heartbeatAt: new Date(T0), ...o});

describe('per-type counters of a worker (events → heartbeat document)', () => {
  it('counts attempts by outcome and durations into the fixed buckets, releases apart', () => {
    const ev = new AxEvents();
    const ts = countTypeStats(ev, 2000);
    const base = {id: 'x', attempt: 1, fence: 1};
    ev.emit('task:succeeded', {...base, type: 'order_notify', durationMs: 3});
    ev.emit('task:succeeded', {...base, type: 'order_notify', durationMs: 7});
    ev.emit('task:failed', {...base, type: 'order_notify', durationMs: 400, error: 'e', retryDelayMs: 1});
    ev.emit('task:dead', {...base, type: 'mail_send', durationMs: 1e9, error: 'e'});
    ev.emit('task:released', {...base, type: 'mail_send', durationMs: 0, reason: 'pool full'});
    const s = ts.snapshot();
    expect(s.heartbeatMs).toBe(2000);
    expect(s.types.order_notify).toMatchObject({succeeded: 2, failed: 1, dead: 0, released: 0});
    expect(s.types.order_notify!.hist[bucketOf(3)]).toBe(1);
    expect(s.types.order_notify!.hist[bucketOf(7)]).toBe(1);
    expect(s.types.order_notify!.hist[bucketOf(400)]).toBe(1);
    expect(s.types.mail_send).toMatchObject({dead: 1, released: 1});
    expect(s.types.mail_send!.hist[DURATION_BUCKETS_MS.length]).toBe(1); // overflow bucket
    // A snapshot is a copy: later events do not change it.
    ev.emit('task:succeeded', {...base, type: 'order_notify', durationMs: 3});
    expect(s.types.order_notify!.succeeded).toBe(2);
    ts.close();
    ev.emit('task:succeeded', {...base, type: 'order_notify', durationMs: 3});
    expect(ts.snapshot().types.order_notify!.succeeded).toBe(3);
  });

  it('keeps the number of types bounded: types past MAX_STATS_TYPES count under "other"', () => {
    const ev = new AxEvents();
    const ts = countTypeStats(ev, 5000);
    for (let i = 0; i < MAX_STATS_TYPES + 5; i++) ev.emit('task:succeeded', {id: 'x', type: `t_${i}`, attempt: 1, fence: 1, durationMs: 1});
    const types = ts.snapshot().types;
    expect(Object.keys(types)).toHaveLength(MAX_STATS_TYPES + 1);
    expect(types[OTHER_TYPE]!.succeeded).toBe(5);
  });
});

describe('rates from cumulative counters', () => {
  it('a delta per type between two heartbeats', () => {
    const prev = doc({a_b: counters({succeeded: 10, failed: 1, at: {0: 11}})});
    const cur = doc({a_b: counters({succeeded: 30, failed: 3, at: {0: 20, 4: 13}}), c_d: counters({dead: 2, at: {1: 2}})});
    const d = statsDelta(prev, cur);
    expect(d.reset).toBe(false);
    expect(d.types.a_b).toMatchObject({succeeded: 20, failed: 2});
    expect(d.types.a_b!.hist.slice(0, 5)).toEqual([9, 0, 0, 0, 13]);
    expect(d.types.c_d).toMatchObject({dead: 2});
  });

  it('a worker restarted between the heartbeats (counters went down, or a type vanished) counts from zero', () => {
    const prev = doc({a_b: counters({succeeded: 500, at: {0: 500}})});
    expect(statsDelta(prev, doc({a_b: counters({succeeded: 4, at: {0: 4}})}))).toMatchObject({reset: true, types: {a_b: {succeeded: 4}}});
    expect(statsDelta(prev, doc({c_d: counters({succeeded: 1, at: {0: 1}})}))).toMatchObject({reset: true, types: {c_d: {succeeded: 1}}});
  });

  it('p95 from a histogram as histogram_quantile: linear within the bucket, the top bound for the overflow', () => {
    const h = new Array(DURATION_BUCKETS_MS.length + 1).fill(0);
    expect(quantileMs(h, 0.95)).toBeNull();
    h[bucketOf(100)] = 100; // all in (50, 100]
    expect(quantileMs(h, 0.95)).toBeCloseTo(50 + 50 * 0.95);
    h[bucketOf(8)] = 900; // 90% in (5, 10]: the 95th is in (50, 100], halfway
    expect(quantileMs(h, 0.95)).toBeCloseTo(75);
    const over = new Array(DURATION_BUCKETS_MS.length + 1).fill(0);
    over[DURATION_BUCKETS_MS.length] = 3;
    expect(quantileMs(over, 0.95)).toBe(DURATION_BUCKETS_MS[DURATION_BUCKETS_MS.length - 1]);
  });

  it('failure share and slope', () => {
    expect(failurePct(counters({}))).toBeNull();
    expect(failurePct(counters({succeeded: 6, failed: 3, dead: 1, released: 50}))).toBe(40);
    expect(slopePerS([{t: 0, v: 0}])).toBeNull();
    expect(
      slopePerS([
        {t: 0, v: 0},
        {t: 1000, v: 10},
        {t: 2000, v: 20},
      ]),
    ).toBeCloseTo(10);
  });
});

describe('worker status and rate', () => {
  it('live while the heartbeat is fresh, stale after three of its intervals, stopped when it said so', () => {
    const stats = doc({}, 1000);
    expect(workerStatus(row({stats, heartbeatAgeMs: 2900}))).toBe('live');
    expect(workerStatus(row({stats, heartbeatAgeMs: 3100}))).toBe('stale');
    expect(workerStatus(row({heartbeatAgeMs: 14_000}))).toBe('live'); // no stats: the 5 s default
    expect(workerStatus(row({heartbeatAgeMs: 16_000}))).toBe('stale');
    expect(workerStatus(row({stoppedAt: new Date(T0), heartbeatAgeMs: 0}))).toBe('stopped');
  });

  it('rate = attempts between its last two heartbeats / the time between them; none for stale workers', () => {
    const prev = {at: new Date(T0 - 5000), stats: doc({a_b: counters({succeeded: 100, at: {0: 100}})})};
    const stats = doc({a_b: counters({succeeded: 5600, failed: 50, released: 999, at: {0: 5650}})});
    const v = workerView(row({prev, stats}));
    expect(v.status).toBe('live');
    expect(v.rate).toBeCloseTo(5550 / 5);
    expect(v.scaleOut).toBe(true);
    expect(workerView(row({prev, stats, heartbeatAgeMs: 60_000}))).toMatchObject({status: 'stale', rate: null, inFlight: 0});
    expect(workerView(row({stats}))).toMatchObject({rate: null}); // one heartbeat so far
  });

  it('per-type activity adds workers up, each over its own interval', () => {
    const w1 = workerView(
      row({
        id: 'a',
        prev: {at: new Date(T0 - 2000), stats: doc({a_b: counters({})})},
        stats: doc({a_b: counters({succeeded: 20, at: {2: 20}})}),
      }),
    );
    const w2 = workerView(
      row({
        id: 'b',
        prev: {at: new Date(T0 - 4000), stats: doc({a_b: counters({})})},
        stats: doc({a_b: counters({failed: 20, at: {6: 20}})}),
      }),
    );
    const a = typeActivity([w1, w2]).get('a_b')!;
    expect(a.rate).toBeCloseTo(10 + 5);
    expect(a.window).toMatchObject({succeeded: 20, failed: 20});
    expect(failurePct(a.window)).toBe(50);
  });
});

describe('ax top: submit window, alert level, snapshot', () => {
  it('submit windows follow each other without gaps or overlaps, settled a second before the database now', () => {
    const at = new Date(T0);
    const first = submitWindow(null, at)!;
    expect(first.until.getTime()).toBe(T0 - 1000);
    expect(first.until.getTime() - first.since.getTime()).toBe(10_000);
    const next = submitWindow(first.until, new Date(T0 + 1000))!;
    expect(next.since).toEqual(first.until);
    expect(next.until.getTime()).toBe(T0);
    expect(submitWindow(next.until, new Date(T0 + 1000))).toBeNull();
    expect(submitWindow(new Date(T0 - 3_600_000), at)!.since.getTime()).toBe(T0 - 1000 - 60_000);
  });

  const series = (f: (s: number) => number, seconds = 330): TopSample[] => {
    let h: TopSample[] = [];
    for (let s = 0; s <= seconds; s += 10)
      h = pushSample(h, {t: T0 + s * 1000, backlog: f(s) + 50_000, due: f(s), submitRate: null, consumeRate: null});
    return h;
  };

  it('a flat 15k due backlog does not page; one that grows for 5 minutes is P2; above 100k is P1; delayed and running do not count', () => {
    expect(alertLevel(series(() => 15_000)).level).toBe('ok');
    expect(alertLevel(series(() => 0).map((x) => ({...x, backlog: 200_000}))).level).toBe('ok'); // as ax_backlog_tasks{state="due"}
    expect(alertLevel(series((s) => 15_000 + s * 10))).toMatchObject({level: 'P2'});
    expect(alertLevel(series((s) => 150_000 - s))).toMatchObject({level: 'P1'});
    expect(alertLevel(series((s) => 5000 + s * 10)).level).toBe('ok'); // dipped below 10k in the window
    expect(alertLevel(series((s) => 15_000 + s * 10, 120))).toMatchObject({level: 'ok', reason: expect.stringContaining('5m of history')});
    expect(alertLevel([]).level).toBe('ok');
  });

  it('the history keeps more than the P2 window: all of a run shorter than HISTORY_MS', () => {
    const h = series(() => 1, 1000);
    expect(h[h.length - 1]!.t - h[0]!.t).toBe(1_000_000);
    expect(h.length).toBe(101);
  });

  it('builds rows per type from the backlog and the live workers, and keeps the parts that failed apart', () => {
    const prev = {at: new Date(T0 - 5000), stats: doc({order_notify: counters({})})};
    const stats = doc({order_notify: counters({succeeded: 90, dead: 10, at: {3: 100}}), mail_send: counters({})});
    const reading: TopReading = {
      backlog: {
        at: new Date(T0),
        rows: [{type: 'order_notify', due: 5, delayed: 2, running: 1, dead: 4, oldestDueAt: new Date(T0 - 1500)}],
      },
      workers: [row({prev, stats}), row({id: 'h:2', heartbeatAgeMs: 99_000})],
      submitted: {count: 50, since: new Date(T0 - 11_000), until: new Date(T0 - 1000)},
      errors: null,
      flow: null,
      failures: ['errors: boom'],
    };
    const s = buildSnapshot(reading, [{t: T0, backlog: 8, due: 5, submitRate: 5, consumeRate: 20}], 'default');
    expect(s).toMatchObject({
      at: new Date(T0).toISOString(),
      workers: {live: 1, stale: 1, stopped: 0},
      submitRate: 5,
      consumeRate: 20,
      backlog: {total: 8, due: 5, delayed: 2, running: 1, dead: 4},
      flowControl: false,
      failures: ['errors: boom'],
    });
    const row0 = s.types.find((t) => t.type === 'order_notify')!;
    expect(row0).toMatchObject({due: 5, rate: 20, failurePct: 10, breaker: null, paused: null, oldestDueMs: 1500});
    expect(row0.p95Ms).toBeGreaterThan(25);
    expect(row0.p95Ms).toBeLessThanOrEqual(50);
    // A type the workers ran lately but with nothing in the tables is listed; one idle since is not.
    expect(s.types.map((t) => t.type)).toEqual(['order_notify']);
    const ran = buildSnapshot(
      {
        ...reading,
        backlog: {at: new Date(T0), rows: []},
        workers: [row({prev, stats: doc({...stats.types, mail_send: counters({succeeded: 5, at: {0: 5}})})})],
      },
      [],
      'default',
    );
    expect(ran.types.find((t) => t.type === 'mail_send')).toMatchObject({due: 0, rate: 1});
    // With the registry read: its breaker and pause; a type without a registry row is closed and running.
    const flowed = buildSnapshot(
      {
        ...reading,
        backlog: {at: new Date(T0), rows: [...reading.backlog!.rows, {...reading.backlog!.rows[0]!, type: 'mail_send'}]},
        flow: new Map([['order_notify', {breaker: 'open', paused: true, parked: 12}]]),
      },
      [],
      'default',
    );
    expect(flowed.flowControl).toBe(true);
    expect(flowed.types.map((t) => [t.type, t.breaker, t.paused, t.parked])).toEqual([
      ['mail_send', 'closed', false, 0],
      ['order_notify', 'open', true, 12],
    ]);
    // Without the registry read, parked is unknown (—), not zero.
    expect(s.types[0]!.parked).toBeNull();
    // A key that holds most of a type's backlog comes with the flow state; none otherwise.
    const keyed = buildSnapshot(
      {
        ...reading,
        flow: new Map([['order_notify', {breaker: 'closed', paused: false, parked: 0, dominant: {key: 'tenant:42', share: 0.93}}]]),
      },
      [],
      'default',
    );
    expect(keyed.types[0]!.dominantKey).toEqual({key: 'tenant:42', share: 0.93});
    expect(s.types[0]!.dominantKey).toBeNull();
  });
});

describe('ax top: the trend beside the backlog, stale data, a long history', () => {
  const sample = (s: number, backlog: number): TopSample => ({
    t: T0 + s * 1000,
    backlog,
    due: backlog,
    submitRate: null,
    consumeRate: null,
  });
  const reading = (at: number, backlog: number | null): TopReading => ({
    backlog:
      backlog === null
        ? null
        : {at: new Date(T0 + at * 1000), rows: [{type: 'a_b', due: backlog, delayed: 0, running: 0, dead: 0, oldestDueAt: null}]},
    workers: [],
    submitted: null,
    errors: null,
    flow: null,
    failures: backlog === null ? ['backlog: connect ECONNREFUSED'] : [],
  });

  it('a burst of 4k submits then a steady drain of 100/s reads as draining (↓6k/min), as the numbers beside it do', () => {
    // 30 s flat at 0, one refresh sees the burst, then 25 s of draining: the sparkline goes down.
    let h: TopSample[] = [];
    for (let s = -30; s < 0; s++) h = pushSample(h, sample(s, 0));
    for (let s = 0; s <= 25; s++) h = pushSample(h, sample(s, 4000 - s * 100));
    const snap = buildSnapshot(reading(25, 1500), h, 'default');
    expect(snap.backlog!.total).toBe(1500);
    expect(snap.backlog!.trendPerMin).toBeCloseTo(-6000);
    expect(backlogTrendPerMin(h)).toBeCloseTo(-6000);
  });

  it('a backlog that drained to zero and stays there reads as flat, not as still falling', () => {
    let h: TopSample[] = [];
    for (let s = 0; s <= 40; s++) h = pushSample(h, sample(s, 0));
    for (let s = 41; s <= 60; s++) h = pushSample(h, sample(s, 0));
    h = [...[sample(-60, 6000), sample(-30, 3000)], ...h];
    expect(backlogTrendPerMin(h)).toBe(0);
    // A steady climb reads as one; fewer than two samples: no trend.
    const climb = [0, 1, 2, 3].map((s) => sample(s, 100 + s * 10));
    expect(backlogTrendPerMin(climb)).toBeCloseTo(600);
    expect(backlogTrendPerMin([sample(0, 5)])).toBeNull();
  });

  it('a refresh that cannot read the backlog is stale since the last good read: never "ok" from old or missing data', () => {
    const h = [sample(0, 50), sample(1, 40)];
    const snap = buildSnapshot(reading(2, null), h, 'default');
    expect(snap.alert.level).toBe('stale');
    expect(snap.alert.reason).toContain(`no data since ${new Date(T0 + 1000).toISOString().slice(11, 19)} UTC`);
    expect(snap.alert.lastReadAt).toBe(new Date(T0 + 1000).toISOString());
    expect(buildSnapshot(reading(2, null), [], 'default').alert).toMatchObject({
      level: 'stale',
      reason: expect.stringContaining('not been read yet'),
    });
    expect(unreachableSnapshot('default', 'MySQL down', h).alert.level).toBe('stale');
    expect(staleAlert([])).toMatchObject({level: 'stale', lastReadAt: null});
  });

  it('keeps up to an hour of history in bounded memory: every sample of the last 6 minutes, one per 10 s before', () => {
    let h: TopSample[] = [];
    // Two hours at a 200 ms refresh.
    for (let ms = 0; ms <= 2 * 3_600_000; ms += 200)
      h = pushSample(h, {t: T0 + ms, backlog: 1, due: 1, submitRate: null, consumeRate: null});
    expect(historySpanMs(h)).toBeGreaterThan(HISTORY_MS - 20_000);
    expect(historySpanMs(h)).toBeLessThanOrEqual(HISTORY_MS);
    expect(h.length).toBeLessThan(HISTORY_FULL_MS / 200 + HISTORY_MS / HISTORY_THIN_MS + 2);
    // The alert's 5-minute window is still at full resolution.
    expect(h.filter((x) => x.t >= h[h.length - 1]!.t - 60_000).length).toBe(301);
  });
});
