import {AxCommand} from '../cli/base.js';
import {table} from '../cli/render.js';
import type {QueueInfo} from '../core/broker/types.js';

export interface QueuesResult {
  cell: string;
  queues: QueueInfo[];
}

export default class Queues extends AxCommand {
  static override readOnly = true;
  static override summary = "RabbitMQ's view of the cell: messages and consumers of each pool queue and of the poison queue.";
  static override description = `One row per queue of the configured cell (AX_CELL, prefix AX_AMQP_PREFIX): the pool queues, one per pool and priority level — <prefix>.<cell>.io (normal), .io.high, .io.low, and the same for cpu — which ring workers' doorbells, and the poison queue <prefix>.<cell>.poison, which should stay empty. MESSAGES are ready messages, not tasks (one doorbell may ring for several, AX_DOORBELL_BATCH) and not those delivered and unacked; CONSUMERS is one per worker running that pool (each worker consumes every level), so 0 with messages waiting means no worker takes them. ax has no retry or delay queues: retries and delayed tasks wait in MySQL and the schedulers' timing wheels (ax tasks stats shows them as DELAYED).

A queue that does not exist is shown as missing (nothing is declared by this command): a worker or producer of the cell declares it when it starts. --json gives {cell, queues: [{name, role, pool, priority, exists, messages, consumers}]}.

Exit codes: 2 bad flag value, 5 RabbitMQ unavailable.`;
  static override examples = [
    {description: 'Are the doorbells consumed?', command: '<%= config.bin %> queues'},
    {
      description: 'Messages waiting in the poison queue, for a script',
      command: '<%= config.bin %> queues --json | jq \'.queues[] | select(.role == "poison") | .messages\'',
    },
  ];

  async run(): Promise<QueuesResult> {
    const {flags} = await this.parse(Queues);
    await using admin = this.admin(flags);
    const result = await admin.queues.list();
    if (!this.jsonEnabled()) {
      const head = ['QUEUE', 'ROLE', 'MESSAGES', 'CONSUMERS'];
      const rows = result.queues.map((q) => [
        q.name,
        q.role === 'pool' ? `pool ${q.pool} ${q.priority}` : 'poison',
        q.exists ? String(q.messages) : 'missing',
        q.exists ? String(q.consumers) : '-',
      ]);
      for (const line of table(head, rows, {right: [2, 3], keep: [0]})) this.log(line);
      const missing = result.queues.filter((q) => !q.exists).length;
      if (missing > 0)
        this.log(
          `${missing} queue${missing === 1 ? ' is' : 's are'} missing: start a worker or producer of cell ${result.cell} (they declare the queues)`,
        );
    }
    return result;
  }
}
