import {EventEmitter} from 'node:events';
import amqp from 'amqplib';
import type {Channel, ChannelModel, ConfirmChannel, ConsumeMessage, Options} from 'amqplib';
import {AxError, errorMessage} from '../../errors.js';
import type {Logger} from '../../log.js';
import {type Clock, type Random, sleep} from '../../time.js';
import {type BackoffShape, backoffMs} from '../../retry/backoff.js';
import {DEFAULT_PRIORITY, POOLS, PRIORITIES, type PoolName, type Priority} from '../../task/model.js';
import {
  type Broker,
  type BrokerEvent,
  type ControlMessage,
  type Delivery,
  type QueueInfo,
  type Subscription,
  type TaskMessage,
  decodeControl,
  encodeControl,
  encodeMessage,
  groupDoorbells,
  MAX_TASKS_PER_MESSAGE,
} from '../types.js';
import {closeChannel, closeConnection} from './close.js';
import {amqpConnectError} from './errors.js';
import {connectFirstLive, firstNode, type NodeFailure, nodeAfter} from './nodes.js';
import {redactUrl} from '../../config/redact-url.js';
import {type Topology, topology} from './topology.js';

export interface AmqpBrokerOptions {
  /**
   * The server's URL, or the URLs of one cluster's nodes (parseAmqpUrls of AX_AMQP_URL): each
   * connect tries them in turn, from a random one at start and from the one after the node lost on
   * a reconnect, and keeps the first that works.
   */
  urls: readonly string[];
  prefix: string;
  cell: string;
  queueType: 'quorum' | 'classic';
  confirmTimeoutMs: number;
  clock: Clock;
  random: Random;
  logger: Logger;
  /** Reconnect with jittered backoff after a lost connection (services), or stay down (one-shot CLI). */
  reconnect: boolean;
  /** Most tasks one published doorbell carries (default 1: one message per task). */
  tasksPerMessage?: number;
  /**
   * Declare the exchange and queues on connect (default true). False for read-only tools (ax
   * queues), which must see a missing queue as missing rather than create it.
   */
  declare?: boolean;
}

interface RawPublish {
  exchange: string;
  routingKey: string;
  content: Buffer;
  options: Options.Publish;
}

/**
 * Coalesces acks on one channel: deliveries are acknowledged in tag order, as many as are done
 * from the oldest outstanding one, with one `multiple` ack per turn of the event loop instead of one
 * frame per message (measured: a third of the broker's and node's per-message ack cost).
 */
class AckWindow {
  private readonly outstanding = new Map<number, {msg: ConsumeMessage; done: boolean}>();
  private scheduled = false;

  constructor(private readonly ch: Channel) {}

  received(msg: ConsumeMessage): void {
    this.outstanding.set(msg.fields.deliveryTag, {msg, done: false});
  }

  done(msg: ConsumeMessage): void {
    const e = this.outstanding.get(msg.fields.deliveryTag);
    if (!e) return;
    e.done = true;
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Sends the acks that are due now (also called before the channel is closed on purpose). */
  flush(): void {
    this.scheduled = false;
    let last: ConsumeMessage | undefined;
    let n = 0;
    for (const [tag, e] of this.outstanding) {
      if (!e.done) break;
      this.outstanding.delete(tag);
      last = e.msg;
      n++;
    }
    if (!last) return;
    try {
      this.ch.ack(last, n > 1);
    } catch {
      // Channel closed under us: the broker will redeliver; the row's claim absorbs it.
    }
  }
}

/** The wait between reconnect attempts: 400 ms doubling to 30 s, jittered to between half and one and a half of it. */
export const RECONNECT_BACKOFF: BackoffShape = {firstMs: 400, maxMs: 30_000, jitter: [0.5, 1.5]};

/** Heartbeat asked of the server unless the URL sets one: a dead peer is noticed within ~2 beats. */
const DEFAULT_HEARTBEAT_S = 15;

/** The URL with `heartbeat=15` added when it names none (RabbitMQ's own default is 60 s). */
export function withHeartbeat(url: string): string {
  if (/[?&]heartbeat=/.test(url)) return url;
  return `${url}${url.includes('?') ? '&' : '?'}heartbeat=${DEFAULT_HEARTBEAT_S}`;
}

class Consumer {
  ch: Channel | undefined;
  acks: AckWindow | undefined;
  cancelled = false;
  constructor(
    readonly pool: PoolName,
    readonly priority: Priority,
    readonly prefetch: number,
    readonly onDelivery: (d: Delivery) => void,
  ) {}
}

/** A consumer of the cell's control messages (consumeControl). */
class ControlConsumer {
  ch: Channel | undefined;
  cancelled = false;
  constructor(readonly onMessage: (m: ControlMessage) => void) {}
}

/**
 * The Broker on RabbitMQ (amqplib). One connection, to one node of `urls`; a confirm channel for
 * publishing and one channel per consumer. Any unexpected channel or connection close resets the
 * whole connection, and (with `reconnect`) a loop reconnects — to the next node that answers —,
 * re-declares the topology and re-subscribes. A nacked publish replaces the publishing channel
 * (renewPublisher): RabbitMQ may go on nacking on that channel after a node's loss.
 */
export class AmqpBroker implements Broker {
  readonly names: Topology;
  private conn: ChannelModel | undefined;
  /** `conn` once it is fully set up (topology, consumers): only its loss starts a reconnect loop. */
  private live: ChannelModel | undefined;
  private pub: ConfirmChannel | undefined;
  /** Index in `urls` of the node connected to (of the last one, while down). */
  private node = 0;
  /** Index in `urls` the next connect starts from. */
  private nextStart: number;
  private ready: Promise<void> | undefined;
  private closing = false;
  private chain: Promise<unknown> = Promise.resolve();
  private returned: Set<string> | undefined;
  private readonly consumers = new Set<Consumer>();
  private readonly controls = new Set<ControlConsumer>();
  private readonly events = new EventEmitter();

  constructor(private readonly opts: AmqpBrokerOptions) {
    const per = opts.tasksPerMessage ?? 1;
    if (!Number.isInteger(per) || per < 1 || per > MAX_TASKS_PER_MESSAGE)
      throw new AxError('invalid_input', `tasksPerMessage must be a whole number from 1 to ${MAX_TASKS_PER_MESSAGE}, got ${per}`);
    if (opts.urls.length === 0) throw new AxError('invalid_input', 'AmqpBroker needs at least one RabbitMQ URL');
    this.names = topology(opts.prefix, opts.cell, opts.queueType);
    this.nextStart = firstNode(opts.urls.length, opts.random);
  }

  on(event: BrokerEvent, listener: (info?: unknown) => void): void {
    this.events.on(event, listener);
  }

  async start(): Promise<void> {
    if (this.closing) throw new AxError('closed', 'broker is closed');
    this.ready ??= this.connect();
    try {
      await this.ready;
    } catch (e) {
      this.ready = undefined;
      throw e;
    }
  }

  /**
   * One round over the nodes (connectFirstLive): connected to the first that works, or the round's
   * error (AxError('unavailable') naming each node, or the topology's refusal).
   */
  private async connect(): Promise<void> {
    const skipped: NodeFailure[] = [];
    const {index} = await connectFirstLive(
      this.opts.urls,
      this.nextStart,
      (url) => this.connectTo(url),
      (f) => skipped.push(f),
    );
    this.node = index;
    const node = redactUrl(this.opts.urls[index]!);
    // A round that failed as a whole is logged by its caller; one that got past dead nodes says which.
    if (skipped.length > 0)
      this.opts.logger.warn('amqp connected past unavailable nodes', {
        node,
        skipped: skipped.map((f) => ({node: redactUrl(f.url), error: errorMessage(f.error)})),
      });
    else this.opts.logger.debug('amqp connected', {node});
  }

  /** Connects to `url` and sets everything up on it; on any failure closes what it opened and throws. */
  private async connectTo(url: string): Promise<void> {
    let conn: ChannelModel | undefined;
    try {
      conn = await amqp.connect(withHeartbeat(url), {
        noDelay: true,
        timeout: 10_000,
        clientProperties: {connection_name: `ax ${process.pid}`},
      });
      const c = conn;
      c.on('error', (e: Error) => this.opts.logger.warn('amqp connection error', {error: e.message}));
      c.on('blocked', (reason: string) => {
        this.opts.logger.warn('amqp connection blocked by the broker (resource alarm)', {reason});
        this.events.emit('blocked', reason);
      });
      c.on('unblocked', () => this.events.emit('unblocked'));
      const pub = await this.openPublisher(c);
      if (this.opts.declare !== false) await this.declare(pub);
      c.on('close', (e?: Error) => this.lost(c, e));
      this.conn = c;
      this.pub = pub;
      for (const k of this.consumers) if (!k.cancelled) await this.open(c, k);
      for (const k of this.controls) if (!k.cancelled) await this.openControl(c, k);
      this.live = c;
      this.events.emit('connected');
    } catch (e) {
      if (this.conn === conn) {
        this.conn = undefined;
        this.pub = undefined;
      }
      if (conn) await this.closeConn(conn);
      if (e instanceof AxError) throw e;
      throw amqpConnectError(e, url);
    }
  }

  /**
   * A confirm channel for publishing on `conn`. Its unexpected close resets the connection once it
   * is the one in use (`pub`); the close of one being set up or replaced (renewPublisher) does not.
   */
  private async openPublisher(conn: ChannelModel): Promise<ConfirmChannel> {
    const pub = await conn.createConfirmChannel();
    pub.on('error', (e: Error) => this.opts.logger.warn('amqp publish channel error', {error: e.message}));
    pub.on('return', (msg: ConsumeMessage) => this.returned?.add(String(msg.properties.messageId)));
    pub.on('close', () => {
      if (this.pub === pub) this.reset(conn, pub);
    });
    return pub;
  }

  /**
   * Replaces the publishing channel `old` after RabbitMQ nacked a message on it, and closes `old`.
   * A nack may stick to a channel: RabbitMQ keeps, per channel and quorum queue, the replica the
   * channel's first publish to that queue asked — the leader named by the queue's record at that
   * moment — and RabbitMQ 3.10 nacks at once, without asking another, while that replica's node is
   * down. A publisher that reconnects after losing a node publishes within milliseconds, before the
   * queue's record names the new leader: without a new channel every later publish to that queue
   * would be nacked for as long as the node stays down. A new channel reads the record again (a nack
   * on it renews it again, until the record names the live leader). When no new channel can be
   * opened, the connection is reset (the reconnect loop takes over).
   */
  private async renewPublisher(old: ConfirmChannel): Promise<void> {
    const conn = this.conn;
    if (!conn || this.pub !== old || this.closing) return;
    let pub: ConfirmChannel;
    try {
      pub = await this.openPublisher(conn);
    } catch {
      this.reset(conn, old);
      return;
    }
    if (this.conn !== conn || this.pub !== old) {
      void this.closeCh(pub);
      return;
    }
    this.pub = pub;
    this.opts.logger.debug('amqp publish channel renewed after a nack');
    void this.closeCh(old);
  }

  private async declare(ch: Channel): Promise<void> {
    const n = this.names;
    try {
      await ch.assertExchange(n.exchange, 'direct', {durable: true});
      for (const pool of POOLS)
        for (const level of PRIORITIES) {
          await ch.assertQueue(n.queue(pool, level), {durable: true, arguments: n.queueArgs});
          await ch.bindQueue(n.queue(pool, level), n.exchange, n.routingKey(pool, level));
        }
      await ch.assertQueue(n.poisonQueue, {durable: true, arguments: n.queueArgs});
      await ch.assertExchange(n.controlExchange, 'fanout', {durable: true});
    } catch (e) {
      if ((e as {code?: number}).code === 406) {
        throw new AxError(
          'invalid_input',
          `RabbitMQ refused ax's topology (${errorMessage(e)}): a queue exists with other settings, e.g. another queue type; delete it or set AX_QUEUE_TYPE to match`,
          {cause: e},
        );
      }
      throw e;
    }
  }

  private async open(conn: ChannelModel, k: Consumer): Promise<void> {
    const ch = await conn.createChannel();
    k.ch = ch;
    let open = true;
    const acks = new AckWindow(ch);
    k.acks = acks;
    ch.on('error', (e: Error) =>
      this.opts.logger.warn('amqp consumer channel error', {pool: k.pool, priority: k.priority, error: e.message}),
    );
    ch.on('close', () => {
      open = false;
      if (!k.cancelled && k.ch === ch) this.reset(conn, ch);
    });
    await ch.prefetch(k.prefetch);
    await ch.consume(
      this.names.queue(k.pool, k.priority),
      (msg) => {
        if (msg === null) {
          // The server cancelled the consumer (queue deleted): start over to re-declare and re-subscribe.
          this.reset(conn, ch);
          return;
        }
        acks.received(msg);
        let acked = false;
        k.onDelivery({
          body: msg.content,
          redelivered: msg.fields.redelivered,
          ack: () => {
            if (acked || !open || k.ch !== ch) return;
            acked = true;
            acks.done(msg);
          },
        });
      },
      {noAck: false},
    );
  }

  /**
   * Subscribes `k` on a channel of its own: a server-named queue (exclusive, auto-deleted with the
   * connection) bound to the control exchange, no acks (a control message is best effort).
   */
  private async openControl(conn: ChannelModel, k: ControlConsumer): Promise<void> {
    const ch = await conn.createChannel();
    k.ch = ch;
    ch.on('error', (e: Error) => this.opts.logger.warn('amqp control channel error', {error: e.message}));
    ch.on('close', () => {
      if (!k.cancelled && k.ch === ch) this.reset(conn, ch);
    });
    const x = this.names.controlExchange;
    await ch.assertExchange(x, 'fanout', {durable: true});
    const {queue} = await ch.assertQueue('', {exclusive: true, autoDelete: true, durable: false});
    await ch.bindQueue(queue, x, '');
    await ch.consume(
      queue,
      (msg) => {
        if (msg === null) return this.reset(conn, ch);
        const m = decodeControl(msg.content);
        if (m) k.onMessage(m);
        else this.opts.logger.warn('malformed control message dropped', {bytes: msg.content.length});
      },
      {noAck: true},
    );
  }

  /** Closes `conn` after an unexpected channel close; `lost` then takes over. */
  private reset(conn: ChannelModel, _ch: Channel): void {
    if (this.closing || this.conn !== conn) return;
    void this.closeConn(conn);
  }

  /** Closes a connection, waiting for the server no longer than a confirm may take (close.ts). */
  private closeConn(conn: ChannelModel): Promise<void> {
    return closeConnection(conn, this.opts.confirmTimeoutMs, this.opts.clock);
  }

  /** Closes a channel, waiting for the server no longer than a confirm may take (close.ts). */
  private closeCh(ch: Channel): Promise<void> {
    return closeChannel(ch, this.opts.confirmTimeoutMs, this.opts.clock);
  }

  /**
   * The connection closed. A connection still being set up is left to the connect in progress (it
   * fails, and its caller retries); the loss of a live one starts the reconnect loop from the next node.
   */
  private lost(conn: ChannelModel, e?: Error): void {
    if (this.conn !== conn) return;
    this.conn = undefined;
    this.pub = undefined;
    const wasLive = this.live === conn;
    this.live = undefined;
    if (this.closing || !wasLive) return;
    this.nextStart = nodeAfter(this.node, this.opts.urls.length);
    this.opts.logger.warn('amqp connection lost', {node: redactUrl(this.opts.urls[this.node]!), error: e?.message});
    this.events.emit('disconnected', e);
    this.ready = this.opts.reconnect ? this.reconnectLoop() : Promise.reject(new AxError('unavailable', 'RabbitMQ connection lost'));
    this.ready.catch(() => undefined);
  }

  private async reconnectLoop(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      if (this.closing) throw new AxError('closed', 'broker is closed');
      try {
        await this.connect();
        this.opts.logger.info('amqp reconnected', {attempt, node: redactUrl(this.opts.urls[this.node]!)});
        return;
      } catch (e) {
        const delay = backoffMs(attempt, RECONNECT_BACKOFF, this.opts.random);
        this.opts.logger.warn('amqp reconnect failed', {attempt, retryInMs: Math.round(delay), error: errorMessage(e)});
        await sleep(this.opts.clock, delay);
      }
    }
  }

  /** Waits (bounded by the confirm timeout) for a usable connection. */
  private async channel(): Promise<ConfirmChannel> {
    if (this.closing) throw new AxError('closed', 'broker is closed');
    if (!this.ready) throw new AxError('internal', 'broker not started');
    await this.withTimeout(this.ready, 'waiting for the RabbitMQ connection');
    if (!this.pub) throw new AxError('unavailable', 'RabbitMQ connection is down');
    return this.pub;
  }

  private withTimeout<T>(p: Promise<T>, what: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const t = this.opts.clock.setTimeout(
        () => reject(new AxError('timeout', `timed out after ${this.opts.confirmTimeoutMs}ms ${what}`)),
        this.opts.confirmTimeoutMs,
      );
      p.then(
        (v) => {
          this.opts.clock.clearTimeout(t);
          resolve(v);
        },
        (e: unknown) => {
          this.opts.clock.clearTimeout(t);
          reject(e instanceof AxError ? e : new AxError('unavailable', `RabbitMQ: ${errorMessage(e)}`, {cause: e}));
        },
      );
    });
  }

  private publishRaw(items: RawPublish[]): Promise<void> {
    const run = async (): Promise<void> => {
      const ch = await this.channel();
      const returned = new Set<string>();
      this.returned = returned;
      const confirms: Array<Promise<void>> = [];
      let closed = false;
      let nacked = false;
      const onClose = (): void => {
        closed = true;
      };
      const onNack = (): void => {
        nacked = true;
      };
      ch.once('close', onClose);
      ch.on('nack', onNack);
      try {
        for (const it of items) {
          if (closed) break;
          let ok = true;
          confirms.push(
            new Promise<void>((resolve, reject) => {
              ok = ch.publish(it.exchange, it.routingKey, it.content, it.options, (err) =>
                err ? reject(new AxError('unavailable', `RabbitMQ did not confirm a message: ${errorMessage(err)}`)) : resolve(),
              );
            }),
          );
          if (!ok) await this.withTimeout(new Promise<void>((r) => ch.once('drain', () => r())), 'waiting for the publish buffer to drain');
        }
        if (closed) throw new AxError('unavailable', 'RabbitMQ channel closed while publishing');
        try {
          await this.withTimeout(Promise.all(confirms), 'waiting for publisher confirms');
        } catch (e) {
          // A nack may stick to the channel (renewPublisher): the next publish goes on a new one.
          if (nacked && !closed) await this.renewPublisher(ch);
          throw e;
        }
        if (returned.size > 0)
          throw new AxError('unavailable', `RabbitMQ could not route ${returned.size} message(s): is the topology declared?`);
      } finally {
        ch.removeListener('close', onClose);
        ch.removeListener('nack', onNack);
        if (this.returned === returned) this.returned = undefined;
        for (const c of confirms) c.catch(() => undefined);
      }
    };
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => undefined);
    return p;
  }

  publish(messages: TaskMessage[]): Promise<void> {
    if (messages.length === 0) return Promise.resolve();
    return this.publishRaw(
      groupDoorbells(messages, this.opts.tasksPerMessage ?? 1).map((g) => ({
        exchange: this.names.exchange,
        routingKey: this.names.routingKey(g[0]!.pool, g[0]!.priority),
        content: encodeMessage(g),
        // messageId identifies the message for unroutable returns; type only when it is one task's.
        options: {
          persistent: true,
          mandatory: true,
          messageId: g[0]!.id,
          contentType: 'application/json',
          ...(g.length === 1 ? {type: g[0]!.type} : {}),
        },
      })),
    );
  }

  async consume(
    pool: PoolName,
    prefetch: number,
    onDelivery: (d: Delivery) => void,
    priority: Priority = DEFAULT_PRIORITY,
  ): Promise<Subscription> {
    if (!Number.isInteger(prefetch) || prefetch < 1 || prefetch > 65_535) throw new AxError('invalid_input', 'prefetch must be 1..65535');
    if (!(PRIORITIES as readonly string[]).includes(priority))
      throw new AxError('invalid_input', `priority must be one of ${PRIORITIES.join(', ')}, got ${String(priority)}`);
    const k = new Consumer(pool, priority, prefetch, onDelivery);
    this.consumers.add(k);
    if (this.conn) await this.open(this.conn, k);
    return {
      cancel: async () => {
        if (k.cancelled) return;
        k.cancelled = true;
        this.consumers.delete(k);
        const ch = k.ch;
        k.acks?.flush();
        // Closing the channel (rather than basic.cancel) returns its unacked, unclaimed deliveries
        // to the queue at once; deliveries already acked stay acked.
        if (ch) await this.closeCh(ch);
      },
    };
  }

  publishControl(m: ControlMessage): Promise<void> {
    return this.publishRaw([
      {
        exchange: this.names.controlExchange,
        routingKey: '',
        content: encodeControl(m),
        options: {persistent: false, mandatory: false, contentType: 'application/json', type: `control.${m.kind}`},
      },
    ]);
  }

  async consumeControl(onMessage: (m: ControlMessage) => void): Promise<Subscription> {
    const k = new ControlConsumer(onMessage);
    this.controls.add(k);
    if (this.conn) await this.openControl(this.conn, k);
    return {
      cancel: async () => {
        if (k.cancelled) return;
        k.cancelled = true;
        this.controls.delete(k);
        if (k.ch) await this.closeCh(k.ch);
      },
    };
  }

  async poison(d: Delivery, reason: string): Promise<void> {
    await this.publishRaw([
      {
        exchange: '',
        routingKey: this.names.poisonQueue,
        content: d.body,
        options: {
          persistent: true,
          mandatory: true,
          messageId: `poison-${this.opts.clock.now()}`,
          headers: {'x-ax-reason': reason.slice(0, 500)},
        },
      },
    ]);
    d.ack();
  }

  async queueDepths(): Promise<Record<string, number>> {
    if (!this.conn) await this.channel();
    const conn = this.conn;
    if (!conn) throw new AxError('unavailable', 'RabbitMQ connection is down');
    const ch = await conn.createChannel();
    ch.on('error', () => undefined);
    try {
      const out: Record<string, number> = {};
      for (const q of this.names.allQueues()) out[q] = (await ch.checkQueue(q)).messageCount;
      return out;
    } finally {
      await this.closeCh(ch);
    }
  }

  async inspectQueues(): Promise<QueueInfo[]> {
    if (!this.conn) await this.channel();
    const conn = this.conn;
    if (!conn) throw new AxError('unavailable', 'RabbitMQ connection is down');
    const queues: Array<Pick<QueueInfo, 'name' | 'role' | 'pool' | 'priority'>> = [
      ...POOLS.flatMap((pool) =>
        PRIORITIES.map((priority) => ({name: this.names.queue(pool, priority), role: 'pool' as const, pool, priority})),
      ),
      {name: this.names.poisonQueue, role: 'poison', pool: null, priority: null},
    ];
    const out: QueueInfo[] = [];
    let ch: Channel | undefined;
    try {
      for (const q of queues) {
        if (!ch) {
          ch = await conn.createChannel();
          ch.on('error', () => undefined);
        }
        try {
          const r = await ch.checkQueue(q.name);
          out.push({...q, exists: true, messages: r.messageCount, consumers: r.consumerCount});
        } catch (e) {
          // 404 NOT_FOUND closes the channel: the next queue gets a new one.
          if ((e as {code?: number}).code !== 404) throw new AxError('unavailable', `RabbitMQ: ${errorMessage(e)}`, {cause: e});
          ch = undefined;
          out.push({...q, exists: false, messages: null, consumers: null});
        }
      }
      return out;
    } finally {
      if (ch) await this.closeCh(ch);
    }
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    for (const k of this.consumers) k.cancelled = true;
    for (const k of this.controls) k.cancelled = true;
    // Let the batch being confirmed finish, but no longer than a confirm may take.
    await this.withTimeout(this.chain, 'closing').catch(() => undefined);
    const conn = this.conn;
    this.conn = undefined;
    this.live = undefined;
    this.pub = undefined;
    if (conn) await this.closeConn(conn);
  }
}
