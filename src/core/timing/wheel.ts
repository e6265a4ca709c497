/**
 * A hashed timing wheel: the scheduler's in-memory cache of tasks due within a short horizon
 * (architecture.md, data flow step 3). Pure and clock-free: every time is an abstract millisecond
 * number supplied by the caller (in ax, the estimate of the database clock), so the wheel never
 * reads a clock, never sets a timer, and is deterministic under test.
 *
 * ## Contract
 *
 * - `advance(t)` returns EXACTLY the pending entries whose `dueMs <= t`, each once, ordered by
 *   `dueMs` and, for equal `dueMs`, by the order of their (last) `schedule` call. It never returns
 *   an entry before its due time, whatever `t` is, and never misses one whose due time has come.
 * - The wheel has a time, `now`: `startMs` at first, then the largest `t` passed to `advance`.
 *   Time only moves forward. If `advance(t)` gets `t < now` (the clock went backwards), the cursor
 *   does not move back and nothing inside the wheel changes. By the rule above, that call still
 *   returns the entries that were scheduled in the past since the last advance and have
 *   `due <= t`. Later forward advances are unaffected.
 * - `schedule(id, due)` with `due <= now` ("already due") is accepted: the entry fires at the next
 *   `advance(t)` with `t >= due` (normally the very next advance).
 * - Invalid input (non-finite times, times more than 2^50 ticks from `startMs`, bad options)
 *   throws a `RangeError`, and the wheel is left unchanged.
 *
 * ## Layout and choices
 *
 * Time is cut into ticks of `tickMs`, counted from `startMs`. Tick (bucket) `k` covers
 * `[startMs + k·tickMs, startMs + (k+1)·tickMs)`. The cursor is the bucket that contains `now`.
 *
 * - Slots: `slots` circular doubly-linked lists, each with a sentinel. The lists are intrusive:
 *   the links live in the entry, so unlinking is O(1) and no per-slot array has to grow or shrink.
 *   Slot `k mod slots` holds the entries of bucket `k` while `k` is in the window
 *   `[cursor, cursor + slots)`. So a slot always holds exactly ONE bucket, and there is no
 *   "rounds" counter to decrement or skip over.
 * - Mid-tick dues: firing is exact, not rounded to ticks. Buckets before the cursor's bucket fire
 *   whole, since all their dues are < t. The bucket that contains `t` is scanned, and only entries
 *   with `due <= t` fire; the rest stay. So with 100 ms ticks, an entry due at 1050 is not
 *   returned by `advance(1000)` but is returned by `advance(1050)`. The price: an advance that
 *   lands mid-tick scans the current slot. A caller that advances on tick boundaries, or to
 *   `nextDueMs()`, pays this about once per tick.
 * - Overflow beyond one rotation: a second, coarser level keyed by CHUNK. A chunk is
 *   `C = floor(slots / 2)` consecutive buckets. The wheel holds the cursor's chunk and the next
 *   one; later entries wait in a `Map<chunk, intrusive list>`. Both `schedule` and `cancel` stay
 *   O(1) for every due time. There is no lazy deletion, no heap, and no per-rotation revisiting
 *   as in the classic rounds wheel.
 *   The chunk after the cursor's chunk is "migrating": while the cursor crosses its own chunk,
 *   each advance moves about `remaining / ticks left` of the next chunk's entries into their
 *   slots. Whatever is left moves when the cursor enters that chunk. Each entry is migrated once,
 *   at O(1) cost. (It is a two-level hierarchical wheel whose upper level is unbounded.)
 * - Clock jumps: if `t` lies beyond the two loaded chunks, `advance` does not walk tick by tick.
 *   Every loaded entry is due, so the slots are emptied in one pass of at most `slots` visits.
 *   Each non-empty chunk in between fires whole: it is sorted, or, if dense (≥ 4·C entries),
 *   distributed into the empty slots (a counting sort). Then the target chunk is loaded and
 *   stepped to `t`, which takes fewer than C ticks. Empty chunks cost nothing, so a jump of a
 *   year costs the same as a jump of an hour.
 * - Ready list: entries scheduled at or before `now` go to an extra list, fired by the next advance.
 *
 * ## Complexity (n pending, S = slots, C = floor(S/2), E = non-empty chunks beyond the wheel)
 *
 * | operation | cost |
 * | --- | --- |
 * | `schedule` (any due, including a move of an existing id), `cancel`, `has`, `size` | O(1) |
 * | `advance` by m ticks inside the loaded window (m < 2C ≤ S) | O(m + fired + current-slot scan + migrated) |
 * | `advance` beyond the loaded window (a jump) | O(S + E log E + fired·log(chunk size) + C) |
 * | `nextDueMs` | O(ready + S + one slot), or O(E) from the overflow; see its doc |
 * | `clear` | O(S) |
 *
 * A tick's cost is the entries of its slot plus the migration share of the next chunk
 * (≈ that chunk's entries / C), never all entries. The output is sorted per bucket or per chunk,
 * and those groups come out in time order, so the whole result is ordered.
 *
 * ## Memory
 *
 * Each pending entry costs one object (id, due, value, order, location, prev, next) plus
 * one entry in a `Map<id, entry>`. Each non-empty overflow chunk adds a small header. See
 * bench/wheel.js for the measured bytes per pending timer. Ids and values are held by reference,
 * not copied, and are released on fire and on cancel.
 *
 * Not thread-safe (single event loop, as everywhere in ax); no callbacks are ever invoked.
 */

/** Options of a {@link TimingWheel}. */
export interface TimingWheelOptions {
  /** Number of slots; one rotation is `slots × tickMs`. Integer ≥ 2. Default 1024. */
  slots?: number;
  /** Width of one tick in ms (finite and > 0; need not be an integer). Default 100. */
  tickMs?: number;
  /** The wheel's initial time, in ms on the caller's clock (e.g. the database clock estimate). */
  startMs: number;
}

/** An entry returned by {@link TimingWheel.advance}. */
export interface FiredTimer<T> {
  readonly id: string;
  readonly dueMs: number;
  /** The value passed to the last `schedule` of this id (undefined if none was passed). */
  readonly value: T | undefined;
}

/** Internal counters, for tests and diagnostics (monotonic since construction). */
export interface TimingWheelStats {
  /** Slots visited one by one by `advance` (stepping, bulk emptying, dense-chunk distribution). */
  slotVisits: number;
  /** Advances beyond the loaded window, handled in bulk. */
  bulkJumps: number;
  /** Entries moved from an overflow chunk into a slot. */
  migrated: number;
}

/** Location codes of an entry, besides a slot index (0..slots-1) or the ready list (slots). */
const OVERFLOW = -1;
const DETACHED = -2;
/** Times must be within this many ticks of startMs, so bucket arithmetic stays exact. */
const MAX_TICKS = 2 ** 50;
/** A chunk fired by a jump is distributed into slots instead of sorted from this many entries per bucket. */
const DENSE_FACTOR = 4;

class Entry<T> {
  id: string;
  due: number;
  value: T | undefined;
  /** Schedule order (tie-break for equal dues). The bucket is not stored but recomputed from due (8 bytes less per entry). */
  seq: number;
  /** Slot index, `slots` (ready list), OVERFLOW, or DETACHED (fired, cancelled, or a sentinel). */
  where: number;
  prev: Entry<T>;
  next: Entry<T>;
  constructor(id: string, due: number, value: T | undefined, seq: number) {
    this.id = id;
    this.due = due;
    this.value = value;
    this.seq = seq;
    this.where = DETACHED;
    this.prev = this;
    this.next = this;
  }
}

/** An overflow chunk: the entries of buckets [c·C, (c+1)·C), not yet in the wheel. */
interface Chunk<T> {
  readonly head: Entry<T>;
  count: number;
  /** Smallest due in the chunk when `minValid`; recomputed lazily after removing the minimum. */
  min: number;
  minValid: boolean;
}

/** (due, schedule order). */
function compare<T>(a: Entry<T>, b: Entry<T>): number {
  return a.due - b.due || a.seq - b.seq;
}

function sentinel<T>(): Entry<T> {
  return new Entry<T>('', NaN, undefined, -1);
}

/**
 * A hashed timing wheel keyed by string id. See the module comment for the contract, the design
 * (exact mid-tick firing, chunked overflow beyond the window, bulk clock jumps, a backwards clock
 * ignored) and the cost of each operation.
 *
 * @typeParam T - the value carried by each entry (default `string`).
 */
export class TimingWheel<T = string> {
  readonly slots: number;
  readonly tickMs: number;
  readonly startMs: number;
  /** Buckets per overflow chunk: floor(slots / 2). */
  readonly chunkTicks: number;

  /** `slots + 1` sentinels: 0..slots-1 are the wheel, `slots` is the ready list. */
  private readonly lists: Entry<T>[];
  private readonly byId = new Map<string, Entry<T>>();
  private chunks = new Map<number, Chunk<T>>();
  private wheelCount = 0;
  private readyCount = 0;
  /** Bucket that contains `nowMs`; every entry of an earlier bucket has fired. */
  private cursor = 0;
  /** floor(cursor / chunkTicks). The wheel holds chunks `chunk` and `chunk + 1` (the latter possibly in part). */
  private chunk = 0;
  private nowMs: number;
  private seq = 0;
  private readonly counters: TimingWheelStats = {slotVisits: 0, bulkJumps: 0, migrated: 0};

  /** @throws RangeError if `slots` is not an integer ≥ 2, `tickMs` is not finite and > 0, or `startMs` is not finite. */
  constructor(options: TimingWheelOptions) {
    const {slots = 1024, tickMs = 100, startMs} = options;
    if (!Number.isSafeInteger(slots) || slots < 2) throw new RangeError(`TimingWheel: slots must be an integer >= 2, got ${String(slots)}`);
    if (typeof tickMs !== 'number' || !Number.isFinite(tickMs) || tickMs <= 0) {
      throw new RangeError(`TimingWheel: tickMs must be a finite number > 0, got ${String(tickMs)}`);
    }
    if (typeof startMs !== 'number' || !Number.isFinite(startMs))
      throw new RangeError(`TimingWheel: startMs must be a finite number, got ${String(startMs)}`);
    this.slots = slots;
    this.tickMs = tickMs;
    this.startMs = startMs;
    this.chunkTicks = Math.floor(slots / 2);
    this.nowMs = startMs;
    this.lists = [];
    for (let i = 0; i <= slots; i++) this.lists.push(sentinel<T>());
  }

  /** Number of pending entries. O(1). */
  get size(): number {
    return this.byId.size;
  }

  /** The wheel's time: `startMs`, then the largest time passed to {@link advance}. Never decreases. */
  get now(): number {
    return this.nowMs;
  }

  /** A copy of the internal counters (e.g. to check that a clock jump was not walked tick by tick). */
  stats(): TimingWheelStats {
    return {...this.counters};
  }

  /** True if `id` is pending (scheduled, and not yet fired or cancelled). O(1). */
  has(id: string): boolean {
    return this.byId.has(id);
  }

  /** The due time of a pending `id`, or undefined. O(1). */
  dueOf(id: string): number | undefined {
    return this.byId.get(id)?.due;
  }

  /**
   * Schedules `id` to fire at `dueMs`, carrying `value`. If `id` is already pending, it is MOVED:
   * its due time and value are replaced (leaving out `value` sets it to undefined), and among
   * entries with the same due time it ranks as if scheduled now. A `dueMs` at or before
   * {@link now} fires at the next `advance(t)` with `t >= dueMs`. O(1) for any due time.
   * @throws RangeError if `dueMs` is not finite or is more than 2^50 ticks from `startMs` (nothing changes).
   */
  schedule(id: string, dueMs: number, value?: T): void {
    this.checkTime('dueMs', dueMs);
    let e = this.byId.get(id);
    if (e === undefined) {
      e = new Entry<T>(id, dueMs, value, this.seq++);
      this.byId.set(id, e);
    } else {
      this.unlink(e);
      e.due = dueMs;
      e.value = value;
      e.seq = this.seq++;
    }
    this.place(e);
  }

  /**
   * Cancels a pending `id`. Returns true if it was pending; false if it is unknown, has already
   * fired, or was already cancelled. O(1).
   */
  cancel(id: string): boolean {
    const e = this.byId.get(id);
    if (e === undefined) return false;
    this.byId.delete(id);
    this.unlink(e);
    e.value = undefined;
    return true;
  }

  /** Drops every pending entry. The wheel's time and cursor are kept. O(slots). */
  clear(): void {
    for (const head of this.lists) head.next = head.prev = head;
    this.byId.clear();
    this.chunks = new Map();
    this.wheelCount = 0;
    this.readyCount = 0;
  }

  /**
   * The earliest pending due time, or undefined when the wheel is empty. It is the time to sleep
   * until before the next `advance`; a value ≤ {@link now} means "advance now". It is exact:
   * cancelled entries never count.
   *
   * Cost: O(ready + S + one slot) when anything is within the loaded window. Otherwise it is
   * O(E) to find the first overflow chunk, plus O(that chunk) if its cached minimum was cancelled.
   * It may finish migrating the next chunk into the wheel (an early share of work that `advance`
   * would do anyway, so amortised O(1) per entry). It never scans all entries.
   */
  nextDueMs(): number | undefined {
    if (this.byId.size === 0) return undefined;
    if (this.readyCount > 0) {
      // Ready entries are due at or before now, so before every other entry.
      const head = this.list(this.slots);
      let best = Infinity;
      for (let e = head.next; e !== head; e = e.next) if (e.due < best) best = e.due;
      return best;
    }
    this.moveChunk(this.chunk + 1, Infinity);
    if (this.wheelCount > 0) {
      for (let k = this.cursor, end = (this.chunk + 2) * this.chunkTicks; k < end; k++) {
        const head = this.list(k % this.slots);
        if (head.next === head) continue;
        let best = Infinity;
        for (let e = head.next; e !== head; e = e.next) if (e.due < best) best = e.due;
        return best;
      }
    }
    let first: Chunk<T> | undefined;
    let firstKey = Infinity;
    for (const [c, ch] of this.chunks) {
      if (c < firstKey) {
        firstKey = c;
        first = ch;
      }
    }
    if (first === undefined) return undefined; // unreachable while size > 0
    if (!first.minValid) {
      let best = Infinity;
      for (let e = first.head.next; e !== first.head; e = e.next) if (e.due < best) best = e.due;
      first.min = best;
      first.minValid = true;
    }
    return first.min;
  }

  /**
   * Moves the wheel to `nowMs` and returns every pending entry with `dueMs <= nowMs`, each once,
   * ordered by due time and then by schedule order. Returned entries are no longer pending.
   *
   * - Forward, within the loaded window: walks the ticks in between, firing whole buckets (it
   *   skips ahead when the slots are empty), then scans the bucket that contains `nowMs`.
   * - Forward, beyond the window: the bulk path, with no per-tick loop (see the module comment).
   * - Backwards (`nowMs < now`): the cursor stays. Only entries that were scheduled in the past
   *   with `dueMs <= nowMs` fire, so nothing is ever returned before its due time. Not an error.
   *
   * @throws RangeError if `nowMs` is not finite or is more than 2^50 ticks from `startMs` (nothing changes).
   */
  advance(nowMs: number): FiredTimer<T>[] {
    this.checkTime('nowMs', nowMs);
    const out: FiredTimer<T>[] = [];
    if (this.readyCount > 0) this.fireReady(nowMs, out);
    if (nowMs <= this.nowMs) return out; // backwards, or no move: the wheel holds only dues > now
    this.nowMs = nowMs;
    const target = this.bucketOf(nowMs);
    if (Math.floor(target / this.chunkTicks) > this.chunk + 1) this.jump(target, nowMs, out);
    else this.step(target, nowMs, out);
    return out;
  }

  // -------------------------------------------------------------------------------------------

  private checkTime(name: string, ms: number): void {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || Math.abs(ms - this.startMs) / this.tickMs > MAX_TICKS) {
      throw new RangeError(`TimingWheel: ${name} must be a finite number within 2^50 ticks of startMs, got ${String(ms)}`);
    }
  }

  private bucketOf(ms: number): number {
    // Monotone in ms (IEEE subtraction and division by a positive constant, and floor, are monotone).
    // That is all correctness needs: bucketOf(a) < bucketOf(b) implies a < b.
    return Math.floor((ms - this.startMs) / this.tickMs);
  }

  private list(i: number): Entry<T> {
    return this.lists[i] as Entry<T>;
  }

  private static link<T>(head: Entry<T>, e: Entry<T>): void {
    const last = head.prev;
    e.prev = last;
    e.next = head;
    last.next = e;
    head.prev = e;
  }

  private toSlot(e: Entry<T>): void {
    const slot = this.bucketOf(e.due) % this.slots;
    e.where = slot;
    TimingWheel.link(this.list(slot), e);
    this.wheelCount++;
  }

  /** Puts a detached entry where its due time says: the ready list, a slot, or an overflow chunk. */
  private place(e: Entry<T>): void {
    if (e.due <= this.nowMs) {
      e.where = this.slots;
      TimingWheel.link(this.list(this.slots), e);
      this.readyCount++;
      return;
    }
    const c = Math.floor(this.bucketOf(e.due) / this.chunkTicks); // bucket ≥ cursor, because due > now
    if (c <= this.chunk + 1) {
      this.toSlot(e);
      return;
    }
    let ch = this.chunks.get(c);
    if (ch === undefined) {
      ch = {head: sentinel<T>(), count: 0, min: Infinity, minValid: true};
      this.chunks.set(c, ch);
    }
    e.where = OVERFLOW;
    TimingWheel.link(ch.head, e);
    ch.count++;
    if (e.due < ch.min) ch.min = e.due;
  }

  /** Removes a pending entry from its list (a slot, the ready list or a chunk) and fixes the counts. */
  private unlink(e: Entry<T>): void {
    const w = e.where;
    if (w === this.slots) this.readyCount--;
    else if (w >= 0) this.wheelCount--;
    else if (w === OVERFLOW) {
      const c = Math.floor(this.bucketOf(e.due) / this.chunkTicks);
      const ch = this.chunks.get(c);
      if (ch !== undefined && --ch.count === 0) this.chunks.delete(c);
      else if (ch !== undefined && e.due <= ch.min) ch.minValid = false;
    }
    e.prev.next = e.next;
    e.next.prev = e.prev;
    e.prev = e.next = e;
    e.where = DETACHED;
  }

  /** Moves up to `limit` entries of overflow chunk `c` into their slots (c ≤ chunk + 1). */
  private moveChunk(c: number, limit: number): void {
    const ch = this.chunks.get(c);
    if (ch === undefined) return;
    const head = ch.head;
    let n = 0;
    while (n < limit && head.next !== head) {
      const e = head.next;
      head.next = e.next;
      e.next.prev = head;
      this.toSlot(e);
      n++;
    }
    this.counters.migrated += n;
    ch.count -= n;
    if (ch.count === 0) this.chunks.delete(c);
    else ch.minValid = false;
  }

  /** The cursor enters chunk c (from c - 1): load the rest of it. Chunk c + 1 starts migrating. */
  private enterChunk(c: number): void {
    this.moveChunk(c, Infinity);
    this.chunk = c;
  }

  /** Moves this advance's share of the next chunk: what is left, divided by the ticks left before it. */
  private migrateShare(): void {
    const next = this.chunk + 1;
    const ch = this.chunks.get(next);
    if (ch !== undefined) this.moveChunk(next, Math.ceil(ch.count / (next * this.chunkTicks - this.cursor)));
  }

  /** Fires a group: sorts it (unless it is already in order) and emits it. */
  private emit(group: Entry<T>[], out: FiredTimer<T>[], sorted: boolean): void {
    if (!sorted && group.length > 1) group.sort(compare);
    for (const e of group) {
      this.byId.delete(e.id);
      e.where = DETACHED;
      e.prev = e.next = e;
      out.push({id: e.id, dueMs: e.due, value: e.value});
    }
  }

  /** Fires every entry of a slot (the caller knows they are all due). */
  private fireSlot(slot: number, out: FiredTimer<T>[]): void {
    this.counters.slotVisits++;
    const head = this.list(slot);
    if (head.next === head) return;
    const group: Entry<T>[] = [];
    for (let e = head.next; e !== head; e = e.next) group.push(e);
    head.next = head.prev = head;
    this.wheelCount -= group.length;
    this.emit(group, out, false);
  }

  /** Fires the entries of a list that are due by `limit`, keeping the others. */
  private fireDue(headIndex: number, limit: number, out: FiredTimer<T>[]): void {
    const head = this.list(headIndex);
    const group: Entry<T>[] = [];
    for (let e = head.next; e !== head;) {
      const next = e.next;
      if (e.due <= limit) {
        this.unlink(e);
        group.push(e);
      }
      e = next;
    }
    this.emit(group, out, false);
  }

  private fireReady(limit: number, out: FiredTimer<T>[]): void {
    this.fireDue(this.slots, limit, out);
  }

  /** Forward, with the target in the loaded window (its chunk ≤ chunk + 1): fewer than 2C ≤ S ticks. */
  private step(target: number, nowMs: number, out: FiredTimer<T>[]): void {
    const C = this.chunkTicks;
    let k = this.cursor;
    while (k < target) {
      if (this.wheelCount === 0) {
        // Nothing to fire before the next chunk boundary: skip to it (or to the target).
        const boundary = (Math.floor(k / C) + 1) * C;
        if (boundary > target) break;
        k = boundary;
        this.enterChunk(k / C);
        continue;
      }
      this.fireSlot(k % this.slots, out);
      k++;
      if (k % C === 0) this.enterChunk(k / C);
    }
    this.cursor = target;
    if (this.wheelCount > 0) {
      // The target bucket: only what is due by nowMs (exact mid-tick firing).
      this.counters.slotVisits++;
      this.fireDue(target % this.slots, nowMs, out);
    }
    this.migrateShare();
  }

  /** Forward, beyond the loaded window: everything loaded is due. Then whole chunks, then the target chunk. */
  private jump(target: number, nowMs: number, out: FiredTimer<T>[]): void {
    this.counters.bulkJumps++;
    const C = this.chunkTicks;
    const targetChunk = Math.floor(target / C);
    // 1. The wheel: chunks `chunk` and `chunk + 1` (load the rest of the latter first), in bucket order.
    this.moveChunk(this.chunk + 1, Infinity);
    for (let k = this.cursor, end = (this.chunk + 2) * C; k < end && this.wheelCount > 0; k++) this.fireSlot(k % this.slots, out);
    // 2. Whole chunks strictly before the target chunk, in order (empty chunks do not exist, so cost nothing).
    const keys: number[] = [];
    for (const c of this.chunks.keys()) if (c < targetChunk) keys.push(c);
    keys.sort((a, b) => a - b);
    for (const c of keys) this.fireChunk(c, out);
    // 3. The target chunk: load it into the (now empty) wheel and step to the target, < C ticks.
    this.cursor = targetChunk * C;
    this.chunk = targetChunk;
    this.moveChunk(targetChunk, Infinity);
    this.step(target, nowMs, out);
  }

  /** Fires a whole overflow chunk, during a jump, while the wheel is empty. */
  private fireChunk(c: number, out: FiredTimer<T>[]): void {
    const ch = this.chunks.get(c);
    if (ch === undefined) return;
    const C = this.chunkTicks;
    if (ch.count >= DENSE_FACTOR * C) {
      // Dense: a counting sort by bucket through the empty slots (C ≤ S buckets, one per slot).
      this.moveChunk(c, Infinity);
      for (let k = c * C, end = k + C; k < end; k++) this.fireSlot(k % this.slots, out);
      return;
    }
    this.chunks.delete(c);
    const group: Entry<T>[] = [];
    for (let e = ch.head.next; e !== ch.head; e = e.next) group.push(e);
    this.emit(group, out, false);
  }
}
