/**
 * The worker's view of flow control: the registry snapshot the admission step decides from,
 * refreshed every AX_FLOW_REFRESH on the injected clock, plus the parking and the handler
 * registration that go with it. The worker asks `admit()` and hands refusals to `defer()`; the
 * policy itself is pure (admission.ts).
 */
import {errorMessage} from '../errors.js';
import type {Logger} from '../log.js';
import {Periodic} from '../lifecycle.js';
import type {Broker} from '../broker/types.js';
import type {FlowStore, HotPathStore} from '../store/types.js';
import type {Clock} from '../time.js';
import {
  type Admission,
  type AdmissionOptions,
  ADMISSION_DEFAULTS,
  admit,
  EMPTY_SNAPSHOT,
  type FlowSnapshot,
  snapshotOf,
} from './admission.js';

export type GateStore = Pick<FlowStore, 'flowView' | 'tasksDefer' | 'typesRegister' | 'parkedRelease'> &
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
}

/** Parked tasks released per statement when a handler registers. */
const RELEASE_BATCH = 500;

export class FlowGate {
  private snap: FlowSnapshot = EMPTY_SNAPSHOT;
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

  /** Reads the registry now. Throws when the store does (the loop logs and keeps the last snapshot). */
  async refresh(): Promise<void> {
    const before = this.snap;
    this.snap = snapshotOf(await this.o.store.flowView({liveMs: this.liveMs}));
    // One line per change this worker sees (operators and tests can tell when a pause took effect).
    for (const [type, t] of this.snap.types)
      if (t.paused && !before.types.get(type)?.paused) this.o.logger.info('type paused: parking its tasks', {type, by: t.pausedBy});
    for (const [type, t] of before.types)
      if (t.paused && !this.snap.types.get(type)?.paused && before.loaded)
        this.o.logger.info('type resumed: running its tasks again', {type});
  }

  admit(type: string, localHandler: boolean): Admission {
    return admit(this.snap, type, localHandler, this.o.clock.now(), this.admission);
  }

  /**
   * Registers `types` in the registry, reads the snapshot, starts the refresh loop, and rings the
   * tasks parked for want of a handler of these types (they run here now). A failed read leaves
   * the empty snapshot: tasks run unless this worker lacks their handler.
   */
  async start(types: string[], broker: Broker): Promise<void> {
    await this.o.store.typesRegister({types});
    await this.refresh().catch((e: unknown) => this.o.logger.warn('flow state read failed at start', {error: errorMessage(e)}));
    this.loop.start();
    for (const type of types) await this.releaseUnhandled(type, broker);
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  private async releaseUnhandled(type: string, broker: Broker): Promise<void> {
    try {
      for (;;) {
        const refs = await this.o.store.parkedRelease({type, kinds: ['unhandled'], limit: RELEASE_BATCH});
        if (refs.length === 0) return;
        await broker.publish(refs.map(({id, type: t, pool}) => ({id, type: t, pool})));
        await this.o.store.doorbellsMark({rung: refs.map(({id, fence}) => ({id, fence}))});
        this.o.logger.info('rang tasks that waited for a handler', {type, tasks: refs.length});
        if (refs.length < RELEASE_BATCH) return;
      }
    } catch (e) {
      // They stay due: the scheduler rings them when their recheck time comes.
      this.o.logger.warn('could not ring tasks that waited for a handler', {type, error: errorMessage(e)});
    }
  }
}
