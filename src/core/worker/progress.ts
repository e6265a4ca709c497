/**
 * The worker's progress writer: handlers report progress as often as they like (ctx.progress); the
 * writer keeps the latest report of each task and writes all of them in one statement per flush,
 * at most one flush per `everyMs` (so at most one write per task per second by default). A flush
 * is scheduled only when there is something to write: a worker whose handlers never report
 * progress never runs one. Each row is written fenced (the attempt's fence, still running), so a
 * report from an attempt that has ended, or that another worker took over, changes nothing. The
 * report still unwritten when an attempt ends is taken out (take) and written by its outcome's own
 * UPDATE, so the row ends with the attempt's last report at no extra statement.
 */
import {errorMessage} from '../errors.js';
import type {Logger} from '../log.js';
import type {ProgressRow} from '../store/types.js';
import type {Clock, TimerHandle} from '../time.js';

/** Rows per statement. */
const CHUNK = 1000;

export interface ProgressWriterOptions {
  clock: Clock;
  logger: Logger;
  /** Writes rows (one statement, fenced); see HotPathStore.progressWrite. */
  write: (rows: ProgressRow[]) => Promise<unknown>;
  /** The least time between two flushes (default 1000 ms). */
  everyMs?: number;
}

export class ProgressWriter {
  private readonly pending = new Map<string, ProgressRow>();
  private timer: TimerHandle | null = null;
  private writing: Promise<void> | null = null;
  /** Monotonic ms of the last flush's start. */
  private lastFlush = -Infinity;
  private stopped = false;

  constructor(private readonly o: ProgressWriterOptions) {}

  /** Records `row` as its task's latest report (replacing an unwritten one) and schedules a flush. */
  report(row: ProgressRow): void {
    if (this.stopped) return;
    this.pending.set(row.id, row);
    this.schedule();
  }

  /**
   * Takes a task's unwritten report out of the writer (its attempt ended: the outcome writes it in
   * its own UPDATE); undefined when there is none.
   */
  take(id: string): ProgressRow | undefined {
    const row = this.pending.get(id);
    if (row) this.pending.delete(id);
    return row;
  }

  /** Reports not yet written. */
  get size(): number {
    return this.pending.size;
  }

  private schedule(): void {
    if (this.timer || this.writing || this.stopped) return;
    const wait = Math.max(0, this.lastFlush + (this.o.everyMs ?? 1000) - this.o.clock.monotonic());
    this.timer = this.o.clock.setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, wait);
  }

  /**
   * Writes every pending report now (one statement per CHUNK rows). A failed write is logged and
   * its reports dropped: progress is advisory, the handler's next report is written in the next flush.
   */
  flush(): Promise<void> {
    if (this.writing) return this.writing;
    if (this.timer) {
      this.o.clock.clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.pending.size === 0) return Promise.resolve();
    const rows = [...this.pending.values()];
    this.pending.clear();
    this.lastFlush = this.o.clock.monotonic();
    this.writing = (async () => {
      try {
        for (let i = 0; i < rows.length; i += CHUNK) await this.o.write(rows.slice(i, i + CHUNK));
      } catch (e) {
        this.o.logger.warn('writing progress failed; the next reports will be written', {tasks: rows.length, error: errorMessage(e)});
      } finally {
        this.writing = null;
        if (this.pending.size > 0) this.schedule();
      }
    })();
    return this.writing;
  }

  /** Stops scheduling and waits for a write in flight; reports not yet written are dropped. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) this.o.clock.clearTimeout(this.timer);
    this.timer = null;
    this.pending.clear();
    await this.writing;
  }
}
