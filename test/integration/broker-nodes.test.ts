/**
 * The broker adapter given several nodes (AX_AMQP_URL as a list), against the shared RabbitMQ
 * without stopping it: each "node" is a TCP proxy to it (test/helpers/fault-proxy.ts), a dead node a
 * closed port or a closed proxy. The adapter connects to the first live node of its round, and
 * when the node it uses goes away it reconnects to the next one and consumes and publishes again.
 * test/faults/rabbit-cluster.test.ts does the same against a real 3-node cluster.
 */
import {createServer} from 'node:net';
import type {AddressInfo} from 'node:net';
import amqp from 'amqplib';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {AmqpBroker} from '../../src/core/broker/amqp/broker.js';
import {decodeMessage, type Delivery} from '../../src/core/broker/types.js';
import {createLogger} from '../../src/core/log.js';
import {systemClock} from '../../src/core/time.js';
import {AMQP_URL, createTestEnv, eventually, type TestEnv} from '../helpers/env.js';
import {startFaultProxy, targetOf, type FaultProxy} from '../helpers/fault-proxy.js';

const PASSWORD = new URL(AMQP_URL).password;
const via = (port: number): string => {
  const u = new URL(AMQP_URL);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
};

/** A loopback port nothing listens on (bound, then closed). */
async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const {port} = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('AmqpBroker over several nodes', () => {
  let env: TestEnv;
  const proxies: FaultProxy[] = [];
  const brokers: AmqpBroker[] = [];
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger('info', {}, (l) => void lines.push(JSON.parse(l) as Record<string, unknown>));

  const proxy = async (): Promise<FaultProxy> => {
    const p = await startFaultProxy(targetOf(AMQP_URL));
    proxies.push(p);
    return p;
  };
  const broker = async (
    urls: string[],
    random = () => 0,
    confirmTimeoutMs = 5000,
    o: {declare?: boolean; on?: TestEnv} = {},
  ): Promise<AmqpBroker> => {
    const on = o.on ?? env;
    const b = new AmqpBroker({
      declare: o.declare ?? true,
      urls,
      prefix: on.config.amqpPrefix,
      cell: on.config.cell,
      queueType: on.config.queueType,
      confirmTimeoutMs,
      clock: systemClock,
      random,
      logger,
      reconnect: true,
    });
    brokers.push(b);
    await b.start();
    return b;
  };

  beforeAll(async () => {
    env = await createTestEnv();
  });

  afterAll(async () => {
    for (const b of brokers) await b.close();
    for (const p of proxies) await p.close();
    await env?.dispose();
  });

  it('starts on the first live node of its round, logging the dead one without its password', async () => {
    const dead = via(await deadPort());
    const live = await proxy();
    const b = await broker([dead, via(live.port)]);
    expect(live.accepted).toBe(1);
    const past = lines.filter((l) => l.msg === 'amqp connected past unavailable nodes');
    expect(past).toHaveLength(1);
    expect(past[0]).toMatchObject({
      node: expect.stringContaining(`:***@127.0.0.1:${live.port}`),
      skipped: [{node: expect.stringContaining(':***@127.0.0.1:'), error: expect.stringMatching(/ECONNREFUSED/)}],
    });
    if (PASSWORD) expect(JSON.stringify(lines)).not.toContain(`:${PASSWORD}@`);
    const got: Delivery[] = [];
    await b.consume('io', 10, (d) => (got.push(d), d.ack()));
    await b.publish([{id: 't-start', type: 'test_noop', pool: 'io', priority: 'normal'}]);
    await eventually(async () => got.length === 1, 10_000, 'the delivery');
  });

  it('a random start spreads processes over the nodes', async () => {
    const [a, c] = [await proxy(), await proxy()];
    await broker([via(a.port), via(c.port)], () => 0.75);
    expect([a.accepted, c.accepted]).toEqual([0, 1]);
  });

  it('the node in use lost: reconnects to the next one, its consumer and publisher work again', async () => {
    const [a, c] = [await proxy(), await proxy()];
    const b = await broker([via(a.port), via(c.port)]);
    const got: string[] = [];
    await b.consume('cpu', 10, (d) => {
      got.push(...(decodeMessage(d.body) ?? []).map((r) => r.id));
      d.ack();
    });
    await b.publish([{id: 't-before', type: 'test_noop', pool: 'cpu', priority: 'normal'}]);
    await eventually(async () => got.includes('t-before'), 10_000, 'the first delivery');
    expect([a.accepted, c.accepted]).toEqual([1, 0]);

    const reconnected = new Promise<void>((r) => b.on('connected', () => r()));
    await a.close(); // the node dies: its connections close, new ones are refused
    await reconnected;
    expect(c.accepted).toBe(1);
    await b.publish([{id: 't-after', type: 'test_noop', pool: 'cpu', priority: 'normal'}]);
    await eventually(async () => got.includes('t-after'), 10_000, 'a delivery after the failover');
    const log = lines.filter((l) => l.msg === 'amqp reconnected').at(-1);
    expect(log).toMatchObject({attempt: 1, node: expect.stringContaining(`127.0.0.1:${c.port}`)});
  });

  it('a server that no longer answers (blackholed): cancel() and close() still return, within the confirm timeout', async () => {
    const a = await proxy();
    const b = await broker([via(a.port)], () => 0, 1000);
    const sub = await b.consume('io', 10, (d) => d.ack());
    a.set({kind: 'blackhole'});
    const t0 = Date.now();
    await sub.cancel(); // amqplib's channel close waits for an answer that never comes
    await b.close(); // and so does its connection close
    expect(Date.now() - t0).toBeLessThan(4000);
  });

  it('a reconnect that fails while re-subscribing runs one loop, backing off, until the queue is back', async () => {
    // A read-only broker (it declares nothing) consuming a queue that is then deleted: the server
    // cancels the consumer, the broker reconnects, and re-subscribing fails (404) on every round.
    // The connection closed by that failure must not start a second reconnect loop beside the
    // one in progress (each failed round would double the loops and the connection attempts).
    // A topology of its own: no other test's consumer re-declares the queue meanwhile.
    const own = await createTestEnv();
    const other = await own.broker(); // declares the topology
    const a = await proxy();
    const b = await broker([via(a.port)], () => 0, 5000, {declare: false, on: own});
    const got: string[] = [];
    await b.consume('cpu', 10, (d) => {
      got.push(...(decodeMessage(d.body) ?? []).map((r) => r.id));
      d.ack();
    });
    const queue = b.names.queue('cpu');
    const admin = await amqp.connect(AMQP_URL);
    try {
      const ch = await admin.createChannel();
      await ch.deleteQueue(queue);
      const before = a.accepted;
      await new Promise((r) => setTimeout(r, 3000));
      // One loop: an immediate try, then 0.2-0.6 s, 0.4-1.2 s, 0.8-2.4 s of backoff: at most 4 tries in 3 s.
      expect(a.accepted - before).toBeGreaterThanOrEqual(2);
      expect(a.accepted - before).toBeLessThanOrEqual(5);
      // The queue back: the loop reconnects and the consumer receives again.
      await ch.assertQueue(queue, {durable: true, arguments: b.names.queueArgs});
      await ch.bindQueue(queue, b.names.exchange, b.names.routingKey('cpu'));
      await eventually(async () => lines.some((l) => l.msg === 'amqp reconnected' && l.attempt !== 1), 20_000, 'the reconnect');
      await other.publish([{id: 't-back', type: 'test_noop', pool: 'cpu', priority: 'normal'}]);
      await eventually(async () => got.includes('t-back'), 10_000, 'a delivery once the queue is back');
    } finally {
      await admin.close();
      await b.close();
      await own.dispose();
    }
  });
});
