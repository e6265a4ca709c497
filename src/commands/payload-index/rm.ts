import {Args} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {validatePayloadField} from '../../core/inspect/inspect.js';

export interface PayloadIndexRmResult {
  field: string;
  /** False: the field had no index; nothing changed. */
  removed: boolean;
}

export default class PayloadIndexRm extends AxCommand {
  static override summary = 'Drop the index of a payload field: searches by it read the tasks of their window again.';
  static override description = `Instant (the index and its virtual columns are dropped, not rebuilt). Inserts no longer pay for it. Removing a field that has no index changes nothing and says so. Recorded in the audit trail (ax audit list).

Exit codes: 2 malformed field, 5 MySQL unavailable, 6 a transaction held the table's metadata lock past 10 s (the field is then listed as building and searched without its index: rm again).`;
  static override examples = [{description: 'Stop indexing a field', command: '<%= config.bin %> payload-index rm orderId'}];
  static override args = {field: Args.string({description: 'payload field (orderId, customer.id)', required: true, ignoreStdin: true})};

  async run(): Promise<PayloadIndexRmResult> {
    const {args, flags} = await this.parse(PayloadIndexRm);
    await using admin = this.admin(flags);
    const field = validatePayloadField(args.field);
    const removed = await admin.payloadIndexes.remove(field);
    if (!this.jsonEnabled()) this.log(removed ? `dropped the index of ${field}` : `${field} has no index: nothing changed`);
    return {field, removed};
  }
}
