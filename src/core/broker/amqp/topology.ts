import type {PoolName} from '../../task/model.js';
import {POOLS} from '../../task/model.js';

/** Names of ax's RabbitMQ objects for one prefix and cell. */
export interface Topology {
  exchange: string;
  queue(pool: PoolName): string;
  routingKey(pool: PoolName): string;
  poisonQueue: string;
  queueArgs: Record<string, unknown>;
  allQueues(): string[];
}

/**
 * One durable direct exchange `<prefix>`, one durable queue per pool `<prefix>.<cell>.<pool>`
 * bound with routing key `<cell>.<pool>`, and a poison queue `<prefix>.<cell>.poison`.
 */
export function topology(prefix: string, cell: string, queueType: 'quorum' | 'classic'): Topology {
  const queueArgs: Record<string, unknown> = queueType === 'quorum' ? {'x-queue-type': 'quorum'} : {'x-queue-type': 'classic'};
  return {
    exchange: prefix,
    queue: (pool) => `${prefix}.${cell}.${pool}`,
    routingKey: (pool) => `${cell}.${pool}`,
    poisonQueue: `${prefix}.${cell}.poison`,
    queueArgs,
    allQueues: () => [...POOLS.map((p) => `${prefix}.${cell}.${p}`), `${prefix}.${cell}.poison`],
  };
}
