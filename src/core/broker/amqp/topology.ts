import {DEFAULT_PRIORITY, POOLS, PRIORITIES, type PoolName, type Priority} from '../../task/model.js';

/** Names of ax's RabbitMQ objects for one prefix and cell. */
export interface Topology {
  exchange: string;
  /** The cell's fanout exchange of control messages (`<prefix>.<cell>.control`); each worker binds a queue of its own. */
  controlExchange: string;
  /** The queue of a pool at a level (default normal). */
  queue(pool: PoolName, priority?: Priority): string;
  routingKey(pool: PoolName, priority?: Priority): string;
  poisonQueue: string;
  queueArgs: Record<string, unknown>;
  /** Every pool queue (each level) and the poison queue. */
  allQueues(): string[];
}

/** The name suffix of a level: none for `normal`, so the normal queue keeps the name of the one queue per pool before levels. */
const suffix = (p: Priority): string => (p === DEFAULT_PRIORITY ? '' : `.${p}`);

/**
 * One durable direct exchange `<prefix>`, one durable queue per pool and priority level —
 * `<prefix>.<cell>.<pool>` for `normal` (the queue of an ax from before priorities, so an upgrade
 * keeps consuming it), `<prefix>.<cell>.<pool>.high` and `….low` for the others — bound with
 * routing key `<cell>.<pool>[.<level>]`, a poison queue `<prefix>.<cell>.poison`, and a fanout
 * exchange `<prefix>.<cell>.control` (durable, as broker.ts declares it) for control messages to the cell's workers.
 */
export function topology(prefix: string, cell: string, queueType: 'quorum' | 'classic'): Topology {
  const queueArgs: Record<string, unknown> = queueType === 'quorum' ? {'x-queue-type': 'quorum'} : {'x-queue-type': 'classic'};
  const queue = (pool: PoolName, priority: Priority = DEFAULT_PRIORITY): string => `${prefix}.${cell}.${pool}${suffix(priority)}`;
  return {
    exchange: prefix,
    controlExchange: `${prefix}.${cell}.control`,
    queue,
    routingKey: (pool, priority = DEFAULT_PRIORITY) => `${cell}.${pool}${suffix(priority)}`,
    poisonQueue: `${prefix}.${cell}.poison`,
    queueArgs,
    allQueues: () => [...POOLS.flatMap((p) => PRIORITIES.map((l) => queue(p, l))), `${prefix}.${cell}.poison`],
  };
}
