/**
 * Rates from cumulative counters (the per-type counters workers write with each heartbeat, see
 * core/worker/type-stats.ts): deltas between two readings divided by the time between them, with
 * a restart (counters that went down) read as counting from zero. Pure: no I/O, no clock.
 */
import type {TypeCounters, WorkerStatsDoc} from '../store/types.js';
import {DURATION_BUCKETS_MS, emptyCounters} from '../worker/type-stats.js';

/** Attempts that ended (succeeded, failed, dead): what "consumed" counts. */
export const attempts = (c: TypeCounters): number => c.succeeded + c.failed + c.dead;

/** a + b, bucket by bucket (histograms of different lengths: the shorter padded with zeros). */
export function addCounters(a: TypeCounters, b: TypeCounters): TypeCounters {
  const n = Math.max(a.hist.length, b.hist.length);
  return {
    succeeded: a.succeeded + b.succeeded,
    failed: a.failed + b.failed,
    dead: a.dead + b.dead,
    released: a.released + b.released,
    hist: Array.from({length: n}, (_, i) => (a.hist[i] ?? 0) + (b.hist[i] ?? 0)),
  };
}

function minus(cur: TypeCounters, prev: TypeCounters): TypeCounters | null {
  const d: TypeCounters = {
    succeeded: cur.succeeded - prev.succeeded,
    failed: cur.failed - prev.failed,
    dead: cur.dead - prev.dead,
    released: cur.released - prev.released,
    hist: cur.hist.map((v, i) => v - (prev.hist[i] ?? 0)),
  };
  const negative = d.succeeded < 0 || d.failed < 0 || d.dead < 0 || d.released < 0 || d.hist.some((v) => v < 0);
  return negative || prev.hist.length > cur.hist.length ? null : d;
}

/**
 * What happened between two readings of one worker's counters, per type. When any counter went
 * down or a type disappeared, the worker restarted in between (same id, counters from zero): the
 * delta is then the new counters themselves and `reset` is true.
 */
export function statsDelta(prev: WorkerStatsDoc | null, cur: WorkerStatsDoc): {types: Record<string, TypeCounters>; reset: boolean} {
  if (prev === null) return {types: cur.types, reset: false};
  const out: Record<string, TypeCounters> = {};
  for (const type of Object.keys(prev.types)) if (!(type in cur.types)) return {types: cur.types, reset: true};
  for (const [type, c] of Object.entries(cur.types)) {
    const d = minus(c, prev.types[type] ?? emptyCounters());
    if (d === null) return {types: cur.types, reset: true};
    out[type] = d;
  }
  return {types: out, reset: false};
}

/**
 * The q-quantile (0 < q ≤ 1) of a histogram over DURATION_BUCKETS_MS, as Prometheus'
 * histogram_quantile computes it: linear within the bucket that holds the rank; a rank in the
 * overflow bucket gives the highest bound. Null for an empty histogram.
 */
export function quantileMs(hist: readonly number[], q: number): number | null {
  const total = hist.reduce((a, b) => a + b, 0);
  if (total <= 0) return null;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < hist.length; i++) {
    const n = hist[i] ?? 0;
    if (below + n >= rank && n > 0) {
      if (i >= DURATION_BUCKETS_MS.length) return DURATION_BUCKETS_MS[DURATION_BUCKETS_MS.length - 1]!;
      const lo = i === 0 ? 0 : DURATION_BUCKETS_MS[i - 1]!;
      const hi = DURATION_BUCKETS_MS[i]!;
      return lo + ((hi - lo) * (rank - below)) / n;
    }
    below += n;
  }
  return DURATION_BUCKETS_MS[DURATION_BUCKETS_MS.length - 1]!;
}

/** Failed and dead attempts as a percentage of all attempts; null when there were none. */
export function failurePct(c: TypeCounters): number | null {
  const n = attempts(c);
  return n === 0 ? null : (100 * (c.failed + c.dead)) / n;
}

/** Least-squares slope of (t ms, v) points, per second; null for fewer than two distinct times. */
export function slopePerS(points: ReadonlyArray<{t: number; v: number}>): number | null {
  if (points.length < 2) return null;
  const mt = points.reduce((a, p) => a + p.t, 0) / points.length;
  const mv = points.reduce((a, p) => a + p.v, 0) / points.length;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.t - mt) * (p.v - mv);
    den += (p.t - mt) ** 2;
  }
  return den === 0 ? null : (num / den) * 1000;
}
