/**
 * The overview's live series (the console's charts): counts over consecutive intervals of the
 * database's time, each interval read once (live samples, or buckets backfilled from the tables),
 * turned into per-second rates and into the counts of what finished within the window. Pure: no
 * I/O, no clock. Intervals are kept sorted and never overlap; memory is bounded by the window.
 */
import type {CreatedBucketRow, TransitionBucketRow} from '../store/types.js';

/** What happened within one interval. */
export interface OverviewCounts {
  /** Tasks created. */
  submitted: number;
  succeeded: number;
  /** Attempts that failed and will be retried (rescued leases and hand-backs of a full pool queue included). */
  failed: number;
  /** Tasks that died (their last attempt failed, or unrecoverable). */
  dead: number;
  cancelled: number;
}

/** One interval [from, to) of database time (ms) and its counts; `backlog` as read at its end, null when not read (backfilled). */
export interface OverviewInterval extends OverviewCounts {
  from: number;
  to: number;
  backlog: number | null;
}

/** One point of the charts: per-second rates over the interval that ends at `at`. */
export interface OverviewPoint {
  /** The interval's end (ISO, database time). */
  at: string;
  submitted: number;
  succeeded: number;
  /** Failed attempts per second: retried and dead together. */
  failed: number;
  /** Due + delayed + running at `at`; null for an interval backfilled from the tables (not measured then). */
  backlog: number | null;
}

const ZERO: OverviewCounts = {submitted: 0, succeeded: 0, failed: 0, dead: 0, cancelled: 0};

/**
 * `list` with `add` merged in (sorted by `from`; an interval overlapping one already kept is
 * dropped, so nothing is counted twice), then those that ended `windowMs` or more before the newest
 * end dropped.
 */
export function mergeIntervals(list: readonly OverviewInterval[], add: readonly OverviewInterval[], windowMs: number): OverviewInterval[] {
  const out = [...list];
  for (const iv of add) {
    if (iv.to <= iv.from || out.some((x) => iv.from < x.to && x.from < iv.to)) continue;
    const at = out.findIndex((x) => x.from >= iv.to);
    out.splice(at < 0 ? out.length : at, 0, iv);
  }
  const newest = out.reduce((m, x) => Math.max(m, x.to), Number.NEGATIVE_INFINITY);
  return out.filter((x) => x.to > newest - windowMs);
}

/** The counts of one interval from its rows (one bucket's transitions; its created count). */
export function countsOf(created: number, transitions: readonly Pick<TransitionBucketRow, 'state' | 'count'>[]): OverviewCounts {
  const c = {...ZERO, submitted: created};
  for (const t of transitions) c[t.state] += t.count;
  return c;
}

/**
 * The intervals of [since, until) cut into `bucketMs` buckets from `since` (the last one ends at
 * `until`), with the grouped rows of tasksCreatedBuckets and transitionBuckets over the same
 * buckets; buckets without rows count zero. Their backlog is null: it was not read then.
 */
export function bucketIntervals(
  p: {since: number; until: number; bucketMs: number},
  created: readonly CreatedBucketRow[],
  transitions: readonly TransitionBucketRow[],
): OverviewInterval[] {
  const out: OverviewInterval[] = [];
  const index = new Map<number, OverviewInterval>();
  for (let from = p.since; from < p.until; from += p.bucketMs) {
    const iv = {from, to: Math.min(from + p.bucketMs, p.until), backlog: null, ...ZERO};
    out.push(iv);
    index.set(from, iv);
  }
  for (const r of created) {
    const iv = index.get(r.at.getTime());
    if (iv) iv.submitted += r.count;
  }
  for (const r of transitions) {
    const iv = index.get(r.at.getTime());
    if (iv) iv[r.state] += r.count;
  }
  return out;
}

/** The charts' points, oldest first: each interval's counts per second. */
export function seriesOf(list: readonly OverviewInterval[]): OverviewPoint[] {
  return list.map((x) => {
    const s = (x.to - x.from) / 1000;
    return {
      at: new Date(x.to).toISOString(),
      submitted: x.submitted / s,
      succeeded: x.succeeded / s,
      failed: (x.failed + x.dead) / s,
      backlog: x.backlog,
    };
  });
}

/** The sums over the intervals, and since when they run (null: no interval yet). */
export function totalsOf(list: readonly OverviewInterval[]): OverviewCounts & {since: number | null} {
  const t = {...ZERO, since: list[0]?.from ?? null};
  for (const x of list) for (const k of Object.keys(ZERO) as Array<keyof OverviewCounts>) t[k] += x[k];
  return t;
}

/**
 * The interval a sample at database time `atMs` counts: from the end of the last one counted (or
 * `firstMs` back) to `settleMs` before `atMs` (rows whose transaction is still committing are
 * counted next time), never longer than `maxMs`. Null when it would be empty.
 */
export function sampleInterval(
  coveredUntil: number | null,
  atMs: number,
  o: {settleMs: number; firstMs: number; maxMs: number},
): {since: number; until: number} | null {
  const until = atMs - o.settleMs;
  const since = Math.max(coveredUntil ?? until - o.firstMs, until - o.maxMs);
  return until > since ? {since, until} : null;
}

/**
 * The slices a backfill of [since, until) reads, newest first: each `sliceBuckets` buckets of
 * `bucketMs` long, aligned so that bucket edges fall on `until − k·bucketMs` (the first bucket may
 * start before `since`, by less than a bucket).
 */
export function backfillSlices(
  since: number,
  until: number,
  bucketMs: number,
  sliceBuckets: number,
): Array<{since: number; until: number; bucketMs: number}> {
  const out: Array<{since: number; until: number; bucketMs: number}> = [];
  const buckets = Math.ceil((until - since) / bucketMs);
  for (let done = 0; done < buckets; done += sliceBuckets) {
    const end = until - done * bucketMs;
    out.push({since: end - Math.min(sliceBuckets, buckets - done) * bucketMs, until: end, bucketMs});
  }
  return out;
}
