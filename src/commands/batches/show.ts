import {Args} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {when} from '../../cli/render.js';
import {batchJson, type BatchJson} from '../../core/admin/batches.js';

export default class BatchesShow extends AxCommand {
  static override readOnly = true;
  static override summary = "Show a batch's progress.";
  static override description = `Members ended of the total, how they ended (succeeded, dead, cancelled), the callback (id and state) and when the batch completed (docs/workflows.md). Times in UTC.

Exit codes: 2 malformed id, 3 unknown batch, 5 MySQL unavailable.`;
  static override examples = [
    {description: 'How far is it?', command: '<%= config.bin %> batches show 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d'},
  ];
  static override args = {
    id: Args.string({description: 'batch id (as submitBatch returned it)', required: true, ignoreStdin: true}),
  };

  async run(): Promise<BatchJson> {
    const {args, flags} = await this.parse(BatchesShow);
    await using admin = this.admin(flags);
    const b = batchJson(await admin.batches.show(args.id));
    if (!this.jsonEnabled()) {
      this.log(`batch ${b.id}`);
      this.log(`  ended     ${b.done}/${b.total} (succeeded ${b.succeeded}, dead ${b.dead}, cancelled ${b.cancelled})`);
      this.log(`  callback  ${b.callbackId}  ${b.callbackState ?? '-'}`);
      this.log(`  created   ${when(new Date(b.createdAt))}    done ${b.doneAt === null ? '-' : when(new Date(b.doneAt))}`);
    }
    return b;
  }
}
