/**
 * The one event stream of ax. Producer, worker, scheduler, relay and reconciler emit typed events
 * (noun:verb names, as graphile-worker's WorkerEventMap) on an {@link AxEvents} emitter; counters,
 * log lines, health and summaries, breaker windows, metrics and tests are subscribers. Events carry
 * the task type where there is one, so a per-type counter is a subscriber, not new plumbing.
 *
 * Emitting is synchronous and, with no listener, costs a property read and a length check on the
 * event's channel: no allocation beyond the event object the caller passes (see bench/events.js).
 * Hot paths hold channels (`events.channel(name)`); paths that build an expensive event check
 * `active` / `has(name)` first and skip even that.
 */
import type {ReconcileReport} from './reconcile/report.js';
import type {PoolName} from './task/model.js';

/** Who rang a doorbell. */
export type DoorbellSource = 'producer' | 'scheduler' | 'relay' | 'reconciler' | 'worker';

/** The attempt of one task as the worker ran it. */
export interface AttemptEvent {
  id: string;
  type: string;
  /** 1 for the first run. */
  attempt: number;
  /** The claim's fence: which claim of the task this attempt was. */
  fence: number;
  /** From the hand-over to the pool (local queueing included) until the attempt ended. */
  durationMs: number;
}

/** A failed attempt: the error recorded on the row, and the stack when the failure had one. */
export interface FailureEvent extends AttemptEvent {
  error: string;
  stack?: string;
}

/** A breaker transition of a task type. */
export interface BreakerEvent {
  type: string;
  from: 'closed' | 'open' | 'half_open';
  to: 'closed' | 'open' | 'half_open';
  /** Open: the next probe time (epoch ms). */
  until: number | null;
  openings: number;
  detail: string;
}

/** Every event of ax and its payload. Outcome events are emitted once the outcome is durable. */
export interface AxEventMap {
  /** A producer batch wrote `count` new tasks of `type` (ids or dedup keys that existed are not counted). */
  'task:submitted': {type: string; count: number};
  /** A worker won the claim of a task (state → running, attempt + 1). */
  'task:claimed': {
    id: string;
    type: string;
    attempt: number;
    pool: PoolName;
    /** How long after its run_at the claim took the task (database clock, ms; 0 when claimed on time). */
    lateMs: number;
  };
  'task:succeeded': AttemptEvent;
  /** Failed with attempts left: due again after `retryDelayMs`. */
  'task:failed': FailureEvent & {retryDelayMs: number};
  /** Out of attempts, or the handler said unrecoverable. */
  'task:dead': FailureEvent;
  /** Handed back without using an attempt (never started, pool full, another pool's task). */
  'task:released': AttemptEvent & {reason: string};
  /**
   * The admission step (core/flow) did not let a task of `type` run: it waits in storage for
   * `delayMs` without using an attempt (`parked`: paused, breaker, unhandled, capped — over its
   * type's max running —, rate — waiting for its rate-limit slot; null: its handler is
   * on other workers). `claimed`: it had been claimed (the attempt was given back).
   */
  'task:parked': {
    id: string;
    type: string;
    parked: 'paused' | 'breaker' | 'unhandled' | 'capped' | 'rate' | 'key-capped' | 'key-rate' | null;
    reason: string;
    delayMs: number;
    claimed: boolean;
  };
  /**
   * A worker took tasks back from its local queues before they started, because a flow refresh
   * found their type may not run now (paused, breaker open); emitted synchronously with the
   * refresh, before their park outcomes are written (each is a task:parked event once written).
   */
  'tasks:withdrawn': {count: number; types: string[]};
  /**
   * A type's cluster-wide breaker moved (emitted by the worker whose compare-and-set won, or the
   * operator's reset): opened (tasks park until `until`), half-open (probes go through), closed.
   */
  'breaker:opened': BreakerEvent;
  'breaker:half-open': BreakerEvent;
  'breaker:closed': BreakerEvent;
  /** A task waited AX_UNHANDLED_DEAD_AFTER with no live worker having its handler, and went dead. */
  'task:unhandled-dead': {id: string; type: string};
  /** Outcomes whose row had moved on (another fence, not running): nothing was written. */
  'outcome:stale': {count: number};
  /** Doorbells were published and confirmed by RabbitMQ (the rows' published marks follow). */
  'doorbell:published': {by: DoorbellSource; count: number; ids: readonly string[]};
  /** A doorbell rang for a task already running, finished or not yet due: acked and dropped. */
  'doorbell:stale': {id: string; type: string};
  /** Extra doorbells for a task claimed in the same batch: acked with the claim. */
  'doorbell:duplicate': {id: string; type: string; extra: number};
  /** A message ax cannot use was moved to the poison queue (or dropped). */
  'doorbell:poisoned': {reason: string; bytes: number};
  /**
   * Another process took over a task this worker held (its lease had expired), or an operator
   * cancelled it and this worker missed the control message: the attempt is aborted.
   */
  'lease:lost': {id: string; type: string};
  /**
   * An operator cancelled a running task this worker runs (a control message, see
   * core/worker/cancel.ts): its handler is being stopped (signal now, forced after `graceMs`).
   */
  'task:cancelled': {id: string; type: string; attempt: number; by: string; reason: string | null; graceMs: number};
  /** The rescuer moved a running task whose lease expired to failed or dead (the attempt counts). */
  'lease:expired': {id: string; attempt: number; to: 'failed' | 'dead'; worker: string | null};
  /** A scheduler load from MySQL succeeded: `held` tasks are in its wheel. */
  'scheduler:loaded': {held: number; at: number};
  /** A scheduler could not publish due tasks; they stay held and are retried shortly. */
  'scheduler:publish-failed': {count: number; error: string};
  /**
   * The scheduler's dead-letter scan found `count` tasks of `type` that died in [since, until)
   * (database time, ms since the epoch): each death is reported once per scheduler process.
   */
  'dlq:new': {type: string; count: number; since: number; until: number};
  /** One reconcile pass finished: what it found and did. */
  'reconcile:done': ReconcileReport;
  /** A relay batch went all the way through. */
  'relay:batch': {rows: number; relayed: number; published: number; failed: number};
  /** A relay pass ended: `error` null when it succeeded. */
  'relay:pass': {at: number; error: string | null};
  /** RabbitMQ blocked (memory or disk alarm) or unblocked this relay's publishes. */
  'relay:blocked': {blocked: boolean};
  'relay:purged': {rows: number};
  'relay:lag': {lag: {unsent: number; failed: number; oldestAgeMs: number | null}};
}

export type AxEventName = keyof AxEventMap;
export type AxListener<K extends AxEventName> = (event: AxEventMap[K]) => void;

export interface AxEventsOptions {
  /**
   * Called when a listener throws (the event still reaches the other listeners, and the emitter
   * never throws into the service). Default: a process warning.
   */
  onListenerError?: (error: unknown, event: AxEventName) => void;
}

/**
 * The listeners of one event name. Hot paths hold the channel (`events.channel(name)`) and call
 * its `emit`: one monomorphic property read and a length check when nobody listens, where a
 * lookup by name costs several times more once a service emits many names (measured in
 * bench/events.js). Listener arrays are copied on change, never on emit.
 */
export class AxChannel<K extends AxEventName> {
  private ls: ReadonlyArray<AxListener<K>> = [];

  constructor(
    readonly name: K,
    private readonly report: (error: unknown, event: AxEventName) => void,
  ) {}

  /** True when the channel has a listener (to skip building an expensive event). */
  get active(): boolean {
    return this.ls.length > 0;
  }

  add(fn: AxListener<K>): () => void {
    this.ls = [...this.ls, fn];
    return () => this.remove(fn);
  }

  remove(fn: AxListener<K>): void {
    const i = this.ls.indexOf(fn);
    if (i >= 0) this.ls = this.ls.slice(0, i).concat(this.ls.slice(i + 1));
  }

  emit(event: AxEventMap[K]): void {
    const ls = this.ls;
    if (ls.length === 0) return;
    for (let i = 0; i < ls.length; i++) {
      try {
        ls[i]!(event);
      } catch (e) {
        this.report(e, this.name);
      }
    }
  }
}

/**
 * A small typed, synchronous emitter: one {@link AxChannel} per event name. Listeners run in the
 * order they were added, inside `emit`; a listener that throws is reported through
 * `onListenerError` and does not stop the others. A listener may unsubscribe during emit.
 */
export class AxEvents {
  private readonly channels = new Map<AxEventName, AxChannel<AxEventName>>();
  private readonly onListenerError: (error: unknown, event: AxEventName) => void;

  constructor(o: AxEventsOptions = {}) {
    this.onListenerError =
      o.onListenerError ??
      ((e, name) => process.emitWarning(`ax event listener for "${name}" threw: ${String(e)}`, 'AxEventListenerError'));
  }

  /** The channel of `name` (the same object on every call): hold it on hot paths. */
  channel<K extends AxEventName>(name: K): AxChannel<K> {
    let c = this.channels.get(name) as AxChannel<K> | undefined;
    if (!c) {
      c = new AxChannel(name, this.onListenerError);
      this.channels.set(name, c as unknown as AxChannel<AxEventName>);
    }
    return c;
  }

  /** Adds a listener; returns the function that removes it. */
  on<K extends AxEventName>(name: K, fn: AxListener<K>): () => void {
    return this.channel(name).add(fn);
  }

  off<K extends AxEventName>(name: K, fn: AxListener<K>): void {
    this.channel(name).remove(fn);
  }

  /** True when `name` has a listener (to skip building an expensive event). */
  has(name: AxEventName): boolean {
    return this.channels.get(name)?.active ?? false;
  }

  emit<K extends AxEventName>(name: K, event: AxEventMap[K]): void {
    this.channels.get(name)?.emit(event as never);
  }
}

/** Resolves with the first `name` event that satisfies `pred` (tests and one-shot waits). */
export function nextEvent<K extends AxEventName>(
  events: AxEvents,
  name: K,
  pred: (e: AxEventMap[K]) => boolean = () => true,
): Promise<AxEventMap[K]> {
  return new Promise((resolve) => {
    const off = events.on(name, (e) => {
      if (!pred(e)) return;
      off();
      resolve(e);
    });
  });
}
