import {hostname} from 'node:os';
import {errorMessage} from '../errors.js';
import type {Logger} from '../log.js';
import type {Broker} from '../broker/types.js';
import type {BackoffOptions} from '../retry/backoff.js';
import {reconcile, rescueExpired, type ReconcileOptions, type ReconcileReport} from '../reconcile/reconcile.js';
import type {DispatchHoldStore, HeldForDispatch, HotPathStore, RescueStore} from '../store/types.js';
import {TimingWheel} from '../timing/wheel.js';
import {type Clock, type Random, type TimerHandle} from '../time.js';
import {DbClock} from './db-clock.js';

/** What the scheduler needs of the task database. */
export type SchedulerStore = DispatchHoldStore & RescueStore & Pick<HotPathStore, 'outcomesApply' | 'doorbellsMark'>;

export interface SchedulerOptions {
  /** Holds and the database clock; the rescuer's and reconciler's reads; outcomes and doorbell marks. */
  store: SchedulerStore;
  broker: Broker;
  clock: Clock;
  random: Random;
  logger: Logger;
  backoff: BackoffOptions;
  /** Unique per process (default host:pid). */
  id?: string;
  /** Wheel tick (default 100 ms). Firing is exact to the millisecond regardless: see arm(). */
  tickMs: number;
  /** Load tasks due within this much (default 10 s) … */
  horizonMs: number;
  /** … every this often (default 1 s). */
  loadEveryMs: number;
  /** A hold on a task lasts until max(run_at, now) + this; then another scheduler may take it. */
  holdMs: number;
  /** Most tasks held at once (bounds memory). */
  maxHeld: number;
  rescueEveryMs: number;
  reconcileEveryMs: number;
  reconcile: {limit: number; rate: number; republishAfterMs: number};
  /** Hook called every load (cron occurrences are created here). */
  onLoad?: () => Promise<void>;
  /** Decides at fire time whether a held task should still be rung (cron overlap policy). */
  beforeFire?: (due: HeldForDispatch[]) => Promise<HeldForDispatch[]>;
  /** The cron part of every reconcile pass (see ReconcileOptions.cron). */
  reconcileCron?: ReconcileOptions['cron'];
}

export interface SchedulerSummary {
  id: string;
  held: number;
  nextDueInMs: number | null;
  published: number;
  publishFailures: number;
  loads: number;
  rescued: number;
  lastReconcile: ReconcileReport | null;
  /** When the last load from MySQL succeeded (epoch ms), or null before the first. */
  lastLoadAt: number | null;
  clockUncertaintyMs: number;
}

const CHUNK = 500;

/**
 * The scheduler: holds the tasks due within a short horizon (claimed in MySQL so that replicas do
 * not double-load), keeps them in a hashed timing wheel keyed by the database clock, and publishes
 * each when that clock has certainly reached its run_at — never before. A crash loses nothing: the
 * holds expire and another scheduler (or this one, restarted) rebuilds its wheel from MySQL. It
 * also runs the rescuer (expired worker leases) and the reconciler on their own periods.
 */
export class Scheduler {
  readonly id: string;
  private readonly wheel: TimingWheel<HeldForDispatch>;
  /** Ids in the wheel (the wheel itself is a cache keyed by id; this is what the last load held). */
  private inWheel = new Set<string>();
  private readonly dbClock: DbClock;
  private readonly timers = new Map<string, TimerHandle>();
  private state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  /**
   * Ids being published, and ids published while a load was reading: a load that read a row before
   * its publish was recorded must not put it back in the wheel (it would ring twice).
   */
  private readonly publishing = new Set<string>();
  private readonly publishedDuringLoad = new Set<string>();
  private loading = false;
  private firing = false;
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly log: Logger;
  private readonly s: Omit<SchedulerSummary, 'id' | 'held' | 'nextDueInMs' | 'clockUncertaintyMs'> = {
    published: 0,
    publishFailures: 0,
    loads: 0,
    rescued: 0,
    lastReconcile: null,
    lastLoadAt: null,
  };
  private readonly listeners = new Set<(ids: string[]) => void>();

  constructor(private readonly o: SchedulerOptions) {
    this.id = o.id ?? `scheduler:${hostname()}:${process.pid}`;
    this.log = o.logger.child({scheduler: this.id});
    this.dbClock = new DbClock(o.clock, () => o.store.clockNow());
    this.wheel = new TimingWheel<HeldForDispatch>({slots: 1024, tickMs: o.tickMs, startMs: 0});
  }

  /** Calls `fn` with the ids of every batch this scheduler published (tests, metrics). */
  onPublished(fn: (ids: string[]) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  summary(): SchedulerSummary {
    const next = this.wheel.nextDueMs();
    return {
      id: this.id,
      held: this.wheel.size,
      nextDueInMs: next === undefined ? null : Math.round(this.dbClock.delayUntil(next)),
      clockUncertaintyMs: this.dbClock.uncertaintyMs,
      ...this.s,
    };
  }

  /** Ready: running, and a load from MySQL succeeded within five load periods (at least 30 s). */
  ready(): boolean {
    const last = this.s.lastLoadAt;
    return this.state === 'running' && last !== null && this.o.clock.now() - last < Math.max(5 * this.o.loadEveryMs, 30_000);
  }

  /**
   * Syncs the clock, loads once and starts the loops. Throws AxError('unavailable'). Idempotent.
   * A stop() called while this runs waits for the first load and releases what it took; the loops
   * then never start.
   */
  async start(): Promise<void> {
    if (this.state !== 'new') return;
    await this.dbClock.sync();
    if (this.state !== 'new') return;
    this.wheel.advance(this.dbClock.safeNow());
    this.state = 'running';
    // Tracked like the loops' work, so that a stop() during it waits for its holds to release them.
    const first = this.load();
    this.track(first);
    await first;
    if (this.state !== 'running') return;
    this.every('load', this.o.loadEveryMs, () => this.load());
    this.every('rescue', this.o.rescueEveryMs, () => this.rescue());
    this.every('reconcile', this.o.reconcileEveryMs, () => this.runReconcile());
    this.log.info('scheduler started', {horizonMs: this.o.horizonMs, tickMs: this.o.tickMs, held: this.wheel.size});
  }

  private every(name: string, ms: number, fn: () => Promise<void>): void {
    const tick = (): void => {
      this.timers.set(
        name,
        this.o.clock.setTimeout(() => {
          this.timers.delete(name);
          this.track(fn().finally(() => this.state === 'running' && tick()));
        }, ms),
      );
    };
    tick();
  }

  private track(p: Promise<unknown>): void {
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p));
  }

  /** Takes hold of what is due soon and (re)builds the wheel from it. Never blocks firing. */
  private async load(): Promise<void> {
    if (this.loading) return;
    this.loading = true;
    this.publishedDuringLoad.clear();
    try {
      await this.loadNow();
    } finally {
      this.loading = false;
      this.publishedDuringLoad.clear();
    }
  }

  private async loadNow(): Promise<void> {
    try {
      await this.dbClock.sync();
      if (this.o.onLoad) await this.o.onLoad();
      const held = await this.o.store.holdsTake({
        owner: this.id,
        horizonMs: this.o.horizonMs,
        holdMs: this.o.holdMs,
        limit: this.o.maxHeld,
      });
      const keep = new Set<string>();
      for (const h of held) {
        if (this.publishing.has(h.id) || this.publishedDuringLoad.has(h.id)) continue;
        keep.add(h.id);
        if (this.wheel.dueOf(h.id) !== h.runAt.getTime()) this.wheel.schedule(h.id, h.runAt.getTime(), h);
      }
      // Tasks we no longer hold (claimed, cancelled, rung by someone else) leave the wheel.
      for (const id of [...this.inWheel]) if (!keep.has(id)) this.wheel.cancel(id);
      this.inWheel = keep;
      this.s.loads++;
      this.s.lastLoadAt = this.o.clock.now();
      this.arm();
    } catch (e) {
      this.log.warn('scheduler load failed', {error: errorMessage(e)});
    }
  }

  /** Sets one timer for the earliest due entry: exact firing, not rounded up to the next tick. */
  private arm(): void {
    const old = this.timers.get('fire');
    if (old) this.o.clock.clearTimeout(old);
    this.timers.delete('fire');
    if (this.state !== 'running') return;
    const next = this.wheel.nextDueMs();
    if (next === undefined) return;
    this.timers.set(
      'fire',
      this.o.clock.setTimeout(() => {
        this.timers.delete('fire');
        this.track(this.fire());
      }, this.dbClock.delayUntil(next)),
    );
  }

  private async fire(): Promise<void> {
    if (this.firing) return;
    this.firing = true;
    try {
      await this.fireNow();
    } finally {
      this.firing = false;
      this.arm();
    }
  }

  private async fireNow(): Promise<void> {
    let due = this.wheel.advance(this.dbClock.safeNow()).map((f) => f.value as HeldForDispatch);
    const all = due.map((t) => t.id);
    for (const id of all) {
      this.inWheel.delete(id);
      this.publishing.add(id);
    }
    try {
      if (due.length > 0 && this.o.beforeFire) due = await this.o.beforeFire(due);
      for (let i = 0; i < due.length; i += CHUNK) {
        const chunk = due.slice(i, i + CHUNK);
        try {
          await this.o.broker.publish(chunk);
          await this.o.store.doorbellsMark({rung: chunk.map((t) => ({id: t.id, fence: t.fence}))});
          if (this.loading) for (const t of chunk) this.publishedDuringLoad.add(t.id);
          this.s.published += chunk.length;
          for (const l of this.listeners) l(chunk.map((t) => t.id));
        } catch (e) {
          // Still held: try again shortly (the hold outlives this by holdMs).
          this.s.publishFailures += chunk.length;
          this.log.warn('publishing due tasks failed; retrying in 1s', {tasks: chunk.length, error: errorMessage(e)});
          const retryAt = this.dbClock.now() + 1000;
          for (const t of chunk) {
            this.wheel.schedule(t.id, retryAt, t);
            this.inWheel.add(t.id);
          }
        }
      }
    } catch (e) {
      this.log.warn('scheduler fire failed', {error: errorMessage(e)});
    } finally {
      for (const id of all) this.publishing.delete(id);
    }
  }

  private async rescue(): Promise<void> {
    try {
      const r = await rescueExpired({...this.o, actor: this.id, limit: this.o.reconcile.limit});
      this.s.rescued += r.failed + r.dead;
    } catch (e) {
      this.log.warn('rescue failed', {error: errorMessage(e)});
    }
  }

  private async runReconcile(): Promise<void> {
    try {
      const cron = this.o.reconcileCron ? {cron: this.o.reconcileCron} : {};
      this.s.lastReconcile = await reconcile({...this.o, ...this.o.reconcile, dryRun: false, actor: this.id, ...cron});
    } catch (e) {
      this.log.warn('reconcile failed', {error: errorMessage(e)});
    }
  }

  /**
   * Stops the loops, waits for a publish in progress, and lets go of its holds so another
   * scheduler takes them at once. Idempotent.
   */
  async stop(): Promise<void> {
    if (this.state !== 'running') {
      this.state = 'stopped';
      return;
    }
    this.state = 'stopping';
    for (const t of this.timers.values()) this.o.clock.clearTimeout(t);
    this.timers.clear();
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
    await this.o.store
      .holdsRelease({owner: this.id})
      .catch((e: unknown) => this.log.warn('releasing holds failed; they expire on their own', {error: errorMessage(e)}));
    this.wheel.clear();
    this.inWheel.clear();
    this.state = 'stopped';
    this.log.info('scheduler stopped', {published: this.s.published, rescued: this.s.rescued});
  }
}
