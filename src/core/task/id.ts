import {createHash, randomFillSync} from 'node:crypto';

const HEX = Array.from({length: 256}, (_, i) => i.toString(16).padStart(2, '0'));

function format(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < 16; i++) {
    s += HEX[b[i] as number];
    if (i === 3 || i === 5 || i === 7 || i === 9) s += '-';
  }
  return s;
}

/** A source of random bytes for ids: `fill` overwrites every byte of `bytes`. */
export interface ByteSource {
  fill(bytes: Uint8Array): void;
}

/** The operating system's CSPRNG (node:crypto), the default for ids. */
export const cryptoBytes: ByteSource = {
  fill: (bytes) => {
    randomFillSync(bytes);
  },
};

/** Bits of the per-millisecond counter (RFC 9562 §6.2 method 1): rand_a (12) and the top 30 of rand_b. */
export const COUNTER_BITS = 42;
const COUNTER_MAX = 2 ** COUNTER_BITS - 1;
/** A new millisecond seeds the counter below 2^41: at least 2^41 more ids fit before it overflows. */
const SEED_BITS = COUNTER_BITS - 1;

/** The generator's state: the millisecond in the last id and that id's counter. */
export interface IdClock {
  ms: number;
  counter: number;
}

/**
 * The next (ms, counter) after `last` at wall-clock `nowMs` (pure; exported for tests). A later
 * millisecond gets a fresh random counter from `seed()`; the same or an earlier one (the clock
 * stepped back) keeps the last millisecond and counts up, so ids never go backwards; a counter
 * past its 42 bits moves the timestamp on by one millisecond and reseeds.
 */
export function nextIdClock(last: IdClock | undefined, nowMs: number, seed: () => number): IdClock {
  const ms = Math.floor(nowMs);
  if (last === undefined || ms > last.ms) return {ms, counter: seed()};
  if (last.counter < COUNTER_MAX) return {ms: last.ms, counter: last.counter + 1};
  return {ms: last.ms + 1, counter: seed()};
}

/**
 * Makes UUIDv7 task ids (RFC 9562): 48 bits of Unix milliseconds, a 42-bit counter seeded at random
 * each millisecond (§6.2 method 1), then 32 random bits. Ids from one generator are unique and
 * strictly increasing (as strings too), even within one millisecond and when the clock steps back
 * (they then carry the last millisecond until the clock catches up). Random bits come from `bytes`
 * (default: the CSPRNG), read in blocks so that an id costs no system call. Ids from different
 * processes in the same millisecond are ordered only by their random counters.
 */
export function createIdGenerator(now: () => number, bytes: ByteSource = cryptoBytes): () => string {
  const pool = new Uint8Array(256);
  let at = pool.length;
  const take = (): number => {
    if (at === pool.length) {
      bytes.fill(pool);
      at = 0;
    }
    return pool[at++] as number;
  };
  // 41 random bits: 17 high (of the counter's 18) and 24 low.
  const seed = (): number => {
    const hi = ((take() << 16) | (take() << 8) | take()) & (2 ** (SEED_BITS - 24) - 1);
    const lo = (take() << 16) | (take() << 8) | take();
    return hi * 2 ** 24 + lo;
  };
  const b = new Uint8Array(16);
  let last: IdClock | undefined;
  return () => {
    last = nextIdClock(last, now(), seed);
    const {ms, counter} = last;
    b[0] = Math.floor(ms / 2 ** 40) & 0xff;
    b[1] = Math.floor(ms / 2 ** 32) & 0xff;
    b[2] = (ms >>> 24) & 0xff;
    b[3] = (ms >>> 16) & 0xff;
    b[4] = (ms >>> 8) & 0xff;
    b[5] = ms & 0xff;
    const hi = Math.floor(counter / 2 ** 24); // 18 bits
    const lo = counter % 2 ** 24; // 24 bits
    b[6] = 0x70 | ((hi >>> 14) & 0x0f); // version 7, counter bits 41–38
    b[7] = (hi >>> 6) & 0xff;
    b[8] = 0x80 | (hi & 0x3f); // variant 10, counter bits 29–24
    b[9] = (lo >>> 16) & 0xff;
    b[10] = (lo >>> 8) & 0xff;
    b[11] = lo & 0xff;
    for (let i = 12; i < 16; i++) b[i] = take();
    return format(b);
  };
}

/** The largest millisecond a UUIDv7 holds (48 bits). */
const V7_MAX_MS = 2 ** 48 - 1;

/**
 * The first 13 characters (`xxxxxxxx-xxxx`, lower-case) of every UUIDv7 made at Unix millisecond
 * `ms` (clamped to 0 … 2^48 − 1): such ids compare as text at or above it and below the prefix of
 * `ms + 1`, so `id >= v7PrefixAt(a) AND id < v7PrefixAt(b)` holds every v7 id made in [a, b) (and
 * any other lower-case UUID that happens to start within that range).
 */
export function v7PrefixAt(ms: number): string {
  const h = Math.min(V7_MAX_MS, Math.max(0, Math.floor(ms)))
    .toString(16)
    .padStart(12, '0');
  return `${h.slice(0, 8)}-${h.slice(8)}`;
}

/**
 * The id of a task identified by a dedup key and no explicit id: a name-based UUID (version 8) of
 * the cell and key, so every producer that submits the same key gets the same id back at once.
 */
export function idFromDedupKey(cell: string, dedupKey: string): string {
  const h = createHash('sha256').update(`ax-dedup\0${cell}\0${dedupKey}`).digest();
  h[6] = ((h[6] as number) & 0x0f) | 0x80;
  h[8] = ((h[8] as number) & 0x3f) | 0x80;
  return format(h);
}

const ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function isTaskId(s: unknown): s is string {
  return typeof s === 'string' && ID_RE.test(s);
}
