import type {PoolName} from '../task/model.js';

/** The doorbell for one task: "task `id` may be ready". Never carries the payload. */
export interface TaskMessage {
  id: string;
  type: string;
  pool: PoolName;
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

export type BrokerEvent = 'connected' | 'disconnected' | 'blocked' | 'unblocked';

/**
 * The transport seam. RabbitMQ rings doorbells; it never decides anything. Implementations
 * reconnect on their own, re-declare the topology and re-subscribe consumers.
 */
export interface Broker {
  /** Connects and declares the topology (idempotent). Throws AxError('unavailable'). */
  start(): Promise<void>;
  /**
   * Publishes persistent messages and resolves once the broker has confirmed every one of them.
   * Rejects with AxError('unavailable') on nack, unroutable message or lost connection, and with
   * AxError('timeout') when confirms do not arrive within the configured time. At most one batch
   * is unconfirmed at a time; callers' batches are queued.
   */
  publish(messages: TaskMessage[]): Promise<void>;
  /**
   * Consumes a pool's queue with at most `prefetch` unacknowledged messages. `onDelivery` must not
   * throw. The subscription survives reconnects.
   */
  consume(pool: PoolName, prefetch: number, onDelivery: (d: Delivery) => void): Promise<Subscription>;
  /** Moves an unprocessable delivery to the poison queue (confirmed), then acks it. */
  poison(d: Delivery, reason: string): Promise<void>;
  /** Message counts per queue (for tests, stats and `ax top`). */
  queueDepths(): Promise<Record<string, number>>;
  on(event: BrokerEvent, listener: (info?: unknown) => void): void;
  close(): Promise<void>;
}

export function encodeMessage(m: TaskMessage): Buffer {
  return Buffer.from(JSON.stringify({v: 1, id: m.id, type: m.type}));
}

/** Parses a doorbell; returns null for anything malformed (the caller poisons it). */
export function decodeMessage(body: Buffer): {id: string; type: string} | null {
  if (body.length === 0 || body.length > 4096) return null;
  try {
    const o = JSON.parse(body.toString('utf8')) as unknown;
    if (o === null || typeof o !== 'object') return null;
    const {id, type} = o as {id?: unknown; type?: unknown};
    if (typeof id !== 'string' || typeof type !== 'string') return null;
    return {id, type};
  } catch {
    return null;
  }
}
