/**
 * The console's overview, sampled once for every browser: a sampler reads the cell every
 * `intervalMs` (default 5 s) and keeps the last `windowMs` (default 1 h) of readings in memory, so
 * the overview answers from memory whatever the size of the tables and however many browsers poll
 * it (the web server owns one per cell: admin.overview). Each sample is three statements, each an
 * index range whose cost is the live tasks or the interval's rows, never the finished tasks:
 * - backlogByState: idx_tasks_due (cell, state, run_at, type), covering, over the live and dead
 *   states (the states now, the backlog, the oldest due task);
 * - tasksCreatedCount: idx_tasks_created (cell, created_at), covering, over the interval;
 * - transitionBuckets: idx_history_failures (to_state, at) over the interval's transitions into
 *   succeeded, failed, dead and cancelled, each task by PRIMARY (its cell).
 * Succeeded and cancelled tasks are therefore never counted over the table: the overview counts
 * those that finished within its window (`finished`). On start, the window is backfilled from the
 * same indexes (tasksCreatedBuckets, transitionBuckets), newest first, BACKFILL_SLICE_BUCKETS
 * buckets per statement (two statements per 10 minutes at the defaults), so the charts are not
 * empty after a restart; a backfill costs the window's created tasks and transitions once.
 */
import {Periodic} from '../lifecycle.js';
import {errorMessage} from '../errors.js';
import type {Logger} from '../log.js';
import type {InspectStore} from '../store/types.js';
import type {Clock} from '../time.js';
import {
  backfillSlices,
  bucketIntervals,
  countsOf,
  mergeIntervals,
  type OverviewInterval,
  type OverviewPoint,
  sampleInterval,
  seriesOf,
  totalsOf,
} from '../inspect/overview-series.js';

export type {OverviewPoint} from '../inspect/overview-series.js';

export const OVERVIEW_INTERVAL_MS = 5000;
export const OVERVIEW_WINDOW_MS = 60 * 60_000;
/** Rows younger than this are counted by the next sample (their transactions may still be committing). */
export const OVERVIEW_SETTLE_MS = 1000;
/** Buckets per backfill statement: 10 minutes of 5-second buckets. */
export const BACKFILL_SLICE_BUCKETS = 120;

export type OverviewStore = Pick<InspectStore, 'backlogByState' | 'tasksCreatedCount' | 'tasksCreatedBuckets' | 'transitionBuckets'>;

export interface OverviewSamplerOptions {
  /** The cell's store (the admin session's: opened at the first sample, kept by the session). */
  store: () => Promise<OverviewStore>;
  clock: Clock;
  logger?: Logger;
  intervalMs?: number;
  windowMs?: number;
}

export interface OverviewSnapshot {
  /** Database time of the latest successful sample (ISO); null before the first. */
  at: string | null;
  intervalMs: number;
  windowMs: number;
  /** Per-second rates of consecutive intervals, oldest first, spanning at most windowMs (see OverviewPoint). */
  series: OverviewPoint[];
  /** Tasks in each live state and dead, now (at `at`); null before the first sample. */
  states: {submitted: number; running: number; failed: number; dead: number} | null;
  /**
   * Tasks that finished within the window (transitions: a task replayed and dead again counts
   * twice), and since when they are counted (ISO: the window's start once backfilled, later
   * while the backfill runs or after it failed). Null before the first sample.
   */
  finished: {succeeded: number; dead: number; cancelled: number; since: string} | null;
  /** Due + delayed + running now; null before the first sample. */
  backlog: number | null;
  /** Age of the oldest due task (ms) at `at`; null when none is due or before the first sample. */
  oldestDueAgeMs: number | null;
  /** What the latest sample (or the backfill) could not read; the rest is from the readings before. */
  failures: string[];
}

/** One sampler of a cell's overview (see the module comment). */
export interface OverviewSampler {
  /** Samples now, then every intervalMs; backfills the window after the first sample. Idempotent. */
  start(): void;
  /** Stops sampling (and a backfill under way) and waits for the pass in progress. Idempotent. */
  stop(): Promise<void>;
  /** One sample now (after the one in progress); never rejects: a failure is in snapshot().failures. */
  sample(): Promise<void>;
  /** Reads the window before the first sample from the tables; never rejects (a failure is in failures). */
  backfill(): Promise<void>;
  /** The overview as of the latest sample, from memory. */
  snapshot(): OverviewSnapshot;
}

export function createOverviewSampler(o: OverviewSamplerOptions): OverviewSampler {
  const intervalMs = o.intervalMs ?? OVERVIEW_INTERVAL_MS;
  const windowMs = o.windowMs ?? OVERVIEW_WINDOW_MS;
  if (!(Number.isFinite(intervalMs) && intervalMs >= 1000))
    throw new RangeError(`overview: intervalMs must be at least 1000, got ${intervalMs}`);
  if (!(Number.isFinite(windowMs) && windowMs >= intervalMs))
    throw new RangeError(`overview: windowMs must be at least intervalMs (${intervalMs}), got ${windowMs}`);
  let intervals: OverviewInterval[] = [];
  let coveredUntil: number | null = null;
  let latest: Pick<OverviewSnapshot, 'at' | 'states' | 'backlog' | 'oldestDueAgeMs'> = {
    at: null,
    states: null,
    backlog: null,
    oldestDueAgeMs: null,
  };
  let failures: string[] = [];
  let backfilling: Promise<void> | null = null;
  let stopped = false;

  const readOnce = async (): Promise<void> => {
    try {
      const store = await o.store();
      const b = await store.backlogByState();
      const at = b.at.getTime();
      const win = sampleInterval(coveredUntil, at, {settleMs: OVERVIEW_SETTLE_MS, firstMs: intervalMs, maxMs: windowMs});
      const backlog = b.rows.reduce((n, r) => n + r.due + r.delayed + r.running, 0);
      const oldest = b.rows.reduce((m, r) => (r.oldestDueAt && r.oldestDueAt.getTime() < m ? r.oldestDueAt.getTime() : m), Infinity);
      if (win) {
        const p = {since: new Date(win.since), until: new Date(win.until)};
        const [created, transitions] = await Promise.all([
          store.tasksCreatedCount(p),
          store.transitionBuckets({...p, bucketMs: win.until - win.since}),
        ]);
        intervals = mergeIntervals(
          intervals,
          [{...win, from: win.since, to: win.until, backlog, ...countsOf(created, transitions)}],
          windowMs,
        );
        coveredUntil = win.until;
      }
      latest = {
        at: b.at.toISOString(),
        states: {submitted: b.states.submitted, running: b.states.running, failed: b.states.failed, dead: b.states.dead},
        backlog,
        oldestDueAgeMs: Number.isFinite(oldest) ? Math.max(0, at - oldest) : null,
      };
      failures = [];
    } catch (e) {
      // Logged when sampling starts to fail, not at every interval of an outage.
      if (!failures.some((f) => f.startsWith('sample:'))) o.logger?.warn('overview sample failed', {error: errorMessage(e)});
      failures = [`sample: ${errorMessage(e)}`];
    }
  };

  const backfill = async (): Promise<void> => {
    const first = intervals[0];
    if (!first) return;
    try {
      const store = await o.store();
      for (const slice of backfillSlices(first.to - windowMs, first.from, intervalMs, BACKFILL_SLICE_BUCKETS)) {
        if (stopped) return;
        const p = {since: new Date(slice.since), until: new Date(slice.until), bucketMs: slice.bucketMs};
        const [created, transitions] = await Promise.all([store.tasksCreatedBuckets(p), store.transitionBuckets(p)]);
        intervals = mergeIntervals(intervals, bucketIntervals(slice, created, transitions), windowMs);
      }
    } catch (e) {
      failures = [...failures, `backfill: ${errorMessage(e)}`];
      o.logger?.warn('overview backfill failed', {error: errorMessage(e)});
    }
  };

  /** Starts the backfill once there is a first interval to backfill before; resolves when it ends. */
  const backfillOnce = (): Promise<void> => {
    if (backfilling === null && intervals.length > 0) backfilling = backfill();
    return backfilling ?? Promise.resolve();
  };

  const loop = new Periodic({
    name: 'overview',
    clock: o.clock,
    everyMs: intervalMs,
    run: async () => {
      await readOnce();
      // The window before the first sample, once, beside the sampling (a pass never waits for it).
      void backfillOnce();
    },
    onError: () => undefined,
  });

  return {
    start() {
      stopped = false;
      loop.start(0);
    },
    async stop() {
      stopped = true;
      await loop.stop();
      await backfilling;
    },
    sample: () => loop.runOnce(),
    backfill: backfillOnce,
    snapshot() {
      const t = totalsOf(intervals);
      return {
        ...latest,
        intervalMs,
        windowMs,
        series: seriesOf(intervals),
        finished:
          latest.at === null || t.since === null
            ? null
            : {succeeded: t.succeeded, dead: t.dead, cancelled: t.cancelled, since: new Date(t.since).toISOString()},
        failures,
      };
    },
  };
}
