/**
 * How much work a worker takes in per pool queue and level. A doorbell is acked once its tasks are
 * claimed, so RabbitMQ's prefetch alone would let a worker claim far more than its pool can hold
 * (the excess went back to storage and was rung again, over and over, behind a big backlog; and a
 * high task's claim waited behind thousands of those). A lane counts the tasks taken from one
 * queue and not yet finished; a doorbell that would take it past its cap waits here unacked, so
 * the prefetch fills and RabbitMQ stops delivering on that queue only. Other levels' queues keep
 * their own lanes: a full normal lane never holds back a high doorbell.
 */

/** One pool queue at one level: `outstanding` tasks taken and not yet finished, at most `cap`. */
export class Lane {
  outstanding = 0;
  private readonly waiting: Array<{n: number; admit: () => void}> = [];

  /** `cap` ≥ 1: the tasks the lane may hold (a doorbell for more is still taken when the lane is empty). */
  constructor(readonly cap: number) {}

  /** Doorbells waiting for room. */
  get held(): number {
    return this.waiting.length;
  }

  /**
   * Takes `n` tasks now (calls `admit`) if they fit, or when the lane is empty (a doorbell bigger
   * than the cap must not wait forever); otherwise queues them, in order, for `done`.
   */
  offer(n: number, admit: () => void): void {
    if (this.waiting.length === 0 && this.fits(n)) {
      this.outstanding += n;
      admit();
    } else this.waiting.push({n, admit});
  }

  /**
   * Takes `n` tasks now (calls `admit`) only if they fit without waiting behind queued doorbells;
   * returns whether it did (a hand-off the lane has no room for goes to RabbitMQ instead).
   */
  take(n: number, admit: () => void): boolean {
    if (this.waiting.length > 0 || !this.fits(n)) return false;
    this.outstanding += n;
    admit();
    return true;
  }

  /** `n` tasks of the lane are finished (or were never claimed): admits the doorbells that now fit. */
  done(n = 1): void {
    this.outstanding = Math.max(0, this.outstanding - n);
    while (this.waiting.length > 0 && this.fits(this.waiting[0]!.n)) {
      const w = this.waiting.shift()!;
      this.outstanding += w.n;
      w.admit();
    }
  }

  /** Forgets the waiting doorbells (stop: left unacked, they return to the queue with the channel). */
  clear(): void {
    this.waiting.length = 0;
  }

  private fits(n: number): boolean {
    return this.outstanding === 0 || this.outstanding + n <= this.cap;
  }
}
