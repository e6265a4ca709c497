/**
 * The worker's view of flow control: the registry snapshot the admission step decides from,
 * refreshed every AX_FLOW_REFRESH on the injected clock (its decisions on the database clock the
 * snapshot was read at, never the worker's own: see dbNow), plus the parking and the handler
 * registration that go with it, and the evaluation of the types' breakers on each refresh. The
 * worker asks `admit()` before a claim and parks what it refuses; the claim's transaction decides
 * again from the types' rows (`locked()` names the rows it must lock for update: limits, probes).
 * The policies are pure (admission.ts, breaker.ts, limits.ts).
 */
import {errorMessage} from '../errors.js';
import type {Logger} from '../log.js';
import {Periodic} from '../lifecycle.js';
import type {Broker} from '../broker/types.js';
import type {ClockOffset, FlowStore, HotPathStore, ParkedKind, TypeRecord} from '../store/types.js';
import type {Clock} from '../time.js';
import type {AxEvents} from '../events.js';
import {limitsOf} from './limits.js';
import {releaseParked} from './release.js';
import {type BreakerState, breakerSettings, CLOSED, countsSpanMs, evaluate, OUTCOMES_KEPT_MS, type SecondCount} from './breaker.js';
import {
  type Admission,
  type AdmissionOptions,
  ADMISSION_DEFAULTS,
  admit,
  EMPTY_SNAPSHOT,
  type FlowSnapshot,
  lockedAmong,
  snapshotOf,
} from './admission.js';

export type GateStore = Pick<
  FlowStore,
  'flowView' | 'tasksDefer' | 'typesRegister' | 'parkedRelease' | 'outcomeCounts' | 'outcomesPurge' | 'breakerTransition'
> &
  Pick<HotPathStore, 'doorbellsMark'>;

export interface FlowGateOptions {
  store: GateStore;
  clock: Clock;
  logger: Logger;
  /** How often the snapshot is read again (AX_FLOW_REFRESH, default 1 s): a pause takes effect within it. */
  refreshMs?: number;
  /** A worker is live while its heartbeat is at most this old (default 3 heartbeats). */
  liveMs?: number;
  admission?: Partial<AdmissionOptions>;
  /** AX_UNHANDLED_DEAD_AFTER (default 1 h). */
  unhandledDeadAfterMs?: number;
  /** Evaluate the types' breakers on each refresh (default true). */
  breakers?: boolean;
}

/** Outcome rows are purged every this many refreshes. */
const PURGE_EVERY = 60;

export class FlowGate {
  private snap: FlowSnapshot = EMPTY_SNAPSHOT;
  /** The monotonic time the snapshot's read returned (its `at` is the database clock then), and how long it took. */
  private readAt = 0;
  private readRttMs = 0;
  private events: AxEvents | undefined;
  private broker: Broker | undefined;
  private readonly refreshed: Array<() => void> = [];
  private actor = 'worker';
  private refreshes = 0;
  private versions = 0;
  private readonly loop: Periodic;
  readonly admission: AdmissionOptions;
  readonly unhandledDeadAfterMs: number;
  readonly liveMs: number;

  constructor(private readonly o: FlowGateOptions) {
    this.admission = {...ADMISSION_DEFAULTS, ...o.admission};
    this.unhandledDeadAfterMs = o.unhandledDeadAfterMs ?? 3_600_000;
    this.liveMs = o.liveMs ?? 15_000;
    this.loop = new Periodic({
      name: 'flow refresh',
      clock: o.clock,
      everyMs: o.refreshMs ?? 1000,
      run: () => this.refresh(),
      onError: (e) => o.logger.warn('flow state refresh failed; deciding from the last one', {error: errorMessage(e)}),
    });
  }

  get snapshot(): FlowSnapshot {
    return this.snap;
  }

  /** Counts the snapshots read: a decision taken before a refresh is stale once it moved. */
  get version(): number {
    return this.versions;
  }

  /** Reads the registry now. Throws when the store does (the loop logs and keeps the last snapshot). */
  /** Where breaker transitions are emitted, and who is recorded as making them (the worker's id). */
  attach(events: AxEvents, actor: string): void {
    this.events = events;
    this.actor = actor;
  }

  async refresh(): Promise<void> {
    const before = this.snap;
    await this.read();
    if (this.o.breakers !== false && (await this.evaluateBreakers())) await this.read();
    if (++this.refreshes % PURGE_EVERY === 0) await this.o.store.outcomesPurge({olderThanMs: OUTCOMES_KEPT_MS});
    // One line per change this worker sees (operators and tests can tell when a pause took effect).
    for (const [type, t] of this.snap.types)
      if (t.paused && !before.types.get(type)?.paused) this.o.logger.info('type paused: parking its tasks', {type, by: t.pausedBy});
    // And when its view of a type's breaker turns open: from then on only probes run here.
    for (const [type, t] of this.snap.types)
      if (t.breaker.state === 'open' && before.types.get(type)?.breaker.state !== 'open')
        this.o.logger.info('breaker open: parking its tasks', {type, until: t.breaker.until?.toISOString() ?? null});
    for (const [type, t] of before.types)
      if (t.paused && !this.snap.types.get(type)?.paused && before.loaded)
        this.o.logger.info('type resumed: running its tasks again', {type});
    for (const type of new Set([...before.limited, ...this.snap.limited])) {
      const was = limitsOf(before.types.get(type)?.settings);
      const now = limitsOf(this.snap.types.get(type)?.settings);
      if (JSON.stringify(was) !== JSON.stringify(now))
        this.o.logger.info('type limits in effect', {
          type,
          maxRunning: now.maxRunning ?? null,
          rate: now.rate ?? null,
          maxRunningPerKey: now.maxRunningPerKey ?? null,
          ratePerKey: now.ratePerKey ?? null,
          fair: now.fair === true,
          keyWeights: now.keyWeights ?? {},
        });
    }
    this.versions++;
    for (const f of this.refreshed) f();
  }

  private async read(): Promise<void> {
    const sent = this.o.clock.monotonic();
    const view = await this.o.store.flowView({liveMs: this.liveMs});
    this.readAt = this.o.clock.monotonic();
    this.readRttMs = this.readAt - sent;
    this.snap = snapshotOf(view);
  }

  /**
   * The database clock now (epoch ms), estimated from the snapshot's read (FlowView.at) aged on the
   * monotonic clock. Breakers live on the database clock — their outcome counts are seconds of
   * NOW(), and the claim compares `until` with NOW(3) — so every decision here is made on it too:
   * a worker whose own clock is off neither opens a breaker for longer or shorter than its
   * cool-down nor misses the failures of its window. Never ahead of the database's clock; behind it
   * by at most the read's round trip. Before the first read, the local clock (no type has a
   * breaker to decide on then).
   */
  dbNow(): number {
    return this.snap.loaded ? this.snap.at + (this.o.clock.monotonic() - this.readAt) : this.o.clock.now();
  }

  /**
   * This host's wall clock minus the database's (ms; positive: ahead), ± `errorMs`, from the last
   * snapshot's read: dbNow() is behind the database by between 0 and the read's round trip, so the
   * offset lies within half of it (plus NOW(3)'s millisecond) of the middle. Null before the first
   * read. Written with the worker's heartbeats, where `ax doctor` compares every worker's clock.
   */
  clockOffset(): ClockOffset | null {
    if (!this.snap.loaded) return null;
    const half = this.readRttMs / 2;
    return {offsetMs: Math.round(this.o.clock.now() - this.dbNow() - half), errorMs: Math.ceil(half) + 1};
  }

  /** Calls `f` after each successful refresh, with the new snapshot in place (the worker withdraws what it now refuses). */
  onRefreshed(f: () => void): void {
    this.refreshed.push(f);
  }

  /** The types of a claim batch whose registry rows the claim locks for update (see lockedAmong); undefined when none. */
  locked(tasks: Iterable<{type: string}>): string[] | undefined {
    return lockedAmong(this.snap, tasks);
  }

  /** The fair types among a claim batch's (their doorbells are permits: TasksClaimParams.fairTypes); undefined when none. */
  fair(tasks: Iterable<{type: string}>): string[] | undefined {
    if (this.snap.fair.size === 0) return undefined;
    const out = new Set<string>();
    for (const {type} of tasks) if (this.snap.fair.has(type)) out.add(type);
    return out.size === 0 ? undefined : [...out];
  }

  /** The check before a claim, from the snapshot (see admit in admission.ts). */
  admit(type: string, localHandler: boolean): Admission {
    return admit(this.snap, type, localHandler, this.dbNow(), this.admission);
  }

  /**
   * Reads the outcome windows and moves every breaker whose counts say so (compare-and-set: of the
   * workers deciding the same transition one wins, and only it emits and logs). Returns whether
   * any moved (by this worker or, when its compare-and-set lost, by another).
   */
  private async evaluateBreakers(): Promise<boolean> {
    const now = this.dbNow();
    const windowMs = countsSpanMs(
      [...this.snap.types.values()].map((t) => ({settings: breakerSettings(t.settings), state: stateOf(t)})),
      now,
    );
    const byType = new Map<string, SecondCount[]>();
    for (const c of await this.o.store.outcomeCounts({windowMs}))
      (byType.get(c.type) ?? byType.set(c.type, []).get(c.type)!).push({at: c.at.getTime(), ok: c.ok, failed: c.failed});
    for (const [type, t] of this.snap.types) if (t.breaker.state !== 'closed' && !byType.has(type)) byType.set(type, []);
    let moved = false;
    for (const [type, counts] of byType) {
      const rec = this.snap.types.get(type);
      const b: BreakerState = rec ? stateOf(rec) : CLOSED;
      const tr = evaluate(b, counts, now, breakerSettings(rec?.settings ?? {}));
      if (!tr) continue;
      const won = await this.o.store.breakerTransition({
        type,
        expect: {state: b.state, changedAt: rec?.breaker.changedAt ?? null},
        to: {
          state: tr.to.state,
          until: tr.to.until === null ? null : new Date(tr.to.until),
          openings: tr.to.openings,
          changedAt: tr.to.changedAt === null ? null : new Date(tr.to.changedAt),
        },
        event: tr.event,
        detail: tr.detail,
        actor: this.actor,
      });
      // Won or lost, the row moved: the snapshot is read again (a loser decides from the winner's move).
      moved = true;
      if (!won) continue;
      const e = {type, from: b.state, to: tr.to.state, until: tr.to.until, openings: tr.to.openings, detail: tr.detail};
      this.events?.emit(tr.event, e);
      const line = `${tr.event.replace(':', ' ')}: ${type}`;
      if (tr.event === 'breaker:opened') this.o.logger.warn(line, e);
      else this.o.logger.info(line, e);
      // The worker that closed it releases what the breaker parked: due now, not at its old probe time.
      if (tr.event === 'breaker:closed') await this.release(type, 'breaker', 'rang tasks the breaker had parked: it closed');
    }
    return moved;
  }

  /**
   * Registers `types` in the registry, reads the snapshot, starts the refresh loop, and rings the
   * tasks parked for want of a handler of these types (they run here now). A failed read leaves
   * the empty snapshot: tasks run unless this worker lacks their handler.
   */
  async start(types: string[], broker: Broker): Promise<void> {
    await this.o.store.typesRegister({types});
    this.broker = broker;
    await this.refresh().catch((e: unknown) => this.o.logger.warn('flow state read failed at start', {error: errorMessage(e)}));
    this.loop.start();
    for (const type of types) await this.release(type, 'unhandled', 'rang tasks that waited for a handler');
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /**
   * Makes the type's tasks parked as `kind` due now and rings them (release.ts). A failure is
   * logged, never thrown: they stay due at their recheck time and the scheduler rings them then.
   */
  private async release(type: string, kind: ParkedKind, line: string): Promise<void> {
    try {
      const r = await releaseParked({...this.o, broker: this.broker}, type, [kind]);
      if (r.released > 0) this.o.logger.info(line, {type, tasks: r.released, unrung: r.unrung});
    } catch (e) {
      this.o.logger.warn(`could not release the ${kind} tasks`, {type, error: errorMessage(e)});
    }
  }
}

/** A registry row's breaker as the pure state machine reads it (epoch ms). */
function stateOf(rec: TypeRecord): BreakerState {
  return {
    state: rec.breaker.state,
    until: rec.breaker.until?.getTime() ?? null,
    openings: rec.breaker.openings,
    changedAt: rec.breaker.changedAt?.getTime() ?? null,
  };
}
