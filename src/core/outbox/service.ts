import type {AxConfig} from '../config/config.js';
import type {Broker} from '../broker/types.js';
import type {Logger} from '../log.js';
import type {HotPathStore, OutboxRelayStore} from '../store/types.js';
import type {Clock, Random} from '../time.js';
import {Relay} from './relay.js';
import type {TypeSelector} from '../cells/cells.js';

export interface RelayServiceOptions {
  config: AxConfig;
  outbox: OutboxRelayStore;
  store: Pick<HotPathStore, 'tasksInsert' | 'tasksInsertLinked' | 'doorbellsMark' | 'doorbellsForget'>;
  broker: Broker;
  clock: Clock;
  random: Random;
  logger: Logger;
  id?: string;
  /** Sent rows deleted per purge statement (default 5000). */
  purgeBatch?: number;
  /** The outbox rows this relay takes, by type (its cells'; default all). */
  types?: TypeSelector;
}

/** Builds a Relay from configuration (AX_RELAY_*, AX_OUTBOX_RETENTION, task defaults). */
export function createRelayService(o: RelayServiceOptions): Relay {
  const c = o.config;
  return new Relay({
    outbox: o.outbox,
    store: o.store,
    broker: o.broker,
    clock: o.clock,
    random: o.random,
    logger: o.logger,
    ...(o.id === undefined ? {} : {id: o.id}),
    ...(o.purgeBatch === undefined ? {} : {purgeBatch: o.purgeBatch}),
    ...(o.types === undefined ? {} : {types: o.types}),
    defaults: {maxRetries: c.maxRetries, payloadLimitBytes: c.payloadLimitBytes, cell: c.cell},
    intervalMs: c.relayIntervalMs,
    batchSize: c.relayBatchSize,
    leaseMs: c.relayLeaseMs,
    retentionMs: c.outboxRetentionMs,
  });
}
