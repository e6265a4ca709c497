import type {Clock} from '../time.js';

/**
 * The wait after an empty pass while the relay is busy (it found rows within the last interval).
 * 20 ms keeps a row that arrives during a burst within ~50 ms of its commit (half a poll on
 * average, plus the pass that relays it), while an empty claim on idx_outbox_unsent costs the
 * business database well under a millisecond: at most 50 such claims a second per pass loop, and
 * only for one interval after the last row found.
 */
export const BUSY_POLL_MS = 20;

/**
 * When each of the relay's pass loops goes next, on the injected clock:
 * - a pass that claimed rows is followed by another at once (a backlog drains at full speed, and
 *   rows that came in during the pass are taken without a wait);
 * - an empty pass waits BUSY_POLL_MS while the relay (any of its loops) found rows within the last
 *   `intervalMs`;
 * - an empty pass of an idle relay waits for its loop's next slot: loop i of n polls at
 *   start + i·interval/n + k·interval, so an idle relay looks every interval/n and a lone row waits
 *   about interval/(2n) on average. The slots are a fixed grid, not a wait from the end of the
 *   last pass: loops that left a busy spell together fall back into their stagger at once.
 * Errors (backoff) and a blocked broker are the relay's own rules, outside this one.
 */
export class RelayPacing {
  private epoch = 0;
  private lastFoundAt: number | null = null;

  constructor(private readonly o: {clock: Clock; intervalMs: number; loops: number}) {}

  /** Sets the grid's origin: the relay's start, when loop 0 makes its first pass. */
  begin(): void {
    this.epoch = this.o.clock.monotonic();
  }

  /** Loop i's first wait after begin(): its offset on the grid, i·interval/loops. */
  firstWait(i: number): number {
    return this.offset(i);
  }

  /** The wait before loop i's next pass after one that claimed `claimed` rows. */
  afterPass(i: number, claimed: number): number {
    const now = this.o.clock.monotonic();
    if (claimed > 0) {
      this.lastFoundAt = now;
      return 0;
    }
    if (this.lastFoundAt !== null && now - this.lastFoundAt < this.o.intervalMs) return Math.min(BUSY_POLL_MS, this.o.intervalMs);
    return this.untilSlot(i, now);
  }

  /**
   * Time to loop i's next slot at least 1 ms after `now`: in [1, interval + 1). (A slot closer than
   * that is the one this pass was for, give or take rounding: on a clock counting from the epoch,
   * a wait of a fraction of a millisecond would not move time at all.)
   */
  private untilSlot(i: number, now: number): number {
    const interval = this.o.intervalMs;
    const since = (((now - this.epoch - this.offset(i)) % interval) + interval) % interval;
    const wait = interval - since;
    return wait < 1 ? wait + interval : wait;
  }

  private offset(i: number): number {
    return (i * this.o.intervalMs) / this.o.loops;
  }
}
