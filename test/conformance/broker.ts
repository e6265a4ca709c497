/**
 * The Broker conformance suite: what every Broker implementation must do. Run by
 * test/integration/broker.test.ts against RabbitMQ.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {Broker, ControlMessage, Delivery, QueueInfo} from '../../src/core/broker/types.js';
import {decodeMessage} from '../../src/core/broker/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';

export interface BrokerHarness {
  /** Publishes one message per task. */
  broker: Broker;
  /** A second broker on the same topology (another process's view), also one message per task. */
  other: Broker;
  /** A broker that puts up to 3 tasks of one pool in a message (its own topology). */
  batched: Broker;
  /** A broker of a topology nobody declared (started without declaring): every queue is missing. */
  undeclared: Broker;
  /** Messages now waiting in the poison queue (drained by the call), with their reason header. */
  takePoison(): Promise<Array<{body: string; reason: string}>>;
  /** Publishes raw bytes straight into a pool queue, bypassing the Broker (a foreign producer). */
  publishRaw(pool: 'io' | 'cpu', body: Buffer): Promise<void>;
  /** Forces the broker's connections closed from the server side. */
  killConnections(): Promise<void>;
  dispose(): Promise<void>;
}

const newId = createIdGenerator(() => Date.now());

/** Collects deliveries (or control messages) and lets a test await the n-th one. */
function collector<T = Delivery>() {
  const got: T[] = [];
  const waiters: Array<{n: number; resolve: () => void}> = [];
  return {
    got,
    push(d: T) {
      got.push(d);
      for (const w of waiters.filter((w) => got.length >= w.n)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    },
    until(n: number, timeoutMs = 10_000): Promise<void> {
      if (got.length >= n) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`only ${got.length} of ${n} deliveries arrived`)), timeoutMs);
        waiters.push({n, resolve: () => (clearTimeout(t), resolve())});
      });
    },
  };
}

export function brokerConformance(name: string, make: () => Promise<BrokerHarness>): void {
  describe(`Broker conformance: ${name}`, () => {
    let h: BrokerHarness;
    beforeAll(async () => {
      h = await make();
    });
    afterAll(async () => h?.dispose());

    it('delivers confirmed messages to the pool queue they were published for', async () => {
      const io = collector();
      const cpu = collector();
      const s1 = await h.broker.consume('io', 10, (d) => io.push(d));
      const s2 = await h.broker.consume('cpu', 10, (d) => cpu.push(d));
      const a = {id: newId(), type: 'order_notify', pool: 'io' as const};
      const b = {id: newId(), type: 'report_build', pool: 'cpu' as const};
      await h.other.publish([a, b]);
      await io.until(1);
      await cpu.until(1);
      expect(decodeMessage(io.got[0]!.body)).toEqual([{id: a.id, type: a.type}]);
      expect(decodeMessage(cpu.got[0]!.body)).toEqual([{id: b.id, type: b.type}]);
      io.got[0]!.ack();
      cpu.got[0]!.ack();
      await s1.cancel();
      await s2.cancel();
    });

    it('rings for several tasks of one pool with one message, in order, at most N tasks each', async () => {
      const io = collector();
      const cpu = collector();
      const s1 = await h.batched.consume('io', 10, (d) => io.push(d));
      const s2 = await h.batched.consume('cpu', 10, (d) => cpu.push(d));
      const msgs = Array.from({length: 9}, (_, i) => ({
        id: newId(),
        type: 'order_notify',
        pool: i % 4 === 1 ? ('cpu' as const) : ('io' as const),
      }));
      await h.batched.publish(msgs);
      await io.until(3);
      await cpu.until(1);
      const ids = (c: ReturnType<typeof collector<Delivery>>) => c.got.map((d) => decodeMessage(d.body)?.map((r) => r.id));
      const want = (pool: string) => msgs.filter((m) => m.pool === pool).map((m) => m.id);
      expect(ids(io)).toEqual([want('io').slice(0, 3), want('io').slice(3, 6), want('io').slice(6)]);
      expect(ids(cpu)).toEqual([want('cpu')]);
      for (const d of [...io.got, ...cpu.got]) d.ack();
      await s1.cancel();
      await s2.cancel();
    });

    it('never has more unacked deliveries than the prefetch, and redelivers unacked ones after cancel', async () => {
      const msgs = Array.from({length: 5}, () => ({id: newId(), type: 'order_notify', pool: 'io' as const}));
      await h.broker.publish(msgs);
      const c = collector();
      const sub = await h.broker.consume('io', 2, (d) => c.push(d));
      await c.until(2);
      // Two are held; a third only comes after an ack.
      c.got[0]!.ack();
      await c.until(3);
      expect(c.got.length).toBe(3);
      await sub.cancel();
      const rest = collector();
      const sub2 = await h.other.consume('io', 10, (d) => rest.push(d));
      await rest.until(4);
      for (const d of rest.got) d.ack();
      const ids = new Set(rest.got.map((d) => decodeMessage(d.body)?.[0]?.id));
      expect(ids.size).toBe(4);
      expect(rest.got.filter((d) => d.redelivered).length).toBe(2);
      await sub2.cancel();
    });

    it('moves a delivery to the poison queue with its reason, and acks it', async () => {
      await h.publishRaw('io', Buffer.from('not json'));
      const c = collector();
      const sub = await h.broker.consume('io', 10, (d) => c.push(d));
      await c.until(1);
      await h.broker.poison(c.got[0]!, 'malformed');
      await sub.cancel();
      expect(await h.takePoison()).toEqual([{body: 'not json', reason: 'malformed'}]);
      const depths = await h.broker.queueDepths();
      expect(Object.entries(depths).find(([q]) => q.endsWith('.poison'))?.[1]).toBe(0);
    });

    it('reports messages and consumers of each pool queue and the poison queue, and missing queues as missing', async () => {
      const sub = await h.broker.consume('cpu', 10, () => undefined);
      await h.other.publish([
        {id: newId(), type: 'order_notify', pool: 'io'},
        {id: newId(), type: 'order_notify', pool: 'io'},
      ]);
      const queues = await h.broker.inspectQueues();
      expect(queues.map((q) => [q.role, q.pool, q.priority])).toEqual([
        ['pool', 'io', 'high'],
        ['pool', 'io', 'normal'],
        ['pool', 'io', 'low'],
        ['pool', 'cpu', 'high'],
        ['pool', 'cpu', 'normal'],
        ['pool', 'cpu', 'low'],
        ['poison', null, null],
      ]);
      const at = (pool: string, priority: string): QueueInfo | undefined => queues.find((q) => q.pool === pool && q.priority === priority);
      // Publishing is confirmed, so both messages are in the queue (nobody consumes io here).
      expect(at('io', 'normal')).toMatchObject({exists: true, messages: 2, consumers: 0});
      expect(at('io', 'high')).toMatchObject({exists: true, messages: 0, consumers: 0});
      expect(at('cpu', 'normal')).toMatchObject({exists: true, consumers: 1});
      expect(at('cpu', 'low')).toMatchObject({exists: true, consumers: 0});
      expect(queues.find((q) => q.role === 'poison')).toMatchObject({exists: true, messages: 0, consumers: 0});
      await sub.cancel();
      const io = collector();
      const drain = await h.broker.consume('io', 10, (d) => io.push(d));
      await io.until(2);
      for (const d of io.got) d.ack();
      await drain.cancel();

      const missing = await h.undeclared.inspectQueues();
      expect(missing).toHaveLength(7);
      for (const q of missing) expect(q).toMatchObject({exists: false, messages: null, consumers: null});
      // Checking declared nothing: still missing the second time.
      expect((await h.undeclared.inspectQueues()).every((q) => !q.exists)).toBe(true);
    });

    it('rings each priority level on its own queue: a consumer of a level gets only that level', async () => {
      const ids = {high: newId(), normal: newId(), low: newId()};
      await h.other.publish([
        {id: ids.low, type: 'order_notify', pool: 'io', priority: 'low'},
        {id: ids.normal, type: 'order_notify', pool: 'io'},
        {id: ids.high, type: 'order_notify', pool: 'io', priority: 'high'},
      ]);
      for (const level of ['high', 'normal', 'low'] as const) {
        const c = collector();
        const sub = await h.broker.consume('io', 10, (d) => c.push(d), level);
        await c.until(1);
        expect(decodeMessage(c.got[0]!.body)).toEqual([{id: ids[level], type: 'order_notify'}]);
        c.got[0]!.ack();
        await sub.cancel();
      }
      const depths = await h.broker.queueDepths();
      expect(
        Object.entries(depths)
          .filter(([q]) => !q.endsWith('.poison'))
          .every(([, n]) => n === 0),
      ).toBe(true);
      await expect(h.broker.consume('io', 10, () => undefined, 'urgent' as never)).rejects.toThrow(
        /priority must be one of high, normal, low/,
      );
    });

    it('acking twice, or after the channel closed, is harmless', async () => {
      await h.broker.publish([{id: newId(), type: 'order_notify', pool: 'io'}]);
      const c = collector();
      const sub = await h.broker.consume('io', 10, (d) => c.push(d));
      await c.until(1);
      await sub.cancel();
      expect(() => c.got[0]!.ack()).not.toThrow();
      const again = collector();
      const sub2 = await h.broker.consume('io', 10, (d) => again.push(d));
      await again.until(1);
      again.got[0]!.ack();
      again.got[0]!.ack();
      await sub2.cancel();
      const depths = await h.broker.queueDepths();
      expect(Object.entries(depths).find(([q]) => q.endsWith('.io'))?.[1]).toBe(0);
    });

    it('control messages reach every consumer of the cell, each on a queue of its own', async () => {
      const a = collector<ControlMessage>();
      const b = collector<ControlMessage>();
      const subA = await h.broker.consumeControl((m) => a.push(m));
      const subB = await h.other.consumeControl((m) => b.push(m));
      const m: ControlMessage = {kind: 'cancel', tasks: [{id: newId(), fence: 3}], by: 'alice', reason: 'refunded'};
      await h.other.publishControl(m);
      await Promise.all([a.until(1), b.until(1)]);
      expect([a.got, b.got]).toEqual([[m], [m]]);
      // Control messages never touch the pool queues.
      expect(Object.values(await h.broker.queueDepths()).reduce((n, d) => n + d, 0)).toBe(0);
      // A cancelled subscription gets nothing more; the other still does.
      await subB.cancel();
      const m2: ControlMessage = {kind: 'cancel', tasks: [{id: newId(), fence: 1}], by: 'bob', reason: null};
      await h.broker.publishControl(m2);
      await a.until(2);
      expect(a.got).toEqual([m, m2]);
      expect(b.got).toEqual([m]);
      await subA.cancel();
    });

    it('reconnects and re-subscribes after the server closes its connections', async () => {
      const c = collector();
      const sub = await h.broker.consume('io', 10, (d) => c.push(d));
      const control = collector<ControlMessage>();
      const csub = await h.broker.consumeControl((m) => control.push(m));
      const reconnected = new Promise<void>((r) => h.broker.on('connected', () => r()));
      await h.killConnections();
      await reconnected;
      await h.other.publish([{id: newId(), type: 'order_notify', pool: 'io'}]).catch(async () => {
        // `other` may have been cut too; it reconnects on its own
        await h.other.publish([{id: newId(), type: 'order_notify', pool: 'io'}]);
      });
      await c.until(1, 20_000);
      c.got[0]!.ack();
      await sub.cancel();
      // The control consumer is back too (on a new queue of its own).
      const m: ControlMessage = {kind: 'cancel', tasks: [{id: newId(), fence: 2}], by: 'carol', reason: null};
      await h.broker.publishControl(m);
      await control.until(1);
      expect(control.got).toEqual([m]);
      await csub.cancel();
    });
  });
}
