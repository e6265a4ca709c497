/**
 * Cluster-wide limits per task type — a concurrency cap (`maxRunning`) and a rate limit (`rate`,
 * tasks per second, a token bucket) — as pure policy. The store runs `decideLimits` inside the
 * claim's transaction, with the type's registry row locked (so claims of several workers are
 * serialized per limited type), the number of its running rows and its bucket as stored, and the
 * database clock as `nowMs`; what it refuses is deferred in storage in that same transaction
 * (parked `capped` or `rate`), never held in a worker's memory.
 */
import {invalid} from '../errors.js';

/** A type's limits as stored in its settings (task_types.settings JSON); absent: no limit. */
export interface LimitSettings {
  /** Never more than this many attempts of the type running across all workers (≥ 1). */
  maxRunning?: number;
  /** At most this many claims of the type per second across all workers (> 0). */
  rate?: number;
}

/** The stored token bucket of a rate-limited type: tokens (may be negative: reserved slots) at `atMs`. */
export interface Bucket {
  tokens: number;
  atMs: number;
}

/** A task the claim may take: its id, and whether it already holds a reserved rate slot (parked `rate`). */
export interface LimitCandidate {
  id: string;
  prepaid: boolean;
}

export interface LimitRefusal {
  id: string;
  delayMs: number;
  parked: 'capped' | 'rate';
  reason: string;
}

export interface LimitDecision {
  run: string[];
  deferred: LimitRefusal[];
  /** The bucket to store (undefined: the type has no rate limit, leave it). */
  bucket?: Bucket;
}

/**
 * A task over the cap is looked at again after this long, in waves: the i-th refused task of a
 * claim waits CAP_RECHECK_MS × (1 + ⌊i / maxRunning⌋), at most CAP_RECHECK_MAX_MS, so a large
 * backlog comes back a cap's worth at a time instead of all at once.
 */
export const CAP_RECHECK_MS = 250;
export const CAP_RECHECK_MAX_MS = 30_000;

/** The bucket holds at most one second of tokens (at least 1): the largest burst after a quiet spell. */
export const burstOf = (rate: number): number => Math.max(1, rate);

/** The limits in a type's settings object (ignoring values that are not valid: they were never stored by ax). */
export function limitsOf(settings: Record<string, unknown> | undefined): LimitSettings {
  const out: LimitSettings = {};
  const m = settings?.maxRunning;
  if (typeof m === 'number' && Number.isInteger(m) && m >= 1) out.maxRunning = m;
  const r = settings?.rate;
  if (typeof r === 'number' && Number.isFinite(r) && r > 0) out.rate = r;
  return out;
}

export const hasLimits = (l: LimitSettings): boolean => l.maxRunning !== undefined || l.rate !== undefined;

/** What an operator gives (CLI text or SDK values): a value, `null`/`'none'` to clear, absent to keep. */
export interface LimitsInput {
  maxRunning?: number | string | null;
  rate?: number | string | null;
}

const NONE = (v: unknown): boolean => v === null || (typeof v === 'string' && v.trim().toLowerCase() === 'none');

/** `--max-running`: a whole number ≥ 1, or none. Throws invalid_input otherwise. */
export function parseMaxRunning(v: number | string | null): number | null {
  if (v === null || NONE(v)) return null;
  const n = typeof v === 'number' ? v : /^\s*\d+\s*$/.test(String(v)) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < 1)
    throw invalid(`max running must be a whole number >= 1 (or "none" to clear it), got "${String(v)}"`);
  return n;
}

const PER: Record<string, number> = {s: 1, sec: 1, second: 1, m: 60, min: 60, minute: 60, h: 3600, hour: 3600};

/**
 * `--rate`: tasks per second, as `N`, `N/s`, `N/m` or `N/h` (N > 0, decimals allowed), or none.
 * Returns tasks per second. Throws invalid_input for 0, a negative or malformed value, or one
 * below 1 per hour / above 1,000,000 per second.
 */
export function parseRate(v: number | string | null): number | null {
  if (v === null || NONE(v)) return null;
  let perSec: number;
  if (typeof v === 'number') perSec = v;
  else {
    const m = /^\s*(\d+(?:\.\d+)?)\s*(?:\/\s*([a-z]+))?\s*$/i.exec(v);
    const unit = m?.[2]?.toLowerCase() ?? 's';
    perSec = m && PER[unit] !== undefined ? Number(m[1]) / PER[unit] : NaN;
  }
  if (!Number.isFinite(perSec) || perSec <= 0)
    throw invalid(`rate must be a positive number of tasks per time unit, e.g. 100/s or 30/m (or "none" to clear it), got "${String(v)}"`);
  if (perSec < 1 / 3600 || perSec > 1_000_000) throw invalid(`rate must be between 1/h and 1000000/s, got "${String(v)}"`);
  return perSec;
}

/** The limits after applying `input` to `current`; every value checked before anything changes. */
export function mergeLimits(current: LimitSettings, input: LimitsInput): LimitSettings {
  const out: LimitSettings = {...current};
  if (input.maxRunning !== undefined) {
    const m = parseMaxRunning(input.maxRunning);
    if (m === null) delete out.maxRunning;
    else out.maxRunning = m;
  }
  if (input.rate !== undefined) {
    const r = parseRate(input.rate);
    if (r === null) delete out.rate;
    else out.rate = r;
  }
  return out;
}

/** A rate as people read it: 100/s, 30/m, 2/h. */
export function rateText(perSec: number): string {
  if (perSec >= 1) return `${+perSec.toFixed(3)}/s`;
  if (perSec * 60 >= 1) return `${+(perSec * 60).toFixed(3)}/m`;
  return `${+(perSec * 3600).toFixed(3)}/h`;
}

/** The bucket refilled to `nowMs` (full when never used; a clock step back adds nothing). */
export function refill(b: Bucket | null, nowMs: number, rate: number): Bucket {
  const burst = burstOf(rate);
  if (!b) return {tokens: burst, atMs: nowMs};
  const elapsed = Math.max(0, nowMs - b.atMs);
  return {tokens: Math.min(burst, b.tokens + (elapsed * rate) / 1000), atMs: Math.max(nowMs, b.atMs)};
}

/**
 * Decides which candidates of one type (in the order they should run) the claim takes. The cap
 * first: room = maxRunning − running; those beyond it are deferred `capped` in waves (see
 * CAP_RECHECK_MS). Then the rate: a prepaid candidate (its slot was reserved when it was
 * deferred) runs without a token; any other takes one token, and when the bucket has none it
 * reserves the next slot — the bucket goes below zero — and is deferred `rate` until that slot:
 * the k-th task over the limit waits k / rate. So deferred tasks come back exactly when they may
 * run, in order, and the rate holds across any number of workers sharing the bucket.
 */
export function decideLimits(
  candidates: readonly LimitCandidate[],
  limits: LimitSettings,
  state: {running: number; bucket: Bucket | null},
  nowMs: number,
): LimitDecision {
  const run: string[] = [];
  const deferred: LimitRefusal[] = [];
  let room = limits.maxRunning === undefined ? Infinity : Math.max(0, limits.maxRunning - state.running);
  let bucket = limits.rate === undefined ? undefined : refill(state.bucket, nowMs, limits.rate);
  let over = 0;
  for (const c of candidates) {
    if (room <= 0) {
      const waves = 1 + Math.floor(over++ / limits.maxRunning!);
      deferred.push({
        id: c.id,
        delayMs: Math.min(CAP_RECHECK_MAX_MS, CAP_RECHECK_MS * waves),
        parked: 'capped',
        reason: `not run: ${limits.maxRunning} of its type running (max running)`,
      });
      continue;
    }
    if (bucket && !c.prepaid) {
      bucket = {tokens: bucket.tokens - 1, atMs: bucket.atMs};
      if (bucket.tokens < 0) {
        deferred.push({
          id: c.id,
          delayMs: Math.ceil((-bucket.tokens / limits.rate!) * 1000),
          parked: 'rate',
          reason: `not run yet: rate limit ${rateText(limits.rate!)}`,
        });
        continue;
      }
    }
    room--;
    run.push(c.id);
  }
  return bucket ? {run, deferred, bucket} : {run, deferred};
}
