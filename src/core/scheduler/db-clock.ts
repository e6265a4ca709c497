import type {Clock} from '../time.js';

/**
 * An estimate of the database clock (NOW(3)) from the local one: due times are compared with the
 * database's clock, never a process's own. Each `sync()` reads NOW(3) and keeps the offset of the
 * sample with the smallest round trip among the recent ones; `safeNow()` is a time the database
 * clock has certainly reached (estimate minus half the round trip and NOW(3)'s 1 ms resolution), so
 * firing at `safeNow() >= runAt` is never early.
 */
export class DbClock {
  private offset = 0;
  private error = Number.POSITIVE_INFINITY;
  private syncedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly clock: Clock,
    private readonly readDbNow: () => Promise<Date>,
    /** A sample older than this is replaced even by a worse one (drift). */
    private readonly maxSampleAgeMs = 60_000,
  ) {}

  async sync(): Promise<void> {
    const t0 = this.clock.now();
    const db = (await this.readDbNow()).getTime();
    const t1 = this.clock.now();
    const error = (t1 - t0) / 2 + 1;
    if (error <= this.error || t1 - this.syncedAt > this.maxSampleAgeMs) {
      this.offset = db - (t0 + t1) / 2;
      this.error = error;
      this.syncedAt = t1;
    }
  }

  get synced(): boolean {
    return Number.isFinite(this.error);
  }

  /** Best estimate of NOW(3), epoch ms. */
  now(): number {
    return this.clock.now() + this.offset;
  }

  /** A time NOW(3) has certainly passed. */
  safeNow(): number {
    return this.now() - this.error;
  }

  /** Local milliseconds to wait until the database clock has certainly reached `dbMs`. */
  delayUntil(dbMs: number): number {
    return Math.max(0, dbMs - this.safeNow());
  }

  get uncertaintyMs(): number {
    return this.error;
  }
}
