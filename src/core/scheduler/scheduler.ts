import {hostname} from 'node:os';
import {errorMessage} from '../errors.js';
import type {Logger} from '../log.js';
import type {Broker} from '../broker/types.js';
import type {BackoffOptions} from '../retry/backoff.js';
import type {ReconcileOptions} from '../reconcile/reconcile.js';
import type {DispatchHoldStore, DlqScanStore, HeldForDispatch, HotPathStore, InspectStore, RescueStore} from '../store/types.js';
import {TimingWheel} from '../timing/wheel.js';
import {type Clock, type Random, type TimerHandle} from '../time.js';
import {AxEvents} from '../events.js';
import {Periodic, type Service, type StopOptions} from '../lifecycle.js';
import {countSchedulerEvents, type SchedulerCounters} from './counters.js';
import {DbClock} from './db-clock.js';
import {DeadLetterScanner} from './maintenance/dlq-scan.js';
import {Reconciler} from './maintenance/reconciler.js';
import {Rescuer} from './maintenance/rescuer.js';

/** What the scheduler needs of the task database. */
export type SchedulerStore = DispatchHoldStore &
  RescueStore &
  Pick<HotPathStore, 'outcomesApply' | 'doorbellsMark'> &
  Pick<InspectStore, 'failureGroups'> &
  DlqScanStore;

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
  /** How often the dead-letter scan reports new dead tasks (see DeadLetterScan). */
  dlqScanEveryMs: number;
  /** How far the scan's windows lag the database clock (default 1000 ms). */
  dlqScanSettleMs?: number;
  reconcile: {limit: number; rate: number; republishAfterMs: number};
  /** Hook called every load (cron occurrences are created here). */
  onLoad?: () => Promise<void>;
  /** Decides at fire time whether a held task should still be rung (cron overlap policy). */
  beforeFire?: (due: HeldForDispatch[]) => Promise<HeldForDispatch[]>;
  /** The cron part of every reconcile pass (see ReconcileOptions.cron). */
  reconcileCron?: ReconcileOptions['cron'];
  /** Where the scheduler (and its rescuer and reconciler) emit events (default: its own emitter). */
  events?: AxEvents;
  /**
   * Runs the rescuer, the reconciler and the dead-letter scan itself (default true). False: the
   * scheduler only dispatches (load, wheel, fire); `ax scheduler` hosts those as services of their
   * own (maintenance/), sharing `events`, so each can run alone.
   */
  maintenance?: boolean;
}

export interface SchedulerSummary extends SchedulerCounters {
  id: string;
  held: number;
  nextDueInMs: number | null;
  clockUncertaintyMs: number;
}

const CHUNK = 500;

/**
 * The scheduler: holds the tasks due within a short horizon (claimed in MySQL so that replicas do
 * not double-load), keeps them in a hashed timing wheel keyed by the database clock, and publishes
 * each when that clock has certainly reached its run_at — never before. A crash loses nothing: the
 * holds expire and another scheduler (or this one, restarted) rebuilds its wheel from MySQL. It
 * also runs the rescuer (expired worker leases), the reconciler and the dead-letter scan on their own
 * periods (maintenance/, one Service each), unless `maintenance: false` leaves them to the host.
 *
 * It emits scheduler:loaded, doorbell:published (by 'scheduler'), scheduler:publish-failed,
 * lease:expired, reconcile:done and dlq:new (the dead-letter scan) on `events`; `summary()` is computed by a subscriber of them.
 */
export class Scheduler implements Service {
  readonly id: string;
  readonly events: AxEvents;
  private readonly wheel: TimingWheel<HeldForDispatch>;
  /** Ids in the wheel (the wheel itself is a cache keyed by id; this is what the last load held). */
  private inWheel = new Set<string>();
  private readonly dbClock: DbClock;
  private fireTimer: TimerHandle | undefined;
  private readonly loops: Periodic[];
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
  private readonly s: SchedulerCounters;
  private readonly loader: Periodic;
  /** The maintenance run in this scheduler (none with `maintenance: false`). */
  private readonly maintenance: {rescuer: Rescuer; reconciler: Reconciler; dlqScanner: DeadLetterScanner} | undefined;
  private stopping: Promise<void> | undefined;

  constructor(private readonly o: SchedulerOptions) {
    this.id = o.id ?? `scheduler:${hostname()}:${process.pid}`;
    this.log = o.logger.child({scheduler: this.id});
    this.events =
      o.events ??
      new AxEvents({onListenerError: (e, name) => this.log.error('event listener failed', {event: name, error: errorMessage(e)})});
    this.s = countSchedulerEvents(this.events);
    this.dbClock = new DbClock(o.clock, () => o.store.clockNow());
    this.wheel = new TimingWheel<HeldForDispatch>({slots: 1024, tickMs: o.tickMs, startMs: 0});
    const loop = (name: string, everyMs: number, run: () => Promise<void>): Periodic =>
      new Periodic({name, clock: o.clock, everyMs, run, onError: (e) => this.log.warn(`${name} failed`, {error: errorMessage(e)})});
    this.loader = loop('scheduler load', o.loadEveryMs, () => this.load());
    this.loops = [this.loader];
    const m = {store: o.store, clock: o.clock, logger: this.log, events: this.events};
    this.maintenance =
      o.maintenance === false
        ? undefined
        : {
            rescuer: new Rescuer({
              ...m,
              random: o.random,
              backoff: o.backoff,
              actor: this.id,
              limit: o.reconcile.limit,
              everyMs: o.rescueEveryMs,
            }),
            reconciler: new Reconciler({
              ...m,
              broker: o.broker,
              random: o.random,
              backoff: o.backoff,
              ...o.reconcile,
              actor: this.id,
              everyMs: o.reconcileEveryMs,
              ...(o.reconcileCron ? {cron: o.reconcileCron} : {}),
            }),
            dlqScanner: new DeadLetterScanner({
              ...m,
              everyMs: o.dlqScanEveryMs,
              ...(o.dlqScanSettleMs === undefined ? {} : {settleMs: o.dlqScanSettleMs}),
            }),
          };
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
    // Deaths from now on are new to the dead-letter scan.
    await this.maintenance?.dlqScanner.begin();
    this.state = 'running';
    // Through the loader (so a stop() during it waits for it, as for any pass) and releases what it
    // took; the loops then never start.
    await this.loader.runOnce();
    if (this.state !== 'running') return;
    for (const l of this.loops) l.start();
    for (const m of this.maintained()) await m.start();
    this.log.info('scheduler started', {horizonMs: this.o.horizonMs, tickMs: this.o.tickMs, held: this.wheel.size});
  }

  /**
   * One pass of every loop, now: a load (which arms the firing), the firing of what is due, a
   * rescue, a reconcile and a dead-letter scan. Tests drive the scheduler with this instead of
   * waiting for periods.
   */
  async runOnce(): Promise<void> {
    await this.loader.runOnce();
    await this.fire();
    await this.maintenance?.rescuer.runOnce();
    await this.maintenance?.reconciler.runOnce();
    await this.maintenance?.dlqScanner.runOnce();
  }

  private maintained(): Array<Rescuer | Reconciler | DeadLetterScanner> {
    const m = this.maintenance;
    return m ? [m.rescuer, m.reconciler, m.dlqScanner] : [];
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
      this.events.emit('scheduler:loaded', {held: this.wheel.size, at: this.o.clock.now()});
      this.arm();
    } catch (e) {
      this.log.warn('scheduler load failed', {error: errorMessage(e)});
    }
  }

  /** Sets one timer for the earliest due entry: exact firing, not rounded up to the next tick. */
  private arm(): void {
    if (this.fireTimer) this.o.clock.clearTimeout(this.fireTimer);
    this.fireTimer = undefined;
    if (this.state !== 'running') return;
    const next = this.wheel.nextDueMs();
    if (next === undefined) return;
    this.fireTimer = this.o.clock.setTimeout(() => {
      this.fireTimer = undefined;
      this.track(this.fire());
    }, this.dbClock.delayUntil(next));
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
          const ids = chunk.map((t) => t.id);
          await this.o.store.doorbellsMark({rung: chunk.map((t) => ({id: t.id, fence: t.fence}))});
          if (this.loading) for (const id of ids) this.publishedDuringLoad.add(id);
          this.events.emit('doorbell:published', {by: 'scheduler', count: ids.length, ids});
        } catch (e) {
          // Still held: try again shortly (the hold outlives this by holdMs).
          this.events.emit('scheduler:publish-failed', {count: chunk.length, error: errorMessage(e)});
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

  /**
   * Stops the loops (waiting for their running passes), waits for a publish in progress, and lets
   * go of its holds so another scheduler takes them at once. `options` is accepted for the Service
   * contract: nothing a scheduler does outlasts one pass, so there is no grace period to cut.
   * Idempotent: a second call returns the first one's promise.
   */
  stop(_options: StopOptions = {}): Promise<void> {
    return (this.stopping ??= this.stopNow());
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  private async stopNow(): Promise<void> {
    if (this.state !== 'running') {
      this.state = 'stopped';
      return;
    }
    this.state = 'stopping';
    if (this.fireTimer) this.o.clock.clearTimeout(this.fireTimer);
    this.fireTimer = undefined;
    await Promise.all([...this.loops.map((l) => l.stop()), ...this.maintained().map((m) => m.stop())]);
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
