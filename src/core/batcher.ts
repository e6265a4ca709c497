import type {Clock, TimerHandle} from './time.js';

export interface MicroBatcherOptions<T> {
  /** Run a batch once this many items are waiting. */
  maxSize: number;
  /** …or this long after the first item of a batch arrived (unused with `groupCommit`). */
  maxWaitMs: number;
  /**
   * Group commit instead of a wait: while fewer than `concurrency` batches run, what is waiting
   * runs at the end of the current turn (items pushed in one turn go together); while all run, the
   * items pushed meanwhile form the next batch, started as soon as one finishes. Batches grow with
   * the load by themselves, and a lone item never waits for a timer.
   */
  groupCommit?: boolean;
  /** Batches run at the same time (2 = one in the database while the next fills). */
  concurrency: number;
  clock: Clock;
  /** Processes one batch. Must not reject (handle and retry its own errors). */
  run: (items: T[]) => Promise<void>;
}

/**
 * Groups items pushed one at a time into batches, so hot paths (claims, outcomes) cost one
 * statement per batch instead of one per item: after `maxWaitMs` or at `maxSize`, or by group
 * commit (`groupCommit`).
 */
export class MicroBatcher<T> {
  private items: T[] = [];
  private timer: TimerHandle | undefined;
  private running = 0;
  private readonly idle: Array<() => void> = [];
  private kickQueued = false;

  constructor(private readonly o: MicroBatcherOptions<T>) {}

  get waiting(): number {
    return this.items.length;
  }

  get busy(): boolean {
    return this.running > 0 || this.items.length > 0;
  }

  push(item: T): void {
    this.items.push(item);
    if (this.items.length >= this.o.maxSize) this.kick(false);
    else if (this.o.groupCommit) {
      if (this.running < this.o.concurrency && !this.kickQueued) {
        this.kickQueued = true;
        queueMicrotask(() => {
          this.kickQueued = false;
          this.kick(true);
        });
      }
    } else
      this.timer ??= this.o.clock.setTimeout(() => {
        this.timer = undefined;
        this.kick(true);
      }, this.o.maxWaitMs);
  }

  /**
   * Pushes an item that must not wait for the timer (an outcome others wait on: a parent whose
   * dependents become due with it): what is waiting runs now, unless every batch slot is busy (then
   * it goes with the next batch, as usual).
   */
  pushNow(item: T): void {
    this.items.push(item);
    this.kick(true);
  }

  /** Runs everything waiting now and resolves when no batch is running. */
  async flush(): Promise<void> {
    while (this.busy) {
      this.kick(true);
      if (this.running === 0) continue;
      await new Promise<void>((r) => this.idle.push(r));
    }
  }

  /** Drops waiting items (returned to the caller) without running them. */
  takeWaiting(): T[] {
    if (this.timer) this.o.clock.clearTimeout(this.timer);
    this.timer = undefined;
    return this.items.splice(0);
  }

  private kick(partial: boolean): void {
    while (this.running < this.o.concurrency && this.items.length > 0 && (partial || this.items.length >= this.o.maxSize)) {
      const batch = this.items.splice(0, this.o.maxSize);
      this.running++;
      void this.o.run(batch).finally(() => {
        this.running--;
        this.kick(this.items.length > 0 && (this.o.groupCommit === true || this.timer === undefined));
        // flush() re-checks and re-kicks after every batch.
        for (const r of this.idle.splice(0)) r();
      });
    }
    if (this.items.length === 0 && this.timer) {
      this.o.clock.clearTimeout(this.timer);
      this.timer = undefined;
    }
  }
}
