/** RabbitMQ's view of the cell in the admin service (`ax queues`): nothing is declared. */
import type {QueueInfo} from '../broker/types.js';
import type {AdminSession} from './session.js';

export interface QueuesAdmin {
  /**
   * Every queue of the cell (pool queues per priority level, the poison queue), a missing one with
   * `exists: false`. Declares nothing; throws unavailable when RabbitMQ cannot be reached.
   */
  list(): Promise<{cell: string; queues: QueueInfo[]}>;
}

export function createQueuesAdmin(s: AdminSession): QueuesAdmin {
  return {
    list: async () => ({cell: s.ctx.config.cell, queues: await (await s.brokerReadOnly()).inspectQueues()}),
  };
}
