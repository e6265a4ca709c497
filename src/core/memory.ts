/**
 * A worker's memory as its heartbeat reports it, and the one rule that judges it ("memory growing",
 * the design's troubleshooting row: an oversized local queue, fat payloads, or tasks that leak).
 * The worker samples its resident memory once per MEMORY_SAMPLE_EVERY_MS and writes the last
 * MEMORY_SAMPLES with each heartbeat (workers.stats, WorkerMemoryDoc), so `ax doctor` sees a
 * trend from one read of the registry; the rule is pure and takes the samples as numbers.
 */
import type {Clock} from './time.js';

/** One sample per minute: a trend over a quarter of an hour, not the noise between heartbeats. */
export const MEMORY_SAMPLE_EVERY_MS = 60_000;
/** Samples kept (and written with each heartbeat): 15 minutes. */
export const MEMORY_SAMPLES = 15;
/** The fewest samples a trend is judged from (4 minutes): a young worker is still warming up. */
export const MEMORY_MIN_SAMPLES = 5;
/** Growth below this is never "growing" (allocator and JIT noise). */
export const MEMORY_MIN_GROWTH_BYTES = 32 * 1024 * 1024;
/** Growth below this share of the first sample is never "growing". */
export const MEMORY_MIN_GROWTH_RATIO = 0.2;
/**
 * A worker above this resident memory is a problem whatever its trend: performance.md's P6 goal is
 * ≤ 300 MB with 2,000 tasks in flight, so 1 GiB means something holds far more than the pools do.
 */
export const WORKER_RSS_PROBLEM_BYTES = 1024 * 1024 * 1024;

export interface WorkerMemoryDoc {
  /** Resident set size at the heartbeat. */
  rssBytes: number;
  /** V8 heap in use at the heartbeat. */
  heapUsedBytes: number;
  /** Interval between the samples below. */
  sampleEveryMs: number;
  /** Resident memory once per sampleEveryMs, oldest first, the newest last (at most MEMORY_SAMPLES). */
  rssSamples: number[];
}

export interface MemoryUsage {
  rss: number;
  heapUsed: number;
}

/** Samples a process's memory on the injected clock; `doc()` at each heartbeat takes a sample when one is due. */
export class MemorySampler {
  private readonly samples: number[] = [];
  private lastSampleAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly clock: Clock,
    private readonly read: () => MemoryUsage = () => process.memoryUsage(),
    private readonly everyMs = MEMORY_SAMPLE_EVERY_MS,
    private readonly keep = MEMORY_SAMPLES,
  ) {}

  doc(): WorkerMemoryDoc {
    const m = this.read();
    const now = this.clock.monotonic();
    if (now - this.lastSampleAt >= this.everyMs) {
      this.samples.push(m.rss);
      if (this.samples.length > this.keep) this.samples.shift();
      this.lastSampleAt = now;
    }
    return {rssBytes: m.rss, heapUsedBytes: m.heapUsed, sampleEveryMs: this.everyMs, rssSamples: [...this.samples]};
  }
}

export type MemoryVerdict =
  {growing: false; reason: 'too few samples' | 'steady'} | {growing: true; fromBytes: number; toBytes: number; spanMs: number};

/**
 * Whether resident memory grew steadily over the samples: at least MEMORY_MIN_SAMPLES; every
 * sample of the last third above every sample of the first third (a rise that stayed, not a
 * spike); and the newest above the oldest by at least MEMORY_MIN_GROWTH_BYTES and
 * MEMORY_MIN_GROWTH_RATIO of it. A heap that is collected back down between samples is steady.
 */
export function memoryTrend(rssSamples: readonly number[], sampleEveryMs: number): MemoryVerdict {
  const n = rssSamples.length;
  if (n < MEMORY_MIN_SAMPLES) return {growing: false, reason: 'too few samples'};
  const third = Math.max(1, Math.floor(n / 3));
  const firstMax = Math.max(...rssSamples.slice(0, third));
  const lastMin = Math.min(...rssSamples.slice(n - third));
  const from = rssSamples[0]!;
  const to = rssSamples[n - 1]!;
  const grew = to - from;
  if (lastMin <= firstMax || grew < MEMORY_MIN_GROWTH_BYTES || grew < MEMORY_MIN_GROWTH_RATIO * from)
    return {growing: false, reason: 'steady'};
  return {growing: true, fromBytes: from, toBytes: to, spanMs: (n - 1) * sampleEveryMs};
}

/** A heartbeat's memory doc when it has the expected shape, else null (an older ax, or a newer or broken writer's). */
export function validMemory(m: unknown): WorkerMemoryDoc | null {
  if (m === undefined || m === null || typeof m !== 'object') return null;
  const d = m as Partial<WorkerMemoryDoc>;
  const ok =
    Number.isFinite(d.rssBytes) &&
    Number.isFinite(d.heapUsedBytes) &&
    Number.isFinite(d.sampleEveryMs) &&
    Array.isArray(d.rssSamples) &&
    d.rssSamples.every((x) => Number.isFinite(x));
  return ok ? (d as WorkerMemoryDoc) : null;
}

/** Bytes as MiB with one decimal, for messages. */
export const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
