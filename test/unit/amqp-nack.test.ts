/**
 * A nacked publish renews the publishing channel (src/core/broker/amqp/broker.ts, renewPublisher):
 * RabbitMQ 3.10 keeps nacking, on the channel, every publish to a quorum queue whose first publish
 * there asked a replica on a node that has died since (test/faults/rabbit-cluster.test.ts met it:
 * the producer and the scheduler, reconnected after their node's kill, were nacked for good and the
 * tasks were never rung). amqplib is replaced by a fake whose channels nack or confirm as told.
 */
import {EventEmitter} from 'node:events';
import {afterEach, describe, expect, it, vi} from 'vitest';
import {fakeClock} from '../helpers/clock.js';

/** A confirm channel that nacks every publish (as the stuck one does) or confirms it. */
class FakeChannel extends EventEmitter {
  published = 0;
  closed = false;
  constructor(readonly nack: boolean) {
    super();
  }
  publish(_x: string, _rk: string, _c: Buffer, _o: unknown, cb: (err: Error | null) => void): boolean {
    const tag = ++this.published;
    queueMicrotask(() => {
      // As amqplib: the frame's event, whose own listener calls back the publish.
      if (this.nack) {
        this.emit('nack', {deliveryTag: tag, multiple: false});
        cb(new Error('message nacked'));
      } else cb(null);
    });
    return true;
  }
  close(): Promise<void> {
    this.closed = true;
    queueMicrotask(() => this.emit('close'));
    return Promise.resolve();
  }
}

class FakeConnection extends EventEmitter {
  readonly channels: FakeChannel[] = [];
  closes = 0;
  readonly connection = {stream: {destroy: () => undefined}};
  constructor(private readonly nacks: boolean[]) {
    super();
  }
  createConfirmChannel(): Promise<FakeChannel> {
    const ch = new FakeChannel(this.nacks[this.channels.length] ?? false);
    this.channels.push(ch);
    return Promise.resolve(ch);
  }
  close(): Promise<void> {
    this.closes++;
    queueMicrotask(() => this.emit('close'));
    return Promise.resolve();
  }
}

const connections: FakeConnection[] = [];
let nacks: boolean[] = [];
vi.mock('amqplib', () => ({
  default: {
    connect: () => {
      const c = new FakeConnection(nacks);
      connections.push(c);
      return Promise.resolve(c);
    },
  },
}));

const {AmqpBroker} = await import('../../src/core/broker/amqp/broker.js');
const {createLogger} = await import('../../src/core/log.js');

const task = {id: '01a24fb4-8a7f-72b5-9a2f-88247458f9ff', type: 't', pool: 'io' as const};

async function started(channelsNack: boolean[]) {
  nacks = channelsNack;
  const b = new AmqpBroker({
    urls: ['amqp://127.0.0.1:1'],
    prefix: 'axt',
    cell: 'default',
    queueType: 'quorum',
    confirmTimeoutMs: 1000,
    clock: fakeClock(),
    random: () => 0,
    logger: createLogger('error', {}, () => undefined),
    reconnect: true,
    declare: false,
  });
  await b.start();
  return b;
}

describe('AmqpBroker: a nacked publish', () => {
  afterEach(() => {
    connections.length = 0;
  });

  it('rejects, and the next publish goes on a new channel of the same connection', async () => {
    const b = await started([true, false]);
    await expect(b.publish([task])).rejects.toMatchObject({code: 'unavailable', message: expect.stringContaining('nacked')});
    await b.publish([task]);
    const [conn] = connections;
    expect(connections).toHaveLength(1);
    expect(conn!.channels.map((c) => c.published)).toEqual([1, 1]);
    // The old channel is closed; its close does not reset the connection (consumers keep theirs).
    expect(conn!.channels[0]!.closed).toBe(true);
    expect(conn!.closes).toBe(0);
    await b.close();
  });

  it('a new channel nacked too is renewed again, until one confirms', async () => {
    const b = await started([true, true, false]);
    await expect(b.publish([task])).rejects.toMatchObject({code: 'unavailable'});
    await expect(b.publish([task])).rejects.toMatchObject({code: 'unavailable'});
    await b.publish([task]);
    await b.publish([task]);
    expect(connections[0]!.channels.map((c) => c.published)).toEqual([1, 1, 2]);
    expect(connections[0]!.closes).toBe(0);
    await b.close();
  });

  it('a confirmed publish keeps its channel', async () => {
    const b = await started([false]);
    await b.publish([task]);
    await b.publish([task]);
    expect(connections[0]!.channels.map((c) => c.published)).toEqual([2]);
    await b.close();
  });
});
