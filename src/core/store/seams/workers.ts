/** The `workers` registry: heartbeats and counters of running workers (WorkerRegistryStore; on MySQL: mysql/workers.ts). */

import type {WorkerMemoryDoc} from '../../memory.js';

export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  pools: Record<string, number>;
  /** The task types it has handlers for (registered in the type registry too). */
  types?: string[];
}

/** One task type's cumulative counters in a worker, since the worker started. */
export interface TypeCounters {
  /** Attempts that ended succeeded, failed (retried later) and dead. */
  succeeded: number;
  failed: number;
  dead: number;
  /** Tasks handed back without an attempt (never started, pool full, another pool's task). */
  released: number;
  /**
   * Attempt durations (succeeded, failed, dead) per bucket of DURATION_BUCKETS_MS
   * (core/worker/type-stats.ts): `hist[i]` counts durations ≤ bucket i and above bucket i − 1; the
   * last entry counts those above every bucket. Fixed buckets, so workers' histograms add up.
   */
  hist: number[];
}

/** What a worker's heartbeat stores beside its row: its per-type counters (JSON in `workers.stats`). */
export interface WorkerStatsDoc {
  /** The worker's heartbeat interval: it is stale after a few of them without a beat. */
  heartbeatMs: number;
  /** Counters per task type (bounded: at most MAX_STATS_TYPES types, the rest under `other`). */
  types: Record<string, TypeCounters>;
  /** Its memory and the trend of its resident memory (absent from an older ax, or a malformed doc: see validMemory). */
  memory?: WorkerMemoryDoc;
  /**
   * Its wall clock against the database's, as measured at its last flow refresh (absent from an
   * older ax, or before its first read; a malformed one is ignored: see validClockOffset in
   * core/doctor/checks-env.ts). ax decides on the database's clock; this is for `ax doctor`,
   * which names the workers whose host clock is off.
   */
  clock?: ClockOffset;
}

/** A host's wall clock minus the database's, in ms (positive: ahead), known to ± errorMs. */
export interface ClockOffset {
  offsetMs: number;
  errorMs: number;
}

export interface WorkerRow extends WorkerInfo {
  inFlight: number;
  startedAt: Date;
  heartbeatAt: Date;
  /** How long ago the last heartbeat was, by the database clock (never negative). */
  heartbeatAgeMs: number;
  stoppedAt: Date | null;
  /** The counters of the last heartbeat (null: a worker that reports none, e.g. an older ax). */
  stats: WorkerStatsDoc | null;
  /** The heartbeat before it, for a rate from one read (null until the second heartbeat). */
  prev: {at: Date; stats: WorkerStatsDoc} | null;
}

export interface WorkersUpsertParams {
  info: WorkerInfo;
  inFlight: number;
  /** The worker's counters now; the row keeps the previous ones as `prev`. */
  stats?: WorkerStatsDoc;
}

export interface WorkersListParams {
  /** Only workers whose last heartbeat is at most this old (stopped or not); all when absent. */
  seenWithinMs?: number;
}

export interface WorkersStopParams {
  id: string;
}

/** The `workers` registry: heartbeats of running workers. */
export interface WorkerRegistryStore {
  /**
   * Registers a worker or records its heartbeat (now, by the database clock): the stats given
   * replace the row's, which become `prev` with the previous heartbeat time, in one statement.
   */
  workersUpsert(p: WorkersUpsertParams): Promise<void>;
  workersStop(p: WorkersStopParams): Promise<void>;
  /** The workers of the cell, latest heartbeat first (idx_workers_cell). */
  workersList(p?: WorkersListParams): Promise<WorkerRow[]>;
}
