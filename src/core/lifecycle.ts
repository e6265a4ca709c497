/**
 * One contract for long-running services (worker, scheduler, relay) and one periodic-loop helper
 * on the injected clock, so every loop has the same guarantees: no overlapping passes, a stop that
 * waits for the running pass, errors reported instead of thrown, and `runOnce()` for tests.
 */
import type {Clock, Random, TimerHandle} from './time.js';

/** How a service stops: drain for up to `graceMs`, or until `signal` aborts (whichever is first). */
export interface StopOptions {
  graceMs?: number;
  signal?: AbortSignal;
}

/**
 * A long-running service. `start()` and `stop()` are idempotent; `stop()` never throws for a
 * failure of its own cleanup (it logs it) and resolves once the service holds nothing;
 * `await using` disposal is `stop()` with the service's default grace period.
 */
export interface Service extends AsyncDisposable {
  start(): Promise<void>;
  stop(options?: StopOptions): Promise<void>;
  /** True while the service is running and able to do its work (readiness probes). */
  ready(): boolean;
}

/**
 * Resolves after `graceMs` on `clock` or when `signal` aborts, whichever comes first; `cancel()`
 * clears the timer. Used by stops that wait for in-flight work.
 */
export function graceDeadline(clock: Clock, o: StopOptions, defaultGraceMs: number): {done: Promise<void>; cancel(): void} {
  let timer: TimerHandle | undefined;
  let onAbort: (() => void) | undefined;
  const done = new Promise<void>((resolve) => {
    if (o.signal?.aborted) return resolve();
    timer = clock.setTimeout(resolve, o.graceMs ?? defaultGraceMs);
    onAbort = () => resolve();
    o.signal?.addEventListener('abort', onAbort, {once: true});
  });
  return {
    done,
    cancel() {
      if (timer) clock.clearTimeout(timer);
      if (onAbort) o.signal?.removeEventListener('abort', onAbort);
    },
  };
}

export interface PeriodicOptions {
  /** Names the loop in error reports. */
  name: string;
  clock: Clock;
  /** The period: the time from the end of one pass to the start of the next. */
  everyMs: number;
  /** Up to this fraction of the period (0..1) is added at random to each wait (needs `random`). */
  jitter?: number;
  random?: Random;
  /** One pass. May return the wait before the next pass instead of `everyMs` (0: at once). */
  run(): Promise<number | void> | number | void;
  /** Called with what a pass threw. May return the wait before the next pass (a backoff). */
  onError(error: unknown, name: string): number | void;
}

/**
 * A periodic loop on the injected clock. Passes never overlap (a `runOnce()` while a pass runs
 * waits for it, then runs its own); the next wait starts when a pass ends; `stop()` clears the
 * timer and waits for the running pass; a pass that throws is reported to `onError`, never thrown.
 * Invalid options (a negative or non-finite period, a jitter outside 0..1) throw a RangeError.
 */
export class Periodic {
  private timer: TimerHandle | undefined;
  private tail: Promise<void> = Promise.resolve();
  private active = false;
  private passes = 0;

  constructor(private readonly o: PeriodicOptions) {
    if (!Number.isFinite(o.everyMs) || o.everyMs < 0)
      throw new RangeError(`${o.name}: period must be a finite number >= 0, got ${o.everyMs}`);
    const j = o.jitter ?? 0;
    if (!(j >= 0 && j <= 1)) throw new RangeError(`${o.name}: jitter must be within 0..1, got ${j}`);
    if (j > 0 && !o.random) throw new RangeError(`${o.name}: jitter needs a random source`);
  }

  /** Passes completed (successful or not). */
  get count(): number {
    return this.passes;
  }

  get running(): boolean {
    return this.active;
  }

  /** Schedules the first pass after `firstInMs` (default: one period). Idempotent. */
  start(firstInMs?: number): void {
    if (this.active) return;
    this.active = true;
    this.arm(firstInMs ?? this.o.everyMs);
  }

  /** Runs one pass now (after any pass in progress) and resolves when it ends; never rejects. */
  runOnce(): Promise<void> {
    return this.pass().then(() => undefined);
  }

  /** Stops scheduling passes and resolves when the running pass (if any) has ended. Idempotent. */
  async stop(): Promise<void> {
    this.active = false;
    if (this.timer) this.o.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.tail;
  }

  private pass(): Promise<number | void> {
    const p = this.tail.then(async () => {
      try {
        return await this.o.run();
      } catch (e) {
        try {
          return this.o.onError(e, this.o.name);
        } catch {
          return undefined; // a reporter that throws must not end the loop
        }
      } finally {
        this.passes++;
      }
    });
    this.tail = p.then(
      () => undefined,
      () => undefined,
    );
    return p;
  }

  private arm(ms: number): void {
    const j = this.o.jitter ?? 0;
    const wait = j > 0 ? ms + ms * j * this.o.random!() : ms;
    this.timer = this.o.clock.setTimeout(() => {
      this.timer = undefined;
      void this.pass().then((next) => {
        if (this.active && this.timer === undefined) this.arm(typeof next === 'number' ? next : this.o.everyMs);
      });
    }, wait);
  }
}
