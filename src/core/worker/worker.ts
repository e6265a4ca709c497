import {hostname} from 'node:os';
import {errorMessage} from '../errors.js';
import type {Logger} from '../log.js';
import {type Broker, type Delivery, type Subscription, type TaskMessage, decodeMessage, splitDelivery} from '../broker/types.js';
import {type BackoffOptions, type BackoffShape, backoffMs} from '../retry/backoff.js';
import type {ClaimedTask, DueTask, HotPathStore, Outcome, ParkedKind, WorkerRegistryStore, WorkerStatsDoc} from '../store/types.js';
import {PRIORITIES, type JsonObject, type PoolName, type Priority} from '../task/model.js';
import {type Clock, type Random, sleep} from '../time.js';
import {MicroBatcher} from '../batcher.js';
import {type AxChannel, AxEvents} from '../events.js';
import {graceDeadline, Periodic, type Service, type StopOptions} from '../lifecycle.js';
import {countWorkerEvents, logTaskFailures, type WorkerStats} from './subscribers.js';
import {countTypeStats, type TypeStats} from './type-stats.js';
import type {HandlerMap} from './handlers.js';
import {LINK_DEPENDENTS, LINK_PARENTS, type ParentInfo, parentsOf} from '../task/links.js';
import {decideOutcome, type Held, type NotStarted} from './outcome.js';
import {type ExecutionPool, type JobResult, NOT_STARTED, type PoolJob, type ProgressListener, WITHDRAWN} from './pool.js';
import {ProgressWriter} from './progress.js';
import {leveledPool, type PriorityWeights} from './levels.js';
import {Lane} from './intake.js';
import {FlowGate, type GateStore} from '../flow/gate.js';
import {MemorySampler, type MemoryUsage} from '../memory.js';
import type {Admission} from '../flow/admission.js';
import {CancelWatch} from './cancel.js';
import {tracing} from '../trace.js';

/** What a worker needs of the task database: the hot path, its registry row and flow control. */
export type WorkerStore = Pick<
  HotPathStore,
  'tasksClaim' | 'leasesRenew' | 'outcomesApply' | 'doorbellsMark' | 'progressWrite' | 'parentsOf'
> &
  Pick<WorkerRegistryStore, 'workersUpsert' | 'workersStop'> &
  GateStore;

export interface WorkerOptions {
  store: WorkerStore;
  broker: Broker;
  clock: Clock;
  random: Random;
  logger: Logger;
  handlers: HandlerMap;
  /**
   * The pools this worker runs; it consumes the queue of each at every priority level. Each is
   * wrapped with one local queue per level (capacity each), served by `priorityWeights`.
   */
  pools: Partial<Record<PoolName, ExecutionPool>>;
  /** Shares of a busy pool's slots per level (default high 6, normal 3, low 1; see levels.ts). */
  priorityWeights?: PriorityWeights;
  /** Unique per process; recorded on claimed rows and in history (default host:pid). */
  workerId?: string;
  leaseMs: number;
  defaultTimeoutMs: number;
  backoff: BackoffOptions;
  /** Claims/outcomes per statement (default 500). */
  batchSize?: number;
  /**
   * Default (unset): group commit — a delivery is claimed at once when no claim is in flight, and
   * with the deliveries that arrived during the previous claim otherwise. Set, a delivery instead
   * waits up to this long to be claimed with others (the behaviour before issue 22).
   */
  claimWaitMs?: number;
  /** Longest an outcome waits to be written with others (default 5 ms). */
  outcomeWaitMs?: number;
  /** The least time between two writes of handlers' progress reports (default 1000 ms; see progress.ts). */
  progressEveryMs?: number;
  heartbeatMs?: number;
  /** Reads this process's memory for the heartbeat's trend (default process.memoryUsage; tests inject one). */
  memoryUsage?: () => MemoryUsage;
  /**
   * Tasks producers put in one doorbell message (AX_DOORBELL_BATCH; default 1). The prefetch, which
   * counts messages, is the pool's room (size + capacity) divided by it.
   */
  tasksPerMessage?: number;
  /** The grace period of a stop() without one, and of `await using` disposal (default 30 s). */
  shutdownGraceMs?: number;
  /** How long a handler an operator cancelled gets after its signal before it is stopped like a timeout (default 10 s; see cancel.ts). */
  cancelGraceMs?: number;
  /**
   * Where the worker emits its events (default: an emitter of its own, see `events`). The worker
   * subscribes its stats and failure log lines to it, so workers sharing one emitter count, and
   * log, each other's events too.
   */
  events?: AxEvents;
  /** The admission step (flow control per type); default: a FlowGate over `store` with its defaults. */
  flow?: FlowGate;
}

export type {WorkerStats} from './subscribers.js';

/** A claimed task the worker holds until its outcome is written. */
interface HeldTask extends Held {
  /** The pool that runs it, and the pool queue it came from. */
  pool: PoolName;
  queue: PoolName;
  priority: Priority;
  type: string;
  /** The lane of the delivery it was claimed from, freed when its outcome is written. */
  lane: Lane | undefined;
  /** Monotonic ms: handed to the pool, and the attempt's end. */
  startedAt: number;
  endedAt: number;
  /** The claim's link flags and batch (ClaimedTask.links, batchId), carried to the outcome. */
  links?: {links?: number; batchId?: string};
}

/** The wait before a store call's next try (claims, outcomes): 100 ms doubling to 5 s, no jitter. */
export const STORE_RETRY: BackoffShape = {firstMs: 100, maxMs: 5000};

/** The stack of a failed attempt, as an optional event field. */
const stackOf = (o: Outcome): {stack?: string} => ('stack' in o && typeof o.stack === 'string' ? {stack: o.stack} : {});

/** The delivery of a task handed off within the worker (Worker.handOff): nothing to acknowledge. */
const HANDED_OFF: Delivery = {body: Buffer.alloc(0), redelivered: false, ack: () => undefined};

interface Pending {
  id: string;
  type: string;
  d: Delivery;
  /** The pool queue and level it came from: one of its tasks until it is finished or dropped. */
  lane: Lane;
}

/**
 * A worker: consumes its pools' queues, claims deliveries in batches with one guarded UPDATE,
 * acks them once the claim commits, runs each in its handler's pool, renews leases while they run
 * and writes outcomes in batches guarded by the fence. Messages it cannot use are poisoned, never
 * requeued. `stop()` stops consuming, lets in-flight work finish within the grace period and hands
 * the rest back to storage without using an attempt.
 *
 * Everything it does is emitted on `events` (task:claimed, task:succeeded/failed/dead/released with
 * type, attempt, duration and error; doorbell:stale/duplicate/poisoned; lease:lost); `stats` and
 * the failure log lines (warn per failure, error per dead-letter) are subscribers of that stream.
 */
export class Worker implements Service {
  readonly id: string;
  readonly events: AxEvents;
  /** Counters of this worker's events (a subscriber of `events`). */
  readonly stats: WorkerStats;
  /** Per-type counters and durations, written with each heartbeat (a subscriber of `events`). */
  readonly typeStats: TypeStats;
  private readonly memory: MemorySampler;
  /** Claimed tasks not yet written back. */
  private readonly held = new Map<string, HeldTask>();
  /** The options' pools, each behind its per-level local queues. */
  private readonly pools: Partial<Record<PoolName, ExecutionPool>>;
  private readonly subs: Subscription[] = [];
  /** Per pool queue and level: the tasks taken in and not yet finished (see intake.ts). */
  private readonly lanes: Lane[] = [];
  /** The lane of each pool queue and level (`pool/level`), for hand-offs. */
  private readonly laneOf = new Map<string, Lane>();
  private readonly claims: MicroBatcher<Pending>;
  private readonly outcomes: MicroBatcher<Outcome>;
  /** Handlers' progress reports, written at most once a second (see progress.ts). */
  private readonly progress: ProgressWriter;
  private readonly log: Logger;
  private readonly renewer: Periodic;
  private readonly beat: Periodic;
  private readonly gate: FlowGate;
  /** Stops running attempts an operator cancelled (control messages; see cancel.ts). */
  private readonly cancels: CancelWatch;
  private state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  private stopping: Promise<void> | undefined;
  private readonly settled = new Set<Promise<unknown>>();
  /** The channels of the per-task events, held so that emitting costs no lookup by name. */
  private readonly ch: {
    claimed: AxChannel<'task:claimed'>;
    succeeded: AxChannel<'task:succeeded'>;
    failed: AxChannel<'task:failed'>;
    dead: AxChannel<'task:dead'>;
    released: AxChannel<'task:released'>;
    stale: AxChannel<'doorbell:stale'>;
  };
  private readonly parked: AxChannel<'task:parked'>;

  constructor(private readonly o: WorkerOptions) {
    this.id = o.workerId ?? `${hostname()}:${process.pid}`;
    this.pools = {};
    for (const [name, pool] of Object.entries(o.pools) as Array<[PoolName, ExecutionPool]>)
      this.pools[name] = leveledPool(pool, o.priorityWeights ? {weights: o.priorityWeights} : {});
    this.log = o.logger.child({worker: this.id});
    this.events =
      o.events ??
      new AxEvents({onListenerError: (e, name) => this.log.error('event listener failed', {event: name, error: errorMessage(e)})});
    const ev = this.events;
    this.ch = {
      claimed: ev.channel('task:claimed'),
      succeeded: ev.channel('task:succeeded'),
      failed: ev.channel('task:failed'),
      dead: ev.channel('task:dead'),
      released: ev.channel('task:released'),
      stale: ev.channel('doorbell:stale'),
    };
    this.parked = ev.channel('task:parked');
    this.stats = countWorkerEvents(this.events);
    const heartbeatMs = o.heartbeatMs ?? 5000;
    this.typeStats = countTypeStats(this.events, heartbeatMs);
    this.memory = new MemorySampler(o.clock, o.memoryUsage);
    this.gate = o.flow ?? new FlowGate({store: o.store, clock: o.clock, logger: this.log});
    this.gate.attach(this.events, this.id);
    this.gate.onRefreshed(() => this.withdrawRefused());
    logTaskFailures(this.events, this.log);
    this.cancels = new CancelWatch({
      broker: o.broker,
      logger: this.log,
      events: this.events,
      graceMs: o.cancelGraceMs ?? 10_000,
      held: (id) => this.held.get(id),
      pool: (name) => this.pools[name],
      inner: (name) => o.pools[name],
    });
    this.renewer = new Periodic({
      name: 'lease renewal',
      clock: o.clock,
      everyMs: Math.max(50, Math.floor(o.leaseMs / 3)),
      run: () => this.renew(),
      onError: (e) => this.log.warn('lease renewal failed', {error: errorMessage(e)}),
    });
    this.beat = new Periodic({
      name: 'heartbeat',
      clock: o.clock,
      everyMs: heartbeatMs,
      run: () => this.o.store.workersUpsert({info: this.info(), inFlight: this.held.size, stats: this.statsDoc()}),
      onError: (e) => this.log.warn('heartbeat failed', {error: errorMessage(e)}),
    });
    const size = o.batchSize ?? 500;
    this.claims = new MicroBatcher<Pending>({
      maxSize: size,
      maxWaitMs: o.claimWaitMs ?? 2,
      // A delivery is claimed at once when no claim is in flight; under load the deliveries that
      // arrive during one claim form the next (issue 22: a fixed wait is latency at ordinary load).
      groupCommit: o.claimWaitMs === undefined,
      concurrency: 2,
      clock: o.clock,
      run: (b) => this.claimBatch(b),
    });
    this.outcomes = new MicroBatcher<Outcome>({
      maxSize: size,
      maxWaitMs: o.outcomeWaitMs ?? 5,
      concurrency: 2,
      clock: o.clock,
      run: (b) => this.writeOutcomes(b),
    });
    this.progress = new ProgressWriter({
      clock: o.clock,
      logger: this.log,
      write: (rows) => this.o.store.progressWrite({rows}),
      ...(o.progressEveryMs === undefined ? {} : {everyMs: o.progressEveryMs}),
    });
  }

  /**
   * The pools' progress listener (createIoPool/createCpuPool onProgress): a report of an attempt
   * this worker still holds is queued for the next progress write, at the attempt's fence.
   */
  readonly onProgress: ProgressListener = (job, r) => {
    const h = this.held.get(job.taskId);
    if (!h || h.attempt !== job.attempt || this.state === 'stopped') return;
    this.progress.report({id: h.id, fence: h.fence, percent: r.percent, note: r.note});
  };

  /** Tasks claimed and not yet written back. */
  get inFlight(): number {
    return this.held.size;
  }

  /** Each pool's occupancy now (the metrics' gauges read it at scrape time). */
  poolStats(): Array<{pool: PoolName; size: number; capacity: number; running: number; queued: number}> {
    return (Object.entries(this.pools) as Array<[PoolName, ExecutionPool]>).map(([pool, p]) => ({
      pool,
      size: p.size,
      capacity: p.capacity,
      running: p.running,
      queued: p.queued,
    }));
  }

  /** Running: consuming its queues. */
  ready(): boolean {
    return this.state === 'running';
  }

  /** One lease renewal and one heartbeat, now (tests drive the loops with this). */
  async runOnce(): Promise<void> {
    await Promise.all([this.renewer.runOnce(), this.beat.runOnce()]);
  }

  /** Registers the worker, subscribes to each pool's queue and starts lease renewal. Idempotent. */
  async start(): Promise<void> {
    if (this.state !== 'new') return;
    this.state = 'running';
    await this.o.store.workersUpsert({info: this.info(), inFlight: 0, stats: this.statsDoc()});
    await this.gate.start(this.info().types, this.o.broker);
    for (const [name, pool] of Object.entries(this.pools) as Array<[PoolName, ExecutionPool]>) {
      // Room for full doorbells, but never fewer than 32 messages (or the room): small ones (cron,
      // re-rings, a quiet scheduler tick) must not shrink the claim batches to a few tasks.
      const room = pool.size + pool.capacity;
      const prefetch = Math.min(65_535, Math.max(Math.ceil(room / (this.o.tasksPerMessage ?? 1)), Math.min(room, 32)));
      // One consumer and lane per level, each on its own channel: a normal backlog never delays a
      // high doorbell, and a lane takes in no more than the pool can hold.
      for (const level of PRIORITIES) {
        const lane = new Lane(room);
        this.lanes.push(lane);
        this.laneOf.set(`${name}/${level}`, lane);
        this.subs.push(await this.o.broker.consume(name, prefetch, (d) => this.onDelivery(d, lane), level));
      }
    }
    await this.cancels.start();
    this.renewer.start();
    this.beat.start();
    this.log.info('worker started', {pools: this.info().pools, leaseMs: this.o.leaseMs});
  }

  /** What each heartbeat writes: the per-type counters, the memory trend and this host's clock against the database's. */
  private statsDoc(): WorkerStatsDoc {
    const clock = this.gate.clockOffset();
    return {...this.typeStats.snapshot(), memory: this.memory.doc(), ...(clock ? {clock} : {})};
  }

  private info(): {id: string; host: string; pid: number; pools: Record<string, number>; types: string[]} {
    const pools: Record<string, number> = {};
    for (const [n, p] of Object.entries(this.pools)) pools[n] = (p as ExecutionPool).size;
    return {id: this.id, host: hostname(), pid: process.pid, pools, types: [...this.o.handlers.byType.keys()].sort()};
  }

  private onDelivery(d: Delivery, lane: Lane): void {
    const refs = decodeMessage(d.body);
    if (!refs) {
      this.track(this.poison(d, 'malformed message: not a doorbell with string ids and types'));
      return;
    }
    if (this.state !== 'running') return; // not acked: the channel close requeues it
    // Held unacked while the lane is full: the prefetch fills and RabbitMQ stops this queue only.
    lane.offer(refs.length, () => {
      if (this.state !== 'running') return;
      if (refs.length === 1) this.claims.push({id: refs[0]!.id, type: refs[0]!.type, d, lane});
      else
        for (const [i, part] of splitDelivery(d, refs).entries()) this.claims.push({id: refs[i]!.id, type: refs[i]!.type, d: part, lane});
    });
  }

  /**
   * Moves a message ax cannot use to the poison queue. If that fails (RabbitMQ blocked or down), the
   * message is logged and acked anyway: left unacked it would hold back every later ack on its
   * channel (acks go out in tag order) and, with a doorbell for many tasks, the claimed ones too.
   * Dropping it loses no task — it names none that exists, or is not a doorbell at all.
   */
  private async poison(d: Delivery, reason: string): Promise<void> {
    this.events.emit('doorbell:poisoned', {reason, bytes: d.body.length});
    this.log.warn('poison message', {reason, bytes: d.body.length});
    try {
      await this.o.broker.poison(d, reason);
    } catch (e) {
      this.log.error('could not move a poison message to the poison queue; dropped it', {
        reason,
        body: d.body.subarray(0, 300).toString('utf8'),
        error: errorMessage(e),
      });
      d.ack();
    }
  }

  private async claimBatch(batch: Pending[]): Promise<void> {
    const byId = new Map<string, Pending[]>();
    for (const p of batch) byId.set(p.id, [...(byId.get(p.id) ?? []), p]);
    await this.deferRefused(byId);
    if (byId.size === 0) return;
    // Pause, breaker and limits are decided again in the claim's transaction, from the types' rows.
    const lockTypes = this.gate.locked(batch);
    const fairTypes = this.gate.fair(batch);
    // A refresh during the claim (a pause, an opening) may refuse what the claim took: dispatch re-checks then.
    const seen = this.gate.version;
    const claimStartMs = this.o.clock.now();
    const result = await this.retrying('claim', byId.size, () =>
      this.o.store.tasksClaim({
        ids: [...byId.keys()],
        worker: this.id,
        leaseMs: this.o.leaseMs,
        admission: this.gate.admission,
        ...(lockTypes ? {lockTypes} : {}),
        ...(fairTypes ? {fairTypes} : {}),
      }),
    );
    if (!result) return;
    // The claim's span, when it took traced tasks (linked to their traces; none otherwise).
    if (tracing.enabled)
      tracing
        .batchSpan(
          'ax.claim',
          result.claimed.map((t) => t.trace),
          {'ax.tasks': result.claimed.length, 'ax.worker': this.id},
          claimStartMs,
        )
        ?.end(true);
    // Doorbells fair dispatch lent to a claimed task are acked, and their lane handed on, with it.
    const handled = new Set<string>();
    for (const t of result.claimed) if (t.via !== undefined) handled.add(t.via);
    for (const r of result.deferred ?? []) {
      this.parked.emit({id: r.id, type: r.type, parked: r.parked, reason: r.reason, delayMs: r.delayMs, claimed: false});
      // Never claimed: its lane's room comes back now (a lane that leaked it would stop this queue).
      if (handled.has(r.id)) continue;
      handled.add(r.id);
      for (const p of byId.get(r.id) ?? []) {
        p.d.ack();
        p.lane.done();
      }
    }
    for (const s of result.skipped) {
      if (handled.has(s.id)) continue;
      handled.add(s.id);
      for (const p of byId.get(s.id) ?? []) {
        p.lane.done();
        if (s.state === null) this.track(this.poison(p.d, `unknown task id ${s.id}`));
        else {
          this.ch.stale.emit({id: s.id, type: p.type});
          p.d.ack(); // already running/finished, or not due yet: the row decides, the bell is dropped
        }
      }
    }
    // Run in delivery order (FIFO), not in the claim's primary-key order; a task fair dispatch took
    // on another task's doorbell (via) runs in that doorbell's place.
    const order = new Map([...byId.keys()].map((id, i) => [id, i]));
    const at = (t: ClaimedTask): number => order.get(t.via ?? t.id) ?? 0;
    const claimed = [...result.claimed].sort((a, b) => at(a) - at(b));
    const parents = await this.parentsOf(claimed);
    for (const t of claimed) {
      this.ch.claimed.emit({id: t.id, type: t.type, attempt: t.attempt, pool: t.pool, lateMs: t.lateMs});
      const bell = t.via ?? t.id;
      handled.add(bell);
      const parts = byId.get(bell) ?? [];
      if (parts.length > 1) this.events.emit('doorbell:duplicate', {id: bell, type: t.type, extra: parts.length - 1});
      for (const p of parts) p.d.ack();
      for (const p of parts.slice(1)) p.lane.done();
      this.dispatch(t, this.gate.version === seen ? parts[0]?.type : undefined, parts[0]?.lane, parents?.get(t.id));
    }
    // Tasks whose doorbell fair dispatch lent to another: rung again (else the scheduler rings them).
    if (result.unrung) this.track(this.ringAgain(result.unrung, 'whose doorbell fair dispatch lent'));
    // Doorbells fair dispatch lent to a task it then deferred: their tasks stay due (the row decides).
    for (const [id, parts] of byId)
      if (!handled.has(id))
        for (const p of parts) {
          p.d.ack();
          p.lane.done();
        }
  }

  /**
   * The admission step before the claim: tasks whose type may not run now (paused, breaker open, no
   * handler here) are parked in storage unclaimed, their deliveries acked, and removed from `byId`.
   */
  private async deferRefused(byId: Map<string, Pending[]>): Promise<void> {
    const refused: Array<{id: string; type: string; delayMs: number; parked: ParkedKind | null; reason: string}> = [];
    for (const [id, parts] of byId) {
      const type = parts[0]!.type;
      const a = this.gate.admit(type, this.o.handlers.byType.has(type));
      if (!a.run) refused.push({id, type, delayMs: a.delayMs, parked: a.parked, reason: a.reason});
    }
    if (refused.length === 0) return;
    const res = await this.retrying('parking', refused.length, () =>
      this.o.store.tasksDefer({
        tasks: refused,
        actor: this.id,
        unhandledDeadAfterMs: this.gate.unhandledDeadAfterMs,
        liveMs: this.gate.liveMs,
      }),
    );
    if (!res) return; // stopping: unacked deliveries go back to the queue with the channel
    const deferred = new Set(res.deferred);
    for (const r of refused) {
      if (deferred.has(r.id))
        this.parked.emit({id: r.id, type: r.type, parked: r.parked, reason: r.reason, delayMs: r.delayMs, claimed: false});
      for (const p of byId.get(r.id) ?? []) {
        p.d.ack();
        p.lane.done();
      }
      byId.delete(r.id);
    }
    for (const d of res.dead) {
      this.events.emit('task:unhandled-dead', d);
      this.log.error('task dead: no live worker had a handler for its type during AX_UNHANDLED_DEAD_AFTER', d);
    }
  }

  /** Runs a store call again with backoff until it succeeds; undefined once the worker is stopping. */
  private async retrying<T>(what: string, tasks: number, fn: () => Promise<T>): Promise<T | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (e) {
        if (this.state !== 'running') return undefined;
        const delay = backoffMs(attempt, STORE_RETRY);
        this.log.warn(`${what} failed, retrying`, {tasks, attempt, error: errorMessage(e)});
        await sleep(this.o.clock, delay);
      }
    }
  }

  /**
   * Runs a claimed task; `admitted` is the type the admission step let through before the claim
   * (undefined when the flow snapshot changed since: decided again here), `lane` the one its delivery took.
   */
  private dispatch(t: ClaimedTask, admitted?: string, lane?: Lane, parents?: Record<string, ParentInfo>): void {
    const h = this.o.handlers.byType.get(t.type);
    const startedAt = this.o.clock.monotonic();
    const heldTask: HeldTask = {
      id: t.id,
      fence: t.fence,
      attempt: t.attempt,
      maxRetries: t.maxRetries,
      retryBase: t.retryBase,
      pool: h?.pool ?? t.pool,
      type: t.type,
      queue: t.pool,
      priority: t.priority,
      lane,
      startedAt,
      endedAt: startedAt,
      ...(t.links === undefined && t.batchId === undefined ? {} : {links: {links: t.links, batchId: t.batchId}}),
    };
    this.held.set(t.id, heldTask);
    // The admission step again when the row's type is not the doorbell's it decided on (a stray
    // doorbell), or when a flow refresh came during the claim (a pause or an opening committed after
    // the claim read the type's row): refused, it goes back without using an attempt.
    const a: Admission = t.type === admitted && h ? {run: true} : this.gate.admit(t.type, h !== undefined);
    if (!a.run || !h) {
      const refusal = a.run ? {delayMs: 0, parked: null, reason: 'no handler'} : a;
      this.outcomes.push({
        kind: 'park',
        id: t.id,
        fence: t.fence,
        type: t.type,
        reason: refusal.reason,
        delayMs: refusal.delayMs,
        parked: refusal.parked,
      });
      return;
    }
    const pool = this.pools[h.pool];
    let payload: JsonObject;
    try {
      payload = JSON.parse(t.payload) as JsonObject;
    } catch {
      this.finish(heldTask, {kind: 'fail', unrecoverable: true, message: 'stored payload is not valid JSON'});
      return;
    }
    // A task submitted in a trace: its attempt's span, a child of the submit's (ended with its result).
    const span = t.trace && pool ? tracing.attemptSpan(`ax.run ${t.type}`, t.trace, attemptAttributes(t, this.id)) : null;
    const run = pool?.tryRun({
      taskId: t.id,
      type: t.type,
      attempt: t.attempt,
      payload,
      priority: t.priority,
      timeoutMs: t.timeoutMs ?? h.timeoutMs ?? this.o.defaultTimeoutMs,
      ...(t.replay ? {replay: t.replay} : {}),
      ...(span ? {span} : {}),
      ...(parents ? {parents} : {}),
    });
    if (!run) span?.end(false, 'not started');
    if (!run) {
      // Not this worker's pool: the task moves to its handler's pool queue (rung there, and recorded
      // on the row so later rings go there too) instead of coming back to this queue forever.
      this.finish(
        heldTask,
        pool
          ? {kind: 'notStarted', message: `${h.pool} pool queue full`}
          : {kind: 'notStarted', message: `this worker does not run the ${h.pool} pool; moved to its queue`, pool: h.pool},
      );
      return;
    }
    this.track(
      run.then((r: JobResult) => {
        span?.end(r.kind === 'success', r.kind === 'success' ? undefined : r.message);
        if (r.kind === 'aborted' && r.message === WITHDRAWN) return this.parkWithdrawn(heldTask);
        // A job the pool never started (shutdown) goes back to storage without using an attempt.
        this.finish(
          heldTask,
          r.kind === 'aborted' && r.message === NOT_STARTED ? {kind: 'notStarted', message: 'worker shut down before it started'} : r,
        );
      }),
    );
  }

  /**
   * After each flow refresh: the tasks waiting in this worker's local queues whose type may not run
   * now (paused, breaker open) are taken back before they start and parked in storage like the
   * claim would have parked them — no attempt used, due again at the pause's recheck or the probe
   * time (a resume or a close releases them earlier). Running ones finish.
   */
  private withdrawRefused(): void {
    if (this.state !== 'running') return;
    const decided = new Map<string, Admission>();
    const refused = (job: PoolJob): boolean => {
      let a = decided.get(job.type);
      if (!a) decided.set(job.type, (a = this.gate.admit(job.type, true)));
      return !a.run && a.parked !== null;
    };
    let n = 0;
    for (const pool of Object.values(this.pools)) n += pool.withdraw(refused).length;
    if (n === 0) return;
    const types = [...decided].filter(([, a]) => !a.run).map(([t]) => t);
    this.events.emit('tasks:withdrawn', {count: n, types});
    this.log.info('withdrew queued tasks of types that may not run now: parked in storage', {tasks: n, types});
  }

  /**
   * A task withdrawn from a local queue (withdrawRefused): parked, its attempt given back, for the
   * reason the snapshot gives (the withdrawal resolves it in the same turn, before any refresh).
   */
  private parkWithdrawn(t: HeldTask): void {
    const a = this.gate.admit(t.type, true);
    const refusal = a.run ? {delayMs: 0, parked: null, reason: 'withdrawn'} : a;
    this.outcomes.push({
      kind: 'park',
      id: t.id,
      fence: t.fence,
      type: t.type,
      reason: `${refusal.reason} (withdrawn from ${this.id}'s local queue before it started)`,
      delayMs: refusal.delayMs,
      parked: refusal.parked,
    });
  }

  private finish(t: HeldTask, r: JobResult | NotStarted): void {
    t.endedAt = this.o.clock.monotonic();
    // The attempt's last report not yet written goes with its outcome, in the same UPDATE.
    const last = this.progress.size > 0 ? this.progress.take(t.id) : undefined;
    const o: Outcome = {...decideOutcome(t, r, this.o.backoff, this.o.random), type: t.type};
    if (last) o.progress = {percent: last.percent, note: last.note};
    if (t.links?.links !== undefined) o.links = t.links.links;
    if (t.links?.batchId !== undefined) o.batchId = t.links.batchId;
    // A parent's outcome makes its dependents due: written at once, not after the batching wait.
    if (((o.links ?? 0) & LINK_DEPENDENTS) !== 0) this.outcomes.pushNow(o);
    else this.outcomes.push(o);
  }

  /**
   * ctx.parents of the claimed tasks that have parents (one read for the claim's batch; nothing
   * for tasks without). On a failed read they run without it after a warning: their parents all
   * ended (they were due), only the details are missing.
   */
  private async parentsOf(claimed: readonly ClaimedTask[]): Promise<Map<string, Record<string, ParentInfo>> | undefined> {
    const ids = claimed.filter((t) => ((t.links ?? 0) & LINK_PARENTS) !== 0).map((t) => t.id);
    if (ids.length === 0) return undefined;
    try {
      return parentsOf(await this.o.store.parentsOf(ids));
    } catch (e) {
      this.log.warn('could not read the parents of claimed tasks: ctx.parents is empty for them', {
        tasks: ids.length,
        error: errorMessage(e),
      });
      return undefined;
    }
  }

  private async writeOutcomes(batch: Outcome[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await this.o.store.outcomesApply({outcomes: batch, actor: this.id});
        const applied = new Set(res.applied);
        if (res.stale.length > 0) this.events.emit('outcome:stale', {count: res.stale.length});
        const released: Array<TaskMessage & {fence: number}> = [];
        for (const o of batch) {
          const held = this.held.get(o.id);
          this.held.delete(o.id);
          this.cancels.done(o.id);
          held?.lane?.done();
          if (!applied.has(o.id)) continue;
          if (o.kind === 'release' && held)
            released.push({id: o.id, type: held.type, pool: o.pool ?? held.queue, priority: held.priority, fence: o.fence});
          this.emitOutcome(o, held);
        }
        // Dependents and batch callbacks these outcomes made due: claimed here when this worker has
        // room for them, else rung now (else the scheduler rings them).
        if (res.due) released.push(...this.handOff(res.due));
        if (released.length > 0) await this.ringAgain(released, 'released or made due');
        return;
      } catch (e) {
        // Keep the leases alive meanwhile; if we never get through, the rescuer takes over.
        const delay = backoffMs(attempt, STORE_RETRY);
        this.log.warn('writing outcomes failed, retrying', {outcomes: batch.length, attempt, error: errorMessage(e)});
        if (this.state === 'stopped') return;
        await sleep(this.o.clock, delay);
      }
    }
  }

  /** One durable outcome as its event (the error fields are those the outcome carries). */
  private emitOutcome(o: Outcome, held: HeldTask | undefined): void {
    const base = {
      id: o.id,
      type: held?.type ?? 'unknown',
      attempt: held?.attempt ?? 0,
      fence: o.fence,
      durationMs: held ? held.endedAt - held.startedAt : 0,
    };
    switch (o.kind) {
      case 'complete':
        return this.ch.succeeded.emit(base);
      case 'release':
        return this.ch.released.emit({...base, reason: o.reason});
      case 'park':
        return this.parked.emit({id: o.id, type: base.type, parked: o.parked, reason: o.reason, delayMs: o.delayMs, claimed: true});
      case 'fail':
      case 'rescue':
        return this.ch.failed.emit({...base, error: o.error, ...stackOf(o), retryDelayMs: o.retryDelayMs});
      case 'deadLetter':
      case 'rescueDeadLetter':
        return this.ch.dead.emit({...base, error: o.error, ...stackOf(o)});
    }
  }

  /**
   * Claims here, without a doorbell, the tasks an outcome of this worker made due (a chain's next
   * step, a batch's callback) that it has a handler and room for: the claim is the same as a
   * delivery's (admission, fence), only the round trip through RabbitMQ is saved — a chain step
   * otherwise waits for the publish, its confirm and the delivery. Returns the rest, to ring. A task
   * handed off but not claimed (its claim failed, the worker stopped) has no doorbell mark
   * (published_at NULL): the scheduler's due scan rings it.
   */
  private handOff(due: readonly DueTask[]): Array<TaskMessage & {fence: number}> {
    const rest: Array<TaskMessage & {fence: number}> = [];
    for (const t of due) {
      const lane = this.state === 'running' && this.o.handlers.byType.has(t.type) ? this.laneOf.get(`${t.pool}/${t.priority}`) : undefined;
      if (lane?.take(1, () => this.claims.push({id: t.id, type: t.type, d: HANDED_OFF, lane}))) continue;
      rest.push({id: t.id, type: t.type, pool: t.pool, priority: t.priority, fence: t.fence});
    }
    return rest;
  }

  /**
   * Rings tasks due now that have no doorbell (released, made due by an outcome, or whose doorbell
   * fair dispatch lent), so a worker takes them, and marks them at the fence given: the mark lands
   * only if nobody claimed the task since. On failure the scheduler or the reconciler rings them.
   */
  private async ringAgain(refs: ReadonlyArray<TaskMessage & {fence: number}>, what: string): Promise<void> {
    try {
      await this.o.broker.publish(refs.map((r) => ({id: r.id, type: r.type, pool: r.pool, priority: r.priority})));
      await this.o.store.doorbellsMark({rung: refs.map((r) => ({id: r.id, fence: r.fence}))});
      const ids = refs.map((r) => r.id);
      this.events.emit('doorbell:published', {by: 'worker', count: ids.length, ids});
    } catch (e) {
      this.log.warn(`could not ring for tasks ${what}; the scheduler or reconciler will`, {tasks: refs.length, error: errorMessage(e)});
    }
  }

  private async renew(): Promise<void> {
    const held = [...this.held.values()].map((h) => ({id: h.id, fence: h.fence}));
    if (held.length === 0) return;
    try {
      const renewed = new Set<string>();
      for (let i = 0; i < held.length; i += 1000)
        for (const id of await this.o.store.leasesRenew({held: held.slice(i, i + 1000), leaseMs: this.o.leaseMs})) renewed.add(id);
      for (const h of held) {
        if (renewed.has(h.id) || !this.held.has(h.id)) continue;
        // Another process took the task over (our lease had expired), or an operator cancelled it
        // and the control message never came (cancel.ts): stop working on it.
        const lost = this.held.get(h.id);
        this.events.emit('lease:lost', {id: h.id, type: lost?.type ?? 'unknown'});
        const pool = this.pools[lost?.pool ?? 'io'];
        pool?.abort(h.id, 'lease lost');
      }
    } catch (e) {
      this.log.warn('lease renewal failed', {tasks: held.length, error: errorMessage(e)});
    }
  }

  private track(p: Promise<unknown>): void {
    this.settled.add(p);
    void p.finally(() => this.settled.delete(p));
  }

  /**
   * Graceful stop: stop consuming (unclaimed deliveries return to the queue), let claimed work
   * finish for up to `graceMs` (default: the worker's shutdownGraceMs) or until `signal` aborts,
   * hand back what never started (no attempt used), fail what was aborted, write every outcome and
   * mark the worker stopped. Idempotent: a second call returns the first one's promise.
   */
  stop(options: StopOptions = {}): Promise<void> {
    return (this.stopping ??= this.stopNow(options));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  private async stopNow(options: StopOptions): Promise<void> {
    const wasRunning = this.state === 'running';
    this.state = 'stopping';
    await this.beat.stop();
    await this.gate.stop();
    await Promise.all(this.subs.map((s) => s.cancel()));
    for (const l of this.lanes) l.clear();
    this.claims.takeWaiting();
    await this.claims.flush();
    const graceMs = options.graceMs ?? this.o.shutdownGraceMs ?? 30_000;
    const drained = Promise.all(Object.values(this.pools).map((p) => (p as ExecutionPool).drain(graceMs)));
    if (options.signal) {
      // The signal ends the grace period early: what still runs is aborted (an attempt used), as
      // when the grace period expires.
      const cut = graceDeadline(this.o.clock, {signal: options.signal, graceMs}, graceMs);
      await Promise.race([drained, cut.done]);
      cut.cancel();
      if (options.signal.aborted)
        for (const h of [...this.held.values()]) this.pools[h.pool]?.abort(h.id, 'shutdown: the stop signal ended the grace period');
    }
    await drained;
    while (this.settled.size > 0) await Promise.allSettled([...this.settled]);
    await this.outcomes.flush();
    await this.progress.stop();
    await this.cancels.stop(); // kept through the grace period: a cancel then still stops its handler
    await this.renewer.stop();
    this.state = 'stopped';
    if (wasRunning) await this.o.store.workersStop({id: this.id}).catch(() => undefined);
    this.log.info('worker stopped', {...this.stats});
  }
}

/** The attributes of an attempt's span. */
function attemptAttributes(t: ClaimedTask, worker: string): Record<string, string | number> {
  return {'ax.task.id': t.id, 'ax.task.type': t.type, 'ax.task.attempt': t.attempt, 'ax.worker': worker};
}
