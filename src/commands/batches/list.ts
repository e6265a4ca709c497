import {Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {table, when} from '../../cli/render.js';
import {batchJson, type BatchJson} from '../../core/admin/batches.js';
import {MAX_BATCHES_LIST} from '../../core/admin/batches.js';

export interface BatchesListResult {
  count: number;
  batches: BatchJson[];
}

export default class BatchesList extends AxCommand {
  static override readOnly = true;
  static override summary = 'List batches with their progress.';
  static override description = `The newest batches of the configured cell (submitBatch with a callback; docs/workflows.md), newest first: members ended of the total, how they ended, and the callback's state. Times in UTC.

Exit codes: 2 bad --limit, 5 MySQL unavailable.`;
  static override examples = [
    {description: 'The latest batches', command: '<%= config.bin %> batches list'},
    {
      description: 'Batches still running, for a script',
      command: `<%= config.bin %> batches list --json | jq -r '.batches[] | select(.doneAt == null) | .id'`,
    },
  ];
  static override flags = {
    limit: Flags.integer({description: `how many (1 to ${MAX_BATCHES_LIST})`, default: 50}),
  };

  async run(): Promise<BatchesListResult> {
    const {flags} = await this.parse(BatchesList);
    await using admin = this.admin(flags);
    const batches = (await admin.batches.list({limit: flags.limit})).map(batchJson);
    if (!this.jsonEnabled()) {
      if (batches.length === 0) this.log('no batches: submit one with the SDK (submitBatch with a callback) or POST /api/v1/batches');
      else
        for (const line of table(
          ['ID', 'DONE', 'SUCCEEDED', 'DEAD', 'CANCELLED', 'CALLBACK', 'CREATED (UTC)'],
          batches.map((b) => [
            b.id,
            `${b.done}/${b.total}`,
            String(b.succeeded),
            String(b.dead),
            String(b.cancelled),
            b.callbackState ?? '-',
            when(new Date(b.createdAt)),
          ]),
          {keep: [0]},
        ))
          this.log(line);
    }
    return {count: batches.length, batches};
  }
}
