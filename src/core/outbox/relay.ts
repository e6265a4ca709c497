import {hostname} from 'node:os';
import {errorMessage, isAxError} from '../errors.js';
import type {Logger} from '../log.js';
import type {Broker} from '../broker/types.js';
import type {HotPathStore, InsertResult, OutboxRelayStore, OutboxRow} from '../store/types.js';
import type {NewTask} from '../task/model.js';
import type {TaskDefaults} from '../task/validate.js';
import type {Clock, Random} from '../time.js';
import {type BackoffShape, backoffMs} from '../retry/backoff.js';
import {AxEvents} from '../events.js';
import {Periodic, type Service, type StopOptions} from '../lifecycle.js';
import {outboxRowToTask} from './convert.js';
import {RelayPacing} from './pacing.js';
import {forgetUnconfirmed} from '../producer/forget.js';
import {countRelayEvents, type RelayStats} from './stats.js';
import type {TypeSelector} from '../cells/cells.js';

export type {RelayStats} from './stats.js';

export interface RelayOptions {
  outbox: OutboxRelayStore;
  store: Pick<HotPathStore, 'tasksInsert' | 'tasksInsertLinked' | 'doorbellsMark' | 'doorbellsForget'>;
  broker: Broker;
  clock: Clock;
  random: Random;
  logger: Logger;
  defaults: TaskDefaults;
  /** Unique per process (default relay:host:pid). */
  id?: string;
  /**
   * How often an idle relay looks for rows, all pass loops together looking every
   * interval/concurrency (default 1 s; see RelayPacing for the busy rules).
   */
  intervalMs: number;
  /** Rows per claim (default 500). */
  batchSize: number;
  /** A claimed row is taken back by another relay after this (default 30 s). */
  leaseMs: number;
  /** Sent rows are deleted after this (default 7 d); 0 keeps them. */
  retentionMs: number;
  /**
   * Pass loops, each with its batch in flight (default 3: while one claims, one writes into ax and
   * one publishes; on a 2-core machine 3 drained a backlog ~8% faster than 2 in 7 of 8 paired runs).
   * An idle relay's loops poll on staggered slots: `concurrency` empty claims per interval.
   */
  concurrency?: number;
  /** Sent rows deleted per purge statement (default 5000); a full purge is followed by another. */
  purgeBatch?: number;
  /** Where the relay emits its events (default: an emitter of its own, see `events`). */
  events?: AxEvents;
  /** The rows it takes, by type: its cells' (see cells/cells.ts typeSelector); default every row. */
  types?: TypeSelector;
}

/** A doorbell to ring: the task's id in ax and the fence it is rung for. */
type Ring = {id: string; type: string; pool: NewTask['pool']; priority: NewTask['priority']; fence: number};
const ringOf = (t: NewTask, id: string, fence: number): Ring => ({id, type: t.type, pool: t.pool, priority: t.priority, fence});
/**
 * Due at `nowMs` (the relay's clock): no run_at (now) or one already past, and not waiting for
 * parents (a dependent becomes due, and is rung, when its last parent succeeds).
 */
const isDue = (t: NewTask, nowMs: number): boolean => t.after === undefined && (t.runAtMs === null || t.runAtMs <= nowMs);

/** Runs of a batch at most handed to the other passes' claims (each is a condition of theirs). */
const MAX_SKIP_RUNS = 8;
/**
 * A batch's ids as runs of consecutive ids, `[from, to]`, for the other passes' claims to pass over
 * (OutboxClaimParams.skip): every id in a run is one of the batch's rows. None when the batch is
 * scattered over more than MAX_SKIP_RUNS runs (the claims then read its rows, as without the hint).
 */
export function heldRuns(ids: readonly number[]): Array<[number, number]> {
  const sorted = [...ids].sort((a, b) => a - b);
  const runs: Array<[number, number]> = [];
  for (const id of sorted) {
    const last = runs.at(-1);
    if (last && id <= last[1] + 1) last[1] = Math.max(last[1], id);
    else runs.push([id, id]);
    if (runs.length > MAX_SKIP_RUNS) return [];
  }
  return runs;
}

/** The wait after a failed pass (n failures in a row): 500 ms doubling to 30 s, jittered to ×0.5–1.5. */
export const PASS_BACKOFF: BackoffShape = {firstMs: 500, maxMs: 30_000, jitter: [0.5, 1.5]};
/** Sent rows deleted per statement by the housekeeping purge. */
const PURGE_BATCH = 5000;
/** How often the relay refreshes the outbox lag, and purges sent rows past their retention. */
const LAG_EVERY_MS = 10_000;
const PURGE_EVERY_MS = 60_000;

/**
 * The outbox relay: claims up to 500 unsent rows with SKIP LOCKED in a short transaction, writes
 * the tasks into ax idempotently (the new ones due now written already marked published, as the
 * producer does), publishes the due ones with confirms and only then marks the rows sent; tasks
 * that were already in ax and not yet run are rung too, and marked published after the confirm.
 * When the publish fails, the new tasks' mark is undone (doorbellsForget) and the batch is handed
 * back; if the relay dies between the commit and the confirm, its rows are claimed again once the
 * lease runs out, and the reconciler rings tasks whose mark is older than AX_REPUBLISH_AFTER. Rows
 * that can never be relayed are marked failed and skipped. MySQL or RabbitMQ errors hand the
 * batch back and back off; a broker memory alarm pauses claiming until it clears.
 *
 * Its passes (`concurrency` loops side by side), the lag refresh and the purge are periodic loops
 * on the injected clock. A pass that found rows is followed by another at once (so throughput is
 * not capped at a batch per interval); an empty one by a 20 ms busy poll while rows were found
 * within the last interval, else by its loop's next idle slot, the loops staggered over the
 * interval (RelayPacing). It emits relay:batch, relay:pass, relay:blocked, relay:lag,
 * relay:purged and doorbell:published (by 'relay', once confirmed); `stats` is a subscriber of them.
 */
export class Relay implements Service {
  readonly id: string;
  readonly events: AxEvents;
  /** Counters and the outbox lag (a subscriber of `events`). */
  readonly stats: RelayStats;
  private running = false;
  /** Set by stop(): a purge in progress ends after its statement. */
  private stopped = false;
  private brokerUp = true;
  /**
   * Set when a publish fails: a doorbell of it, which `probe` rings again. While set, the relay is
   * not ready. Only RabbitMQ's answer to a publish of this relay (or a new connection) clears it: a
   * batch that had nothing to ring says nothing about RabbitMQ, any more than a pass that found no rows.
   */
  private failedRing: Ring | undefined;
  /** When `probe` may ring next: an interval after the failure, then once per interval, whichever loop gets there. */
  private nextProbeAt = 0;
  private readonly passes: Periodic[];
  private readonly pacing: RelayPacing;
  /** The id runs of the batches in flight (heldRuns), skipped by the other passes' claims. */
  private readonly held = new Set<Array<[number, number]>>();
  private readonly lagLoop: Periodic;
  private readonly purgeLoop: Periodic;
  private stopping: Promise<void> | undefined;
  private readonly log: Logger;

  constructor(private readonly o: RelayOptions) {
    this.id = o.id ?? `relay:${hostname()}:${process.pid}`;
    this.log = o.logger.child({relay: this.id});
    this.events =
      o.events ??
      new AxEvents({onListenerError: (e, name) => this.log.error('event listener failed', {event: name, error: errorMessage(e)})});
    this.stats = countRelayEvents(this.events);
    o.broker.on('blocked', () => this.events.emit('relay:blocked', {blocked: true}));
    o.broker.on('unblocked', () => this.events.emit('relay:blocked', {blocked: false}));
    o.broker.on('disconnected', () => (this.brokerUp = false));
    o.broker.on('connected', () => {
      this.brokerUp = true;
      // A new connection is a new start: an alarm or a failed publish on the old one is over.
      if (this.stats.blocked) this.events.emit('relay:blocked', {blocked: false});
      this.publishSucceeded();
    });
    const loops = o.concurrency ?? 3;
    this.pacing = new RelayPacing({clock: o.clock, intervalMs: o.intervalMs, loops});
    this.passes = Array.from({length: loops}, (_, i) => this.passLoop(i));
    this.lagLoop = new Periodic({
      name: 'relay lag',
      clock: o.clock,
      everyMs: LAG_EVERY_MS,
      run: async () => this.events.emit('relay:lag', {lag: await this.o.outbox.outboxLag()}),
      onError: (e) => this.log.warn('relay: reading the outbox lag failed', {error: errorMessage(e)}),
    });
    this.purgeLoop = new Periodic({
      name: 'relay purge',
      clock: o.clock,
      everyMs: PURGE_EVERY_MS,
      run: () => this.purge(),
      onError: (e) => this.log.warn('relay: purging sent rows failed', {error: errorMessage(e)}),
    });
  }

  /**
   * One pass loop: a pass relays one batch. What follows it is RelayPacing's rule (rows found: at
   * once; nothing found: a short busy poll, or the loop's next idle slot); a failure is followed by
   * a jittered exponential backoff (reset by a success), and a pass while the broker blocks
   * publishers claims nothing and waits the interval.
   */
  private passLoop(i: number): Periodic {
    let errors = 0;
    return new Periodic({
      name: `relay pass ${i + 1}`,
      clock: this.o.clock,
      everyMs: this.o.intervalMs,
      run: async () => {
        if (this.stats.blocked) return this.o.intervalMs;
        const n = await this.once();
        await this.probe();
        errors = 0;
        this.events.emit('relay:pass', {at: this.o.clock.now(), error: null});
        return this.pacing.afterPass(i, n);
      },
      onError: (e) => {
        if (this.stopped) return; // a pass cut short by stop(): its batch was handed back
        errors++;
        this.events.emit('relay:pass', {at: this.o.clock.now(), error: errorMessage(e)});
        const delay = backoffMs(errors, PASS_BACKOFF, this.o.random);
        this.log.warn('relay pass failed; backing off', {error: errorMessage(e), retryInMs: Math.round(delay)});
        return delay;
      },
    });
  }

  /**
   * Ready: a pass succeeded recently, RabbitMQ is connected and not blocking publishers, and the
   * last publish did not fail. A pass that finds no rows, or a batch with nothing to ring (a
   * scheduler rang its tasks meanwhile), says nothing about RabbitMQ: after a failed publish only a
   * confirmed one (a batch's, or `probe`'s) or a new connection makes the relay ready again.
   */
  ready(maxAgeMs = 5 * this.o.intervalMs + 30_000): boolean {
    const {lastSuccessAt, blocked} = this.stats;
    return (
      this.running &&
      this.brokerUp &&
      !blocked &&
      this.failedRing === undefined &&
      lastSuccessAt !== null &&
      this.o.clock.now() - lastSuccessAt < maxAgeMs
    );
  }

  /** Starts the loops; resolves at once (passes run in the background). Idempotent. */
  start(): Promise<void> {
    if (this.running || this.stopped) return Promise.resolve();
    this.running = true;
    // Each loop claims its own rows (SKIP LOCKED), so batches overlap without sharing anything.
    // Their first passes are staggered over one interval: so are their idle polls from then on.
    this.pacing.begin();
    this.passes.forEach((p, i) => p.start(this.pacing.firstWait(i)));
    this.lagLoop.start(0);
    if (this.o.retentionMs > 0) this.purgeLoop.start();
    return Promise.resolve();
  }

  /**
   * One pass of every loop, now: a batch (errors reported as relay:pass, not thrown), the lag and,
   * with a retention, a purge. Tests drive the relay with this instead of waiting for periods.
   */
  async runOnce(): Promise<void> {
    await this.passes[0]?.runOnce();
    await this.lagLoop.runOnce();
    if (this.o.retentionMs > 0) await this.purgeLoop.runOnce();
  }

  /** Relays one batch; returns how many rows it claimed (0: nothing to do). Throws on server errors. */
  async once(): Promise<number> {
    const skip = [...this.held].flat();
    const rows = await this.o.outbox.outboxClaim({
      owner: this.id,
      limit: this.o.batchSize,
      leaseMs: this.o.leaseMs,
      ...(this.o.types === undefined || this.o.types.all ? {} : {types: this.o.types}),
      ...(skip.length > 0 ? {skip} : {}),
    });
    if (rows.length === 0) return 0;
    // Until its rows are marked sent, failed or handed back, the other passes' claims skip them.
    const runs = heldRuns(rows.map((r) => r.id));
    this.held.add(runs);
    try {
      await this.relay(rows);
    } catch (e) {
      await this.o.outbox
        .outboxRelease({ids: rows.map((r) => r.id), owner: this.id, error: `relay: ${errorMessage(e)}`})
        .catch(() => undefined);
      throw e;
    } finally {
      this.held.delete(runs);
    }
    return rows.length;
  }

  /**
   * While the last publish failed (failedRing) and RabbitMQ is connected, rings that doorbell
   * again, at most once per interval: how a relay with nothing of its own to ring finds out that
   * RabbitMQ takes its publishes again (the rows whose publish failed may all have been sent
   * meanwhile, their tasks rung by a scheduler, and a quiet outbox may bring no new ones for long).
   * A doorbell is only a hint: one for a task already run is dropped as stale by the worker, one for
   * a task still waiting rings it. Its failure only keeps the relay not ready; the pass is not
   * failed for it (its batch, if any, went through).
   */
  private async probe(): Promise<void> {
    const ring = this.failedRing;
    const now = this.o.clock.now();
    if (ring === undefined || !this.brokerUp || now < this.nextProbeAt) return;
    this.nextProbeAt = now + this.o.intervalMs;
    try {
      await this.o.broker.publish([ring]);
    } catch (e) {
      this.log.debug('relay: RabbitMQ still refuses publishes', {error: errorMessage(e)});
      return;
    }
    // Confirmed after any publish queued before it (the broker confirms in order): evidence enough.
    // Another loop's batch may have cleared it meanwhile.
    if (this.failedRing !== undefined) this.log.info('relay: RabbitMQ takes publishes again');
    this.publishSucceeded();
  }

  private publishSucceeded(): void {
    this.failedRing = undefined;
  }

  private async relay(rows: OutboxRow[]): Promise<void> {
    let published = 0;
    const tasks: Array<{row: OutboxRow; task: NewTask}> = [];
    const failed: Array<{id: number; error: string}> = [];
    for (const row of rows) {
      const r = outboxRowToTask(row, this.o.defaults);
      if ('error' in r) failed.push({id: row.id, error: r.error});
      else tasks.push({row, task: r.task});
    }
    // Rows naming the same task id (a repeated dedup key or task_id) go to ax in separate rounds,
    // so that each result (inserted, existing, conflict) belongs to exactly one row: a conflicting
    // row must not fail the rows before it that named the same task with the right content.
    const rounds: Array<typeof tasks> = [];
    const seen = new Map<string, number>();
    for (const t of tasks) {
      const i = seen.get(t.task.id) ?? 0;
      seen.set(t.task.id, i + 1);
      (rounds[i] ??= []).push(t);
    }
    const ok: number[] = [];
    /** Due tasks to ring, by the id they have in ax (rows naming one task ring it once). */
    const due = new Map<string, Ring>();
    /** Of those, the ones this batch wrote new, marked published by their INSERT (fence 0). */
    const marked = new Set<string>();
    /** The type of each task this batch wrote new (task:submitted). */
    const fresh: string[] = [];
    for (const round of rounds) {
      // The tasks due now are rung right after the commit, so their INSERT writes them marked
      // published, as the producer's does (no doorbellsMark for them). Decided before the INSERT:
      // one that falls due while the batch is written is rung too, and marked after the confirm.
      const markNow = this.o.clock.now();
      const markIds = round.filter((t) => isDue(t.task, markNow)).map((t) => t.task.id);
      const {result, refused} = await this.insertIsolating(round, markIds);
      failed.push(...refused);
      const refusedIds = new Set(refused.map((f) => f.id));
      const conflicts = new Map(result.conflicts.map((c) => [c.id, c.reason]));
      const existing = new Map(result.existing.map((e) => [e.id, e]));
      const inserted = new Set(result.inserted);
      const markedHere = new Set(markIds);
      for (const t of round) {
        if (refusedIds.has(t.row.id)) continue;
        const reason = conflicts.get(t.task.id);
        if (reason !== undefined) {
          failed.push({id: t.row.id, error: `conflict: ${reason}`});
          continue;
        }
        ok.push(t.row.id);
        const e = existing.get(t.task.id);
        if (inserted.has(t.task.id)) {
          fresh.push(t.task.type);
          if (markedHere.has(t.task.id)) {
            due.set(t.task.id, ringOf(t.task, t.task.id, 0));
            marked.add(t.task.id);
          } else if (isDue(t.task, this.o.clock.now())) due.set(t.task.id, ringOf(t.task, t.task.id, 0));
        } else if (e?.state === 'submitted' && !due.has(e.existingId) && isDue(t.task, this.o.clock.now())) {
          // Not yet run, including one a crashed relay wrote but never rang (the claim absorbs
          // duplicates), rung by the id the task has in ax: a row with the same dedup key and content
          // as an existing task is that task, whatever task_id the row named. Marked after the
          // confirm, at the fence it was found with.
          due.set(e.existingId, ringOf(t.task, e.existingId, e.fence));
        }
      }
    }
    if (this.events.has('task:submitted')) {
      const perType = new Map<string, number>();
      for (const t of fresh) perType.set(t, (perType.get(t) ?? 0) + 1);
      for (const [type, count] of perType) this.events.emit('task:submitted', {type, count});
    }
    if (due.size > 0) {
      try {
        await this.o.broker.publish([...due.values()]);
      } catch (e) {
        this.failedRing = due.values().next().value;
        this.nextProbeAt = this.o.clock.now() + this.o.intervalMs;
        // The batch is handed back either way, and its next pass rings them.
        await forgetUnconfirmed({store: this.o.store, logger: this.log}, [...marked], e);
        throw e;
      }
      this.publishSucceeded();
      published = due.size;
      const ids = [...due.keys()];
      this.events.emit('doorbell:published', {by: 'relay', count: ids.length, ids});
      // Rung is what matters; a failed mark only means a scheduler may ring once more.
      const found = [...due.values()].filter((d) => !marked.has(d.id)).map((d) => ({id: d.id, fence: d.fence}));
      if (found.length > 0)
        await this.o.store
          .doorbellsMark({rung: found})
          .catch((e: unknown) => this.log.warn('could not mark relayed tasks published', {error: errorMessage(e)}));
    }
    // Only after the confirm: the rows are sent.
    const relayed = await this.o.outbox.outboxMarkSent({ids: ok, owner: this.id});
    if (failed.length > 0) {
      this.log.warn('outbox rows that can never be relayed were marked failed', {rows: failed.length, first: failed[0]});
      await this.o.outbox.outboxMarkFailed({rows: failed, owner: this.id});
    }
    this.events.emit('relay:batch', {rows: rows.length, relayed, published, failed: failed.length});
  }

  /**
   * Writes one round of tasks into ax. If ax's database refuses the batch for its data (the store
   * says invalid_input: a value the row checks let through), the batch is halved until the refused
   * rows are found; they are returned to be marked failed, so one bad row never blocks the rest.
   * Any other error (connection, timeout, deadlock, read-only server) is thrown: the batch is
   * handed back and retried, and no row is blamed for it.
   */
  private async insertIsolating(
    items: Array<{row: OutboxRow; task: NewTask}>,
    markPublished: readonly string[],
  ): Promise<{result: InsertResult; refused: Array<{id: number; error: string}>}> {
    const result: InsertResult = {inserted: [], existing: [], conflicts: []};
    const refused: Array<{id: number; error: string}> = [];
    const write = async (part: typeof items): Promise<void> => {
      try {
        // Dependents (outbox deps) go with their edges (tasksInsertLinked), after the plain tasks,
        // which may be their parents; the parents they make due at once are rung by the scheduler.
        const plain = part.filter((t) => t.task.after === undefined).map((t) => t.task);
        const linked = part.filter((t) => t.task.after !== undefined).map((t) => t.task);
        for (const [tasks, write] of [
          [plain, () => this.o.store.tasksInsert({tasks: plain, actor: this.id, ...(markPublished.length > 0 ? {markPublished} : {})})],
          [linked, () => this.o.store.tasksInsertLinked({tasks: linked, actor: this.id})],
        ] as const) {
          if (tasks.length === 0) continue;
          const r = await write();
          result.inserted.push(...r.inserted);
          result.existing.push(...r.existing);
          result.conflicts.push(...r.conflicts);
        }
      } catch (e) {
        if (!isAxError(e, 'invalid_input')) throw e;
        if (part.length === 1) {
          refused.push({id: part[0]!.row.id, error: `ax's database refused the task: ${errorMessage(e.cause ?? e)}`});
          return;
        }
        const mid = Math.ceil(part.length / 2);
        await write(part.slice(0, mid));
        await write(part.slice(mid));
      }
    };
    await write(items);
    return {result, refused};
  }

  /** Deletes sent rows past the retention, statement after statement while one comes back full. */
  private async purge(): Promise<void> {
    // Keep deleting while a purge comes back full, so the purge keeps up with any relay rate.
    const limit = this.o.purgeBatch ?? PURGE_BATCH;
    for (let purged = limit; purged === limit && !this.stopped;) {
      purged = await this.o.outbox.outboxPurgeSent({olderThanMs: this.o.retentionMs, limit});
      if (purged > 0) this.events.emit('relay:purged', {rows: purged});
    }
  }

  /**
   * Stops after the batches in progress (their rows are marked sent or handed back) and the
   * housekeeping pass in progress. `options` is accepted for the Service contract: nothing the
   * relay does outlasts one pass. Idempotent: a second call returns the first one's promise.
   */
  stop(_options: StopOptions = {}): Promise<void> {
    return (this.stopping ??= this.stopNow());
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  private async stopNow(): Promise<void> {
    this.stopped = true;
    const wasRunning = this.running;
    this.running = false;
    await Promise.all([...this.passes, this.lagLoop, this.purgeLoop].map((l) => l.stop()));
    if (wasRunning) this.log.info('relay stopped', {relayed: this.stats.relayed, failedRows: this.stats.failedRows});
  }
}
