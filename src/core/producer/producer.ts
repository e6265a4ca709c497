import {AxError, errorMessage, invalid, isAxError} from '../errors.js';
import type {Logger} from '../log.js';
import type {Broker, TaskMessage} from '../broker/types.js';
import type {HotPathStore, InsertResult} from '../store/types.js';
import {createIdGenerator} from '../task/id.js';
import type {NewTask, TaskSpec} from '../task/model.js';
import {type TaskDefaults, validateTaskSpec} from '../task/validate.js';
import {type Clock, type Random, type TimerHandle, sleep} from '../time.js';
import {type BackoffShape, backoffMs} from '../retry/backoff.js';
import {AxEvents} from '../events.js';
import {forgetUnconfirmed} from './forget.js';
import {tracing} from '../trace.js';

export interface ProducerOptions {
  store: Pick<HotPathStore, 'tasksInsert' | 'doorbellsForget'>;
  broker: Broker;
  clock: Clock;
  random: Random;
  logger: Logger;
  defaults: TaskDefaults;
  /** Tasks per write: the largest batch (default 500). */
  batchSize: number;
  /**
   * The ceiling: the longest a task waits in the buffer (default 1000 ms) while earlier writes are
   * still in flight. It is not a wait: a task is written as soon as no insert is in flight.
   */
  flushMs: number;
  /**
   * How long a partial batch waits for more tasks before it is written when no insert is in flight
   * (default 0: at once; Kafka's `linger.ms`). Trades that much latency for fewer, fuller writes.
   */
  lingerMs?: number;
  /** Buffered tasks beyond which submit() waits (default 10,000). */
  bufferLimit: number;
  /** Recorded in history as who submitted (host:pid). */
  actor: string;
  /** Batches written concurrently (default 3: inserting, publishing, and one waiting for a commit). */
  maxConcurrentBatches?: number;
  /**
   * Give up on a batch that MySQL has refused as unavailable for this long (flush() then rejects
   * with AxError('unavailable')). Default: never — a long-running producer keeps its tasks buffered
   * until the database is back. One-shot callers (the CLI) set it.
   */
  giveUpAfterMs?: number;
  /** Where to emit task:submitted and doorbell:published (by 'producer'); default: its own emitter. */
  events?: AxEvents;
}

/**
 * The wait before a batch's next try while MySQL is unavailable: 200 ms doubling to 4 s, jittered to
 * ×0.5–1.5. The cap bounds how late a producer notices the database is back (at most 6 s after a long
 * outage: the batches behind the retrying one wait for it); a cap of 10 s left tasks submitted at
 * the recovery waiting up to 15 s (test/faults/network.test.ts measured 8.5 s).
 */
export const SUBMIT_RETRY: BackoffShape = {firstMs: 200, maxMs: 4000, jitter: [0.5, 1.5]};

/** What one flush() covered. */
export interface FlushReport {
  inserted: number;
  existing: number;
  /** Written but whose doorbell was not confirmed; the scheduler (or the reconciler) rings for them later. */
  unpublished: number;
  conflicts: InsertResult['conflicts'];
  /**
   * Tasks with a throttle that were not written because their key's window was open, each with
   * the id of the task that opened it (`keptId`); absent when there were none.
   */
  throttled?: NonNullable<InsertResult['throttled']>;
}

interface Queued {
  seq: number;
  task: NewTask;
}

/**
 * A batch's INSERT as it went: the result, the ids it marked published, whether an attempt failed
 * first, and the publish started before its COMMIT (first attempt only): the ids it sent, or why not.
 */
interface Written {
  result: InsertResult;
  dueIds: string[];
  retried: boolean;
  early?: Promise<EarlyPublish>;
}

type EarlyPublish = {sent: ReadonlySet<string>} | {error: unknown};

interface Batch {
  lo: number;
  hi: number;
  done: Promise<void>;
}

/**
 * The buffered, batched producer, with group commit. `submit()` validates at once (throwing
 * invalid_input), buffers and resolves with the task id. When no insert is in flight the buffer is
 * written at the end of the current turn (so tasks submitted together go together; after `lingerMs`
 * if one is set); while one is in flight, the tasks submitted meanwhile form the next batch, written
 * as soon as it commits. A full batch (`batchSize`) goes at once, and `flushMs` is the ceiling: a
 * task that waited that long goes even while another insert is in flight, up to
 * `maxConcurrentBatches` writes. Under load the batches fill by themselves (the tasks that arrive
 * during one commit), so throughput is kept; at ordinary load a task is written within
 * milliseconds. A batch is written as one transaction in which the rows due now are written already
 * marked published; their doorbells are published with confirms once the rows are written and
 * locked, while the transaction commits (a claim that arrives first waits for the row lock). When the publish fails or is not
 * confirmed their mark is undone (doorbellsForget: one guarded UPDATE) so the scheduler rings them;
 * if the process dies between the commit and the confirm, the reconciler rings them once the mark
 * is older than republishAfter (no statement per batch is spent on the usual, successful case). A write that fails because MySQL is unavailable is retried with backoff
 * and keeps its tasks buffered, so a full buffer makes submit() wait: nothing is dropped.
 * `flush()` resolves when everything submitted before it is durable. Each written batch emits
 * task:submitted per task type (new tasks only) and doorbell:published once its doorbells confirm.
 */
export class Producer {
  readonly events: AxEvents;
  private readonly buffer: Queued[] = [];
  private readonly active: Batch[] = [];
  private seq = 0;
  private flushUpTo = 0;
  private timer: TimerHandle | undefined;
  private timerFired = false;
  /** Batches whose INSERT has not returned yet (group commit: a partial batch waits while one is). */
  private inserting = 0;
  private kickQueued = false;
  private lingerTimer: TimerHandle | undefined;
  /** The buffer's partial batch has waited `lingerMs` (always, with no linger). */
  private lingered: boolean;
  private closed = false;
  private spaceWaiters: Array<() => void> = [];
  private batchWaiters: Array<() => void> = [];
  private report: FlushReport = {inserted: 0, existing: 0, unpublished: 0, conflicts: []};
  private failures: Array<{ids: string[]; error: string; code: 'unavailable' | 'internal'}> = [];
  private readonly newId: () => string;

  constructor(private readonly o: ProducerOptions) {
    this.events = o.events ?? new AxEvents();
    this.newId = createIdGenerator(() => o.clock.now());
    this.lingered = !(o.lingerMs !== undefined && o.lingerMs > 0);
  }

  /** Tasks buffered and not yet durable. */
  get pending(): number {
    return this.buffer.length + this.active.reduce((n, b) => n + (b.hi - b.lo + 1), 0);
  }

  /**
   * Validates and buffers one task; resolves with its id (at once unless the buffer is full).
   * Rejects with invalid_input (nothing buffered) or closed.
   */
  async submit(spec: TaskSpec): Promise<string> {
    if (this.closed) throw new AxError('closed', 'producer is closed');
    const task = validateTaskSpec(spec, this.o.defaults, this.o.clock.now(), this.newId);
    // A dependent is written with its edges in one transaction (linked.ts), never buffered.
    if (task.after) throw invalid('a task with after is submitted by the client (submit or submitBatch), not the buffered producer');
    // The caller's trace (its request's span), continued by the worker; none outside a trace.
    const trace = tracing.active();
    if (trace) task.trace = trace;
    while (this.buffer.length >= this.o.bufferLimit) {
      await new Promise<void>((r) => this.spaceWaiters.push(r));
      if (this.closed) throw new AxError('closed', 'producer is closed');
    }
    this.buffer.push({seq: ++this.seq, task});
    if (this.buffer.length === 1) {
      this.armFlushTimer();
      this.armLinger();
    }
    if (this.buffer.length >= this.o.batchSize) this.pump();
    else if (this.inserting === 0 && this.lingered && this.active.length < (this.o.maxConcurrentBatches ?? 3)) this.kickSoon();
    return task.id;
  }

  /**
   * Resolves when every task submitted before the call is durable, with a report of what happened
   * since the previous flush. Rejects with AxError('conflict') listing tasks refused because their id
   * or dedup key exists with other content, AxError('unavailable') for batches given up after
   * `giveUpAfterMs`, or AxError('internal') for batches that could not be written for another
   * reason; every task of the other batches is still written.
   */
  async flush(): Promise<FlushReport> {
    const target = this.seq;
    this.flushUpTo = Math.max(this.flushUpTo, target);
    this.pump();
    for (;;) {
      const waiting = this.active.filter((b) => b.lo <= target).map((b) => b.done);
      const buffered = this.buffer.length > 0 && (this.buffer[0] as Queued).seq <= target;
      if (waiting.length > 0) await Promise.all(waiting);
      else if (buffered) await new Promise<void>((r) => this.batchWaiters.push(r));
      else break;
    }
    const report = this.report;
    const failures = this.failures;
    this.report = {inserted: 0, existing: 0, unpublished: 0, conflicts: []};
    this.failures = [];
    if (failures.length > 0) {
      const code = failures.every((f) => f.code === 'unavailable') ? 'unavailable' : 'internal';
      throw new AxError(code, `${failures.reduce((n, f) => n + f.ids.length, 0)} task(s) could not be written: ${failures[0]?.error}`, {
        details: {failures, report},
      });
    }
    if (report.conflicts.length > 0) {
      throw new AxError('conflict', `${report.conflicts.length} task(s) refused: ${report.conflicts[0]?.reason}`, {
        details: {conflicts: report.conflicts, report},
      });
    }
    return report;
  }

  /** Flushes, then refuses further submits. Idempotent. */
  async close(): Promise<FlushReport> {
    try {
      return await this.flush();
    } finally {
      this.closed = true;
      this.clearTimers();
      for (const w of this.spaceWaiters.splice(0)) w();
    }
  }

  /**
   * Starts the batches that may go now: a full one; any once the ceiling timer fired or flush()
   * asked for it; a partial one when no insert is in flight and its linger is over (group commit).
   */
  private pump(): void {
    const max = this.o.maxConcurrentBatches ?? 3;
    while (this.active.length < max && this.buffer.length > 0) {
      const head = this.buffer[0] as Queued;
      const full = this.buffer.length >= this.o.batchSize;
      const groupCommit = this.inserting === 0 && this.lingered;
      if (!full && !groupCommit && !this.timerFired && head.seq > this.flushUpTo) break;
      const items = this.buffer.splice(0, this.o.batchSize);
      const batch: Batch = {lo: (items[0] as Queued).seq, hi: (items[items.length - 1] as Queued).seq, done: Promise.resolve()};
      this.inserting++;
      batch.done = this.write(items.map((q) => q.task)).finally(() => {
        this.active.splice(this.active.indexOf(batch), 1);
        for (const w of this.batchWaiters.splice(0)) w();
        this.pump();
      });
      this.active.push(batch);
      for (const w of this.spaceWaiters.splice(0)) w();
    }
    if (this.buffer.length === 0) {
      // The next task starts a new wait: its own ceiling and linger.
      this.timerFired = false;
      this.clearTimers();
    } else if (this.active.length < max) this.armFlushTimer();
  }

  /** Pumps at the end of the current turn, so tasks submitted in the same turn share a batch. */
  private kickSoon(): void {
    if (this.kickQueued) return;
    this.kickQueued = true;
    queueMicrotask(() => {
      this.kickQueued = false;
      this.pump();
    });
  }

  /** Flushes the buffer `flushMs` from now, unless a flush is already planned. */
  private armFlushTimer(): void {
    if (this.timer) return;
    this.timer = this.o.clock.setTimeout(() => {
      this.timer = undefined;
      this.timerFired = true;
      this.pump();
    }, this.o.flushMs);
  }

  /** With a linger, holds the buffer's first task back `lingerMs` before group commit may write it. */
  private armLinger(): void {
    const linger = this.o.lingerMs ?? 0;
    if (linger <= 0 || this.lingerTimer) return;
    this.lingered = false;
    this.lingerTimer = this.o.clock.setTimeout(() => {
      this.lingerTimer = undefined;
      this.lingered = true;
      this.pump();
    }, linger);
  }

  private clearTimers(): void {
    if (this.timer) this.o.clock.clearTimeout(this.timer);
    this.timer = undefined;
    if (this.lingerTimer) this.o.clock.clearTimeout(this.lingerTimer);
    this.lingerTimer = undefined;
  }

  /** An INSERT returned (or was given up): the tasks that waited for it may go. */
  private insertDone(): void {
    this.inserting--;
    this.pump();
  }

  /**
   * Writes one batch, retrying while MySQL is unavailable; never rejects. A batch with traced tasks
   * gets a span (`ax.submit`: from the start of its write to its doorbells' confirm).
   */
  private async write(tasks: NewTask[]): Promise<void> {
    const span = tracing.enabled
      ? tracing.batchSpan(
          'ax.submit',
          tasks.map((t) => t.trace),
          {'ax.tasks': tasks.length},
        )
      : null;
    let written: Written | undefined;
    try {
      written = await this.insert(tasks);
    } finally {
      this.insertDone();
    }
    if (written) await this.ring(tasks, written);
    span?.end(written !== undefined, written ? undefined : this.failures.at(-1)?.error);
  }

  /**
   * Inserts one batch, retrying with backoff while MySQL is unavailable (or timing out); records a
   * failure and returns undefined when it gives up or the error is another.
   */
  private async insert(tasks: NewTask[]): Promise<Written | undefined> {
    const started = this.o.clock.monotonic();
    let retried = false;
    for (let attempt = 1; ; attempt++) {
      // The tasks due now are rung right after the commit, so the INSERT writes them marked
      // published. Decided just before the INSERT (whose run_at uses a later clock reading): a task
      // that falls due while the batch is written is unmarked, and the scheduler rings it.
      const nowMs = this.o.clock.now();
      const dueIds = tasks.filter((t) => (t.runAtMs === null ? t.submittedAtMs + t.delayMs <= nowMs : t.runAtMs <= nowMs)).map((t) => t.id);
      // The first attempt rings its due rows once they are written and locked, alongside the
      // COMMIT (the broker's fsync and MySQL's overlap; issue 22). A claim that gets there first
      // waits for the row lock; a rolled-back row is found by nobody, and a retry rings again.
      let early: Promise<EarlyPublish> | undefined;
      const beforeCommit =
        attempt === 1 && dueIds.length > 0
          ? (r: InsertResult): void => {
              early ??= this.publishEarly(this.dueOf(tasks, {result: r, dueIds, retried: false}));
            }
          : undefined;
      try {
        const result = await this.o.store.tasksInsert({
          tasks,
          actor: this.o.actor,
          ...(dueIds.length > 0 ? {markPublished: dueIds} : {}),
          ...(beforeCommit ? {beforeCommit} : {}),
        });
        return {result, dueIds, retried, ...(early ? {early} : {})};
      } catch (e) {
        const transient = isAxError(e, 'unavailable') || isAxError(e, 'timeout');
        const expired = this.o.giveUpAfterMs !== undefined && this.o.clock.monotonic() - started >= this.o.giveUpAfterMs;
        if (!transient || expired) {
          this.o.logger.error('submit batch failed', {tasks: tasks.length, error: errorMessage(e)});
          this.failures.push({ids: tasks.map((t) => t.id), error: errorMessage(e), code: transient ? 'unavailable' : 'internal'});
          return undefined;
        }
        const delay = backoffMs(attempt, SUBMIT_RETRY, this.o.random);
        this.o.logger.warn('submit batch: MySQL unavailable, retrying', {
          tasks: tasks.length,
          attempt,
          retryInMs: Math.round(delay),
          error: errorMessage(e),
        });
        retried = true;
        await sleep(this.o.clock, delay);
      }
    }
  }

  /** Publishes `due` before the COMMIT of their rows; never rejects. */
  private publishEarly(due: NewTask[]): Promise<EarlyPublish> {
    return this.o.broker.publish(doorbellsOf(due)).then(
      () => ({sent: new Set(due.map((t) => t.id))}),
      (error: unknown) => ({error}),
    );
  }

  /**
   * The tasks of a written batch to ring: rows this batch inserted, marked by its INSERT. After a
   * failed attempt, also its own rows found existing, still unclaimed: that attempt may have
   * committed (the connection died around COMMIT) with them marked, and nobody rang them. A
   * debounced task replaced in its own batch is written cancelled: not rung.
   */
  private dueOf(tasks: NewTask[], {result, dueIds, retried}: Written): NewTask[] {
    const inserted = new Set(result.inserted);
    const marked = new Set(dueIds);
    const ambiguous = new Set(
      retried ? result.existing.filter((e) => e.existingId === e.id && e.state === 'submitted' && e.fence === 0).map((e) => e.id) : [],
    );
    const replaced = new Set(result.replaced?.map((r) => r.id));
    return tasks.filter((t) => marked.has(t.id) && (inserted.has(t.id) || ambiguous.has(t.id)) && !replaced.has(t.id));
  }

  /**
   * Reports a written batch and rings its due tasks: those the early publish did not send, and
   * undoes their mark when a publish failed.
   */
  private async ring(tasks: NewTask[], written: Written): Promise<void> {
    const {result} = written;
    this.report.inserted += result.inserted.length;
    this.report.existing += result.existing.length;
    this.report.conflicts.push(...result.conflicts);
    if (result.throttled) (this.report.throttled ??= []).push(...result.throttled);
    const inserted = new Set(result.inserted);
    if (inserted.size > 0 && this.events.has('task:submitted')) {
      const perType = new Map<string, number>();
      for (const t of tasks) if (inserted.has(t.id)) perType.set(t.type, (perType.get(t.type) ?? 0) + 1);
      for (const [type, count] of perType) this.events.emit('task:submitted', {type, count});
    }
    const due = this.dueOf(tasks, written);
    const early = written.early ? await written.early : {sent: new Set<string>()};
    if (due.length === 0) return;
    try {
      if ('error' in early) throw early.error;
      const rest = due.filter((t) => !early.sent.has(t.id));
      if (rest.length > 0) await this.o.broker.publish(doorbellsOf(rest));
      if (this.events.has('doorbell:published'))
        this.events.emit('doorbell:published', {by: 'producer', count: due.length, ids: due.map((t) => t.id)});
    } catch (e) {
      this.report.unpublished += due.length;
      await forgetUnconfirmed(
        {store: this.o.store, logger: this.o.logger},
        due.map((t) => t.id),
        e,
      );
    }
  }
}

/** The doorbell messages of `tasks`: what a worker needs to route and claim them. */
function doorbellsOf(tasks: NewTask[]): TaskMessage[] {
  return tasks.map((t) => ({id: t.id, type: t.type, pool: t.pool, priority: t.priority}));
}
