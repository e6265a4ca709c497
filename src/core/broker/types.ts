import {DEFAULT_PRIORITY, type PoolName, type Priority} from '../task/model.js';

/** The doorbell for one task: "task `id` may be ready". Never carries the payload. */
export interface TaskMessage {
  id: string;
  type: string;
  pool: PoolName;
  /** The level of the pool's queue it is rung on (the task row's `priority`; absent: normal). */
  priority?: Priority;
}

/** One message received from a pool queue. */
export interface Delivery {
  readonly body: Buffer;
  readonly redelivered: boolean;
  /**
   * Acknowledges the message. A no-op when the channel it came on has since closed (the broker
   * redelivers it; never ack a tag on another channel) or when it was already acked.
   */
  ack(): void;
}

export interface Subscription {
  /** Stops receiving; deliveries already received may still be acked. Idempotent. */
  cancel(): Promise<void>;
}

/** One of ax's queues of a cell (Broker.inspectQueues). */
export interface QueueInfo {
  name: string;
  /** `pool`: a pool's doorbells (at one level); `poison`: messages no worker could use. */
  role: 'pool' | 'poison';
  /** The pool of a pool queue, null for the poison queue. */
  pool: PoolName | null;
  /** The priority level of a pool queue, null for the poison queue. */
  priority: Priority | null;
  /** False when the queue does not exist: nothing can be rung on it until a worker or producer declares it. */
  exists: boolean;
  /** Ready messages, not tasks (one doorbell may ring for several); excludes unacked deliveries. Null when missing. */
  messages: number | null;
  /** Consumers attached (a worker holds one per pool it runs). Null when missing. */
  consumers: number | null;
}

export type BrokerEvent = 'connected' | 'disconnected' | 'blocked' | 'unblocked';

/**
 * A control message to every worker of a cell: "stop these running attempts" (an operator's
 * cancel, already committed in MySQL). Best effort and never the truth: a worker that misses it
 * finds the row no longer its own at its next lease renewal and stops the handler then.
 */
export interface ControlMessage {
  kind: 'cancel';
  /** The attempts: task id and the fence the attempt held (a worker holding another fence ignores it). */
  tasks: Array<{id: string; fence: number}>;
  /** The operator who cancelled. */
  by: string;
  reason: string | null;
}

/** Most attempts one control message names (a bulk cancel sends several messages). */
export const MAX_CONTROL_TASKS = 1000;
const MAX_CONTROL_BYTES = 256 * 1024;

export function encodeControl(m: ControlMessage): Buffer {
  return Buffer.from(JSON.stringify({v: 1, kind: m.kind, tasks: m.tasks.map((t) => [t.id, t.fence]), by: m.by, reason: m.reason}));
}

/** Parses a control message; null for anything malformed or of a kind this version does not know (ignored). */
export function decodeControl(body: Buffer): ControlMessage | null {
  if (body.length === 0 || body.length > MAX_CONTROL_BYTES) return null;
  try {
    const o = JSON.parse(body.toString('utf8')) as {kind?: unknown; tasks?: unknown; by?: unknown; reason?: unknown};
    if (o === null || typeof o !== 'object' || o.kind !== 'cancel' || typeof o.by !== 'string') return null;
    if (o.reason !== null && typeof o.reason !== 'string') return null;
    if (!Array.isArray(o.tasks) || o.tasks.length === 0 || o.tasks.length > MAX_CONTROL_TASKS) return null;
    const tasks: ControlMessage['tasks'] = [];
    for (const t of o.tasks as unknown[]) {
      if (!Array.isArray(t) || typeof t[0] !== 'string' || !Number.isSafeInteger(t[1])) return null;
      tasks.push({id: t[0], fence: t[1] as number});
    }
    return {kind: 'cancel', tasks, by: o.by, reason: o.reason};
  } catch {
    return null;
  }
}

/**
 * The transport seam. RabbitMQ rings doorbells; it never decides anything. Implementations
 * reconnect on their own, re-declare the topology and re-subscribe consumers.
 */
export interface Broker {
  /** Connects and declares the topology (idempotent). Throws AxError('unavailable'). */
  start(): Promise<void>;
  /**
   * Rings for these tasks: publishes persistent doorbells (several tasks of one pool may share a
   * message, see groupDoorbells) and resolves once the broker has confirmed every one of them.
   * Rejects with AxError('unavailable') on nack, unroutable message or lost connection, and with
   * AxError('timeout') when confirms do not arrive within the configured time. At most one batch
   * is unconfirmed at a time; callers' batches are queued.
   */
  publish(messages: TaskMessage[]): Promise<void>;
  /**
   * Consumes a pool's queue at one priority level (default normal) with at most `prefetch`
   * unacknowledged messages, on a channel of its own (a backlog on one level never holds back
   * another's deliveries). `onDelivery` must not throw. The subscription survives reconnects.
   */
  consume(pool: PoolName, prefetch: number, onDelivery: (d: Delivery) => void, priority?: Priority): Promise<Subscription>;
  /**
   * Sends a control message to every worker of the cell consuming control messages now (a fanout
   * exchange, not persistent, confirmed by the broker; no worker listening is not an error).
   * Rejects with AxError('unavailable'/'timeout') like publish.
   */
  publishControl(m: ControlMessage): Promise<void>;
  /**
   * Receives the cell's control messages on a queue of this connection's own (exclusive,
   * auto-deleted, bound to the control exchange); malformed ones are dropped. Survives reconnects,
   * but messages sent while disconnected are lost (callers have a fallback). `onMessage` must not throw.
   */
  consumeControl(onMessage: (m: ControlMessage) => void): Promise<Subscription>;
  /** Moves an unprocessable delivery to the poison queue (confirmed), then acks it. */
  poison(d: Delivery, reason: string): Promise<void>;
  /** Ready messages per queue (messages, not tasks: one may ring for several; for tests and stats). */
  queueDepths(): Promise<Record<string, number>>;
  /**
   * The cell's pool queues and poison queue as the broker sees them now: ready messages and
   * consumers each, or `exists: false` for a queue that was never declared or was deleted. Declares
   * nothing (a passive check per queue). Throws AxError('unavailable') when RabbitMQ is down.
   */
  inspectQueues(): Promise<QueueInfo[]>;
  on(event: BrokerEvent, listener: (info?: unknown) => void): void;
  close(): Promise<void>;
}

/** The most task references one doorbell may carry (bounds the body a consumer accepts). */
export const MAX_TASKS_PER_MESSAGE = 1000;
const MAX_BODY_BYTES = 256 * 1024;

/**
 * Encodes one doorbell for one or more tasks of the same pool. One task: `{"v":1,"id":…,"type":…}`;
 * several: `{"v":2,"tasks":[[id,type],…]}` ("these tasks may be ready"). Never the payload.
 */
export function encodeMessage(refs: ReadonlyArray<Pick<TaskMessage, 'id' | 'type'>>): Buffer {
  if (refs.length === 1) return Buffer.from(JSON.stringify({v: 1, id: refs[0]!.id, type: refs[0]!.type}));
  return Buffer.from(JSON.stringify({v: 2, tasks: refs.map((m) => [m.id, m.type])}));
}

/**
 * Parses a doorbell (either form) into the tasks it rings for, in order; returns null for anything
 * malformed — not JSON, a missing or non-string id or type, no tasks, too many, too big — and the
 * caller poisons the whole message.
 */
export function decodeMessage(body: Buffer): Array<{id: string; type: string}> | null {
  if (body.length === 0 || body.length > MAX_BODY_BYTES) return null;
  try {
    const o = JSON.parse(body.toString('utf8')) as unknown;
    if (o === null || typeof o !== 'object') return null;
    const {id, type, tasks} = o as {id?: unknown; type?: unknown; tasks?: unknown};
    if (tasks === undefined) return typeof id === 'string' && typeof type === 'string' ? [{id, type}] : null;
    if (!Array.isArray(tasks) || tasks.length === 0 || tasks.length > MAX_TASKS_PER_MESSAGE) return null;
    const out: Array<{id: string; type: string}> = [];
    for (const t of tasks as unknown[]) {
      if (!Array.isArray(t) || typeof t[0] !== 'string' || typeof t[1] !== 'string') return null;
      out.push({id: t[0], type: t[1]});
    }
    return out;
  } catch {
    return null;
  }
}

/**
 * Groups doorbells into messages: per pool and priority level (one queue each), in order, at most
 * `perMessage` tasks each (1: one message per task). The consumer's claim batches several
 * deliveries anyway; one message for many tasks divides the broker's per-message work (publish,
 * confirm, deliver, ack) by up to `perMessage`.
 */
export function groupDoorbells(messages: readonly TaskMessage[], perMessage: number): TaskMessage[][] {
  const byPool = new Map<string, TaskMessage[][]>();
  for (const m of messages) {
    const key = `${m.pool}.${m.priority ?? DEFAULT_PRIORITY}`;
    let groups = byPool.get(key);
    if (!groups) byPool.set(key, (groups = [[]]));
    let last = groups[groups.length - 1]!;
    if (last.length >= perMessage) groups.push((last = []));
    last.push(m);
  }
  return [...byPool.values()].flat();
}

/**
 * One delivery per task of a doorbell that rings for several: the message is acked once every part
 * is (claimed, dropped as stale, or poisoned). A part's body is the one task's own doorbell, so a
 * poisoned part puts just that task's id on the poison queue.
 */
export function splitDelivery(d: Delivery, refs: Array<{id: string; type: string}>): Delivery[] {
  let left = refs.length;
  return refs.map((r) => {
    let acked = false;
    let body: Buffer | undefined;
    return {
      get body() {
        return (body ??= encodeMessage([r]));
      },
      redelivered: d.redelivered,
      ack() {
        if (acked) return;
        acked = true;
        if (--left === 0) d.ack();
      },
    };
  });
}
