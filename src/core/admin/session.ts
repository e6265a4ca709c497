/**
 * The connections of one admin service to one cell, each opened at its first use and kept until
 * close(). A failed open is not kept: the next use tries again. close() closes what was opened, in
 * reverse order, and ignores errors while closing (the caller's own error is what matters).
 */
import type {ArchiveTarget} from '../archive/target.js';
import type {Broker} from '../broker/types.js';
import type {AxStore, OutboxStore, SchemaStore} from '../store/types.js';
import type {AdminContext, OneShotProducer} from './context.js';

export interface AdminSession {
  readonly ctx: AdminContext;
  store(): Promise<AxStore>;
  /** RabbitMQ, declaring the topology (actions that publish). */
  broker(): Promise<Broker>;
  /** RabbitMQ without declaring anything (read-only: queue depths, doctor). */
  brokerReadOnly(): Promise<Broker>;
  /** The broker when this session opened one already (the SDK's, or an earlier action's), else undefined. */
  brokerIfOpen(): Promise<Broker | undefined>;
  /** A Broker whose publish opens RabbitMQ at the first call: for actions that may publish nothing. */
  lazyBroker(): Pick<Broker, 'publish' | 'publishControl'>;
  outbox(opts?: {requireTable?: boolean}): Promise<OutboxStore>;
  schema(): Promise<SchemaStore>;
  archiveTarget(): ArchiveTarget;
  /** A one-shot producer (see AdminOpeners.producer), flushed and closed by close(). */
  producer(): Promise<OneShotProducer>;
  close(): Promise<void>;
}

interface Closable {
  close(): Promise<unknown>;
}

/**
 * The session of `ctx`'s cell. `given` connections (the SDK client's own store and broker) are used
 * as they are and left open by close(): their owner closes them.
 */
export function createSession(ctx: AdminContext, given: {store?: AxStore; broker?: Broker} = {}): AdminSession {
  const opened: Closable[] = [];
  const cache = new Map<string, Promise<Closable>>();
  if (given.store) cache.set('store', Promise.resolve(given.store));
  if (given.broker) cache.set('broker', Promise.resolve(given.broker));
  let closed = false;
  function once<T extends Closable>(key: string, open: () => Promise<T>): Promise<T> {
    let p = cache.get(key) as Promise<T> | undefined;
    if (!p) {
      p = open().then((c) => {
        if (!ctx.shared) opened.push(c);
        return c;
      });
      cache.set(key, p);
      p.catch(() => cache.delete(key));
    }
    return p;
  }
  let target: ArchiveTarget | undefined;
  const s: AdminSession = {
    ctx,
    store: () => once('store', () => ctx.open.store()),
    broker: () => once('broker', () => ctx.open.broker({declare: true})),
    brokerReadOnly: () => (cache.has('broker') ? s.broker() : once('broker-ro', () => ctx.open.broker({declare: false}))),
    brokerIfOpen: async () => (cache.has('broker') ? s.broker().catch(() => undefined) : undefined),
    lazyBroker: () => ({
      publish: async (...a) => (await s.broker()).publish(...a),
      publishControl: async (...a) => (await s.broker()).publishControl(...a),
    }),
    outbox: (o = {}) => once(`outbox:${o.requireTable !== false}`, () => ctx.open.outbox({requireTable: o.requireTable !== false})),
    schema: () => once('schema', () => ctx.open.schema()),
    archiveTarget: () => (target ??= ctx.open.archiveTarget()),
    producer: () => once('producer', () => ctx.open.producer()),
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled(cache.values());
      for (const c of opened.reverse()) await c.close().catch(() => undefined);
    },
  };
  return s;
}
