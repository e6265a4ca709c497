/**
 * Per-type counters of one worker, fed by its event stream (a subscriber, nothing in the hot path
 * but the emit the worker does anyway) and written with each heartbeat (WorkerStatsDoc). They are
 * cumulative since the worker started, so any reader gets rates from two heartbeats and adds
 * workers up; durations go into fixed buckets so percentiles add up across workers too.
 */
import type {AxEvents} from '../events.js';
import type {TypeCounters, WorkerStatsDoc} from '../store/types.js';

/** Upper bounds (ms) of the duration buckets; one more bucket counts what is above the last. */
export const DURATION_BUCKETS_MS: readonly number[] = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 300_000];

/** Types tracked by name; events of further types are counted under OTHER_TYPE (a bounded row). */
export const MAX_STATS_TYPES = 200;
export const OTHER_TYPE = 'other';

export const emptyCounters = (): TypeCounters => ({
  succeeded: 0,
  failed: 0,
  dead: 0,
  released: 0,
  hist: new Array<number>(DURATION_BUCKETS_MS.length + 1).fill(0),
});

/** The bucket of a duration: the first bound it does not exceed, else the overflow bucket. */
export function bucketOf(durationMs: number): number {
  for (let i = 0; i < DURATION_BUCKETS_MS.length; i++) if (durationMs <= DURATION_BUCKETS_MS[i]!) return i;
  return DURATION_BUCKETS_MS.length;
}

export interface TypeStats {
  /** A copy of the counters now, as the heartbeat writes them. */
  snapshot(): WorkerStatsDoc;
  /** Unsubscribes from the events. */
  close(): void;
}

/** Counts task:succeeded/failed/dead/released on `events` per type; `heartbeatMs` goes into each snapshot. */
export function countTypeStats(events: AxEvents, heartbeatMs: number): TypeStats {
  const types = new Map<string, TypeCounters>();
  const of = (type: string): TypeCounters => {
    let c = types.get(type);
    if (c) return c;
    const key = types.size >= MAX_STATS_TYPES ? OTHER_TYPE : type;
    c = types.get(key);
    if (!c) types.set(key, (c = emptyCounters()));
    return c;
  };
  const attempt = (outcome: 'succeeded' | 'failed' | 'dead') => (e: {type: string; durationMs: number}) => {
    const c = of(e.type);
    c[outcome]++;
    c.hist[bucketOf(e.durationMs)]!++;
  };
  const offs = [
    events.on('task:succeeded', attempt('succeeded')),
    events.on('task:failed', attempt('failed')),
    events.on('task:dead', attempt('dead')),
    events.on('task:released', (e) => void of(e.type).released++),
  ];
  return {
    snapshot: () => ({heartbeatMs, types: Object.fromEntries([...types].map(([t, c]) => [t, {...c, hist: [...c.hist]}]))}),
    close: () => offs.forEach((off) => off()),
  };
}
