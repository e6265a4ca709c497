/**
 * Cluster-wide limits per task type — a concurrency cap (`maxRunning`) and a rate limit (`rate`,
 * tasks per second, a token bucket) — as pure policy. The store runs `decideLimits` inside the
 * claim's transaction, with the type's registry row locked (so claims of several workers are
 * serialized per limited type), the number of its running rows and its bucket as stored, and the
 * database clock as `nowMs`; what it refuses is deferred in storage in that same transaction
 * (parked `capped` or `rate`), never held in a worker's memory.
 */
import {invalid} from '../errors.js';
import {validateTaskKey} from '../task/validate.js';

/** A type's limits as stored in its settings (task_types.settings JSON); absent: no limit. */
export interface LimitSettings {
  /** Never more than this many attempts of the type running across all workers (≥ 1). */
  maxRunning?: number;
  /** At most this many claims of the type per second across all workers (> 0). */
  rate?: number;
  /** Never more than this many attempts of the type with the same task key running (≥ 1); tasks without a key are not counted. */
  maxRunningPerKey?: number;
  /** At most this many claims per second of the type's tasks with the same key (> 0), a bucket per key. */
  ratePerKey?: number;
  /** Fair dispatch: the type's due keyed tasks are shared across keys (fair.ts). */
  fair?: true;
  /** Fair dispatch's weight per key (1–100; absent: 1): a key's turn takes up to this many tasks. */
  keyWeights?: Record<string, number>;
}

/** The stored token bucket of a rate-limited type: tokens (may be negative: reserved slots) at `atMs`. */
export interface Bucket {
  tokens: number;
  atMs: number;
}

/**
 * A task the claim may take: its id, its key (null: none), and the rate slot it already holds:
 * parked `rate` holds one of the type's bucket, `key-rate` one of its key's (reserved when it was
 * deferred), null none.
 */
export interface LimitCandidate {
  id: string;
  key?: string | null;
  prepaid: 'rate' | 'key-rate' | null;
}

export interface LimitRefusal {
  id: string;
  delayMs: number;
  parked: 'capped' | 'rate' | 'key-capped' | 'key-rate';
  reason: string;
}

export interface LimitDecision {
  run: string[];
  deferred: LimitRefusal[];
  /** The bucket to store (undefined: the type has no rate limit, leave it). */
  bucket?: Bucket;
  /** The key buckets to store (ratePerKey): those the decision used. */
  keyBuckets?: Map<string, Bucket>;
}

/** What the claim read for the per-key limits: attempts running per key, and the stored bucket per key (absent: never used). */
export interface KeyState {
  running: ReadonlyMap<string, number>;
  buckets: ReadonlyMap<string, Bucket>;
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
  const mk = settings?.maxRunningPerKey;
  if (typeof mk === 'number' && Number.isInteger(mk) && mk >= 1) out.maxRunningPerKey = mk;
  const rk = settings?.ratePerKey;
  if (typeof rk === 'number' && Number.isFinite(rk) && rk > 0) out.ratePerKey = rk;
  if (settings?.fair === true) out.fair = true;
  const w = settings?.keyWeights;
  if (w !== null && typeof w === 'object' && !Array.isArray(w)) {
    // Own properties only, written as such: a key named "__proto__" or "constructor" is a key.
    const weights = Object.entries(w as Record<string, unknown>).filter(
      ([, v]) => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= MAX_KEY_WEIGHT,
    );
    if (weights.length > 0) out.keyWeights = Object.fromEntries(weights) as Record<string, number>;
  }
  return out;
}

/** A key's fair-dispatch weight: its own entry in keyWeights, else 1 (never an inherited property). */
export function keyWeight(l: LimitSettings, key: string): number {
  const w = l.keyWeights;
  return w !== undefined && Object.hasOwn(w, key) ? w[key]! : 1;
}

/** Whether the claim must lock the type's row and run the limits step (any limit, per-key limit or fair dispatch). */
export const hasLimits = (l: LimitSettings): boolean =>
  l.maxRunning !== undefined || l.rate !== undefined || hasKeyLimits(l) || l.fair === true;

/** Whether the type has a limit per key (the claim then reads its running count and buckets per key). */
export const hasKeyLimits = (l: LimitSettings): boolean => l.maxRunningPerKey !== undefined || l.ratePerKey !== undefined;

/** The largest fair-dispatch weight of a key. */
export const MAX_KEY_WEIGHT = 100;
/** The most keys with a weight per type (they live in the type's settings row). */
export const MAX_KEY_WEIGHTS = 1000;

/** What an operator gives (CLI text or SDK values): a value, `null`/`'none'` to clear, absent to keep. */
export interface LimitsInput {
  maxRunning?: number | string | null;
  rate?: number | string | null;
  maxRunningPerKey?: number | string | null;
  ratePerKey?: number | string | null;
  /** true: fair dispatch across keys; false: off (FIFO). */
  fair?: boolean;
  /** Per key: a weight 1–100, or null/'none' to drop the key's weight (back to 1). */
  keyWeights?: Record<string, number | string | null>;
}

const NONE = (v: unknown): boolean => v === null || (typeof v === 'string' && v.trim().toLowerCase() === 'none');

/** `--max-running` (and `--max-running-per-key`): a whole number ≥ 1, or none. Throws invalid_input otherwise. */
export function parseMaxRunning(v: number | string | null, what = 'max running'): number | null {
  if (v === null || NONE(v)) return null;
  const n = typeof v === 'number' ? v : /^\s*\d+\s*$/.test(String(v)) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) throw invalid(`${what} must be a whole number >= 1 (or "none" to clear it), got "${String(v)}"`);
  return n;
}

const PER: Record<string, number> = {s: 1, sec: 1, second: 1, m: 60, min: 60, minute: 60, h: 3600, hour: 3600};

/**
 * `--rate`: tasks per second, as `N`, `N/s`, `N/m` or `N/h` (N > 0, decimals allowed), or none.
 * Returns tasks per second. Throws invalid_input for 0, a negative or malformed value, or one
 * below 1 per hour / above 1,000,000 per second.
 */
export function parseRate(v: number | string | null, what = 'rate'): number | null {
  if (v === null || NONE(v)) return null;
  let perSec: number;
  if (typeof v === 'number') perSec = v;
  else {
    const m = /^\s*(\d+(?:\.\d+)?)\s*(?:\/\s*([a-z]+))?\s*$/i.exec(v);
    const unit = m?.[2]?.toLowerCase() ?? 's';
    perSec = m && PER[unit] !== undefined ? Number(m[1]) / PER[unit] : NaN;
  }
  if (!Number.isFinite(perSec) || perSec <= 0)
    throw invalid(
      `${what} must be a positive number of tasks per time unit, e.g. 100/s or 30/m (or "none" to clear it), got "${String(v)}"`,
    );
  if (perSec < 1 / 3600 || perSec > 1_000_000) throw invalid(`${what} must be between 1/h and 1000000/s, got "${String(v)}"`);
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
  if (input.maxRunningPerKey !== undefined) {
    const m = parseMaxRunning(input.maxRunningPerKey, 'max running per key');
    if (m === null) delete out.maxRunningPerKey;
    else out.maxRunningPerKey = m;
  }
  if (input.ratePerKey !== undefined) {
    const r = parseRate(input.ratePerKey, 'rate per key');
    if (r === null) delete out.ratePerKey;
    else out.ratePerKey = r;
  }
  if (input.fair !== undefined) {
    if (typeof input.fair !== 'boolean') throw invalid(`fair must be true or false, got "${String(input.fair)}"`);
    if (input.fair) out.fair = true;
    else delete out.fair;
  }
  if (input.keyWeights !== undefined) {
    // A Map, not an object: a key named "__proto__" is a key like any other.
    const weights = new Map(Object.entries(out.keyWeights ?? {}));
    for (const [key, v] of Object.entries(input.keyWeights)) {
      validateTaskKey(key, 'a weighted key');
      const w = parseKeyWeight(v);
      if (w === null) weights.delete(key);
      else weights.set(key, w);
    }
    if (weights.size > MAX_KEY_WEIGHTS) throw invalid(`at most ${MAX_KEY_WEIGHTS} keys of a type may have a weight`);
    if (weights.size === 0) delete out.keyWeights;
    else out.keyWeights = Object.fromEntries(weights);
  }
  return out;
}

/** A key's weight: a whole number from 1 to MAX_KEY_WEIGHT, or null/'none' (back to 1). Throws invalid_input otherwise. */
export function parseKeyWeight(v: number | string | null): number | null {
  if (v === null || NONE(v)) return null;
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_KEY_WEIGHT)
    throw invalid(`a key weight must be a whole number from 1 to ${MAX_KEY_WEIGHT} (or "none" to drop it), got "${String(v)}"`);
  return n;
}

/**
 * `--key-weight KEY=W` (repeatable) as a map of key to weight text; throws invalid_input for an
 * entry without `=` or with an empty key. The values are checked by mergeLimits.
 */
export function parseKeyWeightFlags(entries: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of entries) {
    const at = e.lastIndexOf('=');
    if (at <= 0) throw invalid(`--key-weight takes KEY=WEIGHT, e.g. tenant:42=3 (or tenant:42=none), got "${e}"`);
    out[e.slice(0, at)] = e.slice(at + 1);
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

/** When a bucket is full again at `rate` (epoch ms): no slot is reserved from then on, and a missing bucket means the same. */
export function fullAt(b: Bucket, rate: number): number {
  return b.atMs + Math.ceil((Math.max(0, burstOf(rate) - b.tokens) / rate) * 1000);
}

/**
 * Decides which candidates of one type (in the order they should run) the claim takes. Per
 * candidate, in order:
 * 1. its key's cap (maxRunningPerKey; a task without a key has none): room per key = cap − running
 *    of that key; over it → deferred `key-capped` in waves of the cap (CAP_RECHECK_MS each);
 * 2. the type's cap: room = maxRunning − running; over it → deferred `capped` in waves;
 * 3. its key's rate (ratePerKey): a token from the key's bucket, unless it holds a slot of it
 *    (prepaid `key-rate`); none left → it reserves the key's next slot and is deferred `key-rate`;
 * 4. the type's rate: the same with the type's bucket (prepaid `rate`), deferred `rate`.
 * So deferred tasks come back when they may run, in order, and the rates hold across any number
 * of workers sharing the buckets. A task refused by the type's rate after taking its key's token
 * leaves that token spent: the key's rate errs low, never high.
 */
export function decideLimits(
  candidates: readonly LimitCandidate[],
  limits: LimitSettings,
  state: {running: number; bucket: Bucket | null; keys?: KeyState},
  nowMs: number,
): LimitDecision {
  const run: string[] = [];
  const deferred: LimitRefusal[] = [];
  let room = limits.maxRunning === undefined ? Infinity : Math.max(0, limits.maxRunning - state.running);
  let bucket = limits.rate === undefined ? undefined : refill(state.bucket, nowMs, limits.rate);
  let over = 0;
  const keyRunning = new Map(state.keys?.running);
  const keyOver = new Map<string, number>();
  const keyBuckets = new Map<string, Bucket>();
  const keyBucket = (key: string, rate: number): Bucket => keyBuckets.get(key) ?? refill(state.keys?.buckets.get(key) ?? null, nowMs, rate);
  for (const c of candidates) {
    const key = c.key ?? null;
    const capK = limits.maxRunningPerKey;
    if (key !== null && capK !== undefined && (keyRunning.get(key) ?? 0) >= capK) {
      const n = keyOver.get(key) ?? 0;
      keyOver.set(key, n + 1);
      deferred.push({
        id: c.id,
        delayMs: Math.min(CAP_RECHECK_MAX_MS, CAP_RECHECK_MS * (1 + Math.floor(n / capK))),
        parked: 'key-capped',
        reason: `not run: ${capK} of its type with key "${key}" running (max running per key)`,
      });
      continue;
    }
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
    const rateK = limits.ratePerKey;
    if (key !== null && rateK !== undefined && c.prepaid !== 'key-rate') {
      const b = keyBucket(key, rateK);
      const next = {tokens: b.tokens - 1, atMs: b.atMs};
      keyBuckets.set(key, next);
      if (next.tokens < 0) {
        deferred.push({
          id: c.id,
          delayMs: Math.ceil((-next.tokens / rateK) * 1000),
          parked: 'key-rate',
          reason: `not run yet: rate limit ${rateText(rateK)} per key ("${key}")`,
        });
        continue;
      }
    }
    if (bucket && c.prepaid !== 'rate') {
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
    if (key !== null) keyRunning.set(key, (keyRunning.get(key) ?? 0) + 1);
    run.push(c.id);
  }
  const out: LimitDecision = bucket ? {run, deferred, bucket} : {run, deferred};
  if (keyBuckets.size > 0) out.keyBuckets = keyBuckets;
  return out;
}
