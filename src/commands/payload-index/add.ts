import {Args} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {iso} from '../../cli/render.js';
import {validatePayloadField} from '../../core/inspect/inspect.js';
import {payloadIndexItem, type PayloadIndexItem} from './list.js';

export interface PayloadIndexAddResult {
  field: PayloadIndexItem;
  /** False: the field was declared already. */
  created: boolean;
  /** Whether this call built the index (false: it was ready, nothing changed; true with created false: a half-built one was finished). */
  built: boolean;
  /** How long the build took. */
  ms: number;
}

export default class PayloadIndexAdd extends AxCommand {
  static override summary = 'Index a payload field, so that searches by it answer from an index.';
  static override description = `Without an index, a search by payload (ax tasks list --payload orderId=42 --since 1h, the console's Tasks page) reads every task created in its window: about a second per million tasks. With one, it reads the matching tasks only, so a wide window costs no more than a narrow one (--since is still required).

The field is a name of letters, digits and _ (dots for nested fields: customer.id), compared as text as --payload compares it. The index is a virtual column and an index of the tasks table (and of the stored-apart big payloads), built online: submits, claims and searches go on while it builds, which takes about as long as reading the table (about 6 s per million tasks on a 2-core machine). It needs the table's metadata lock for a moment: if a long transaction holds it for more than 10 s, the command stops with exit 6 and can be run again. It covers every cell of the database, and it costs every task one more index entry at insert: index the fields operators search by, not every field. At most 8.

Adding a field that is indexed does nothing and says so. Recorded in the audit trail (ax audit list). Remove with ax payload-index rm.

Exit codes: 2 malformed field, 4 already 8 fields indexed, 5 MySQL unavailable, 6 the table's metadata lock not granted within 10 s.`;
  static override examples = [
    {description: 'Make searches by order id cheap over any window', command: '<%= config.bin %> payload-index add orderId'},
    {description: 'A nested field, as JSON', command: '<%= config.bin %> payload-index add customer.id --json'},
  ];
  static override args = {field: Args.string({description: 'payload field (orderId, customer.id)', required: true, ignoreStdin: true})};

  async run(): Promise<PayloadIndexAddResult> {
    const {args, flags} = await this.parse(PayloadIndexAdd);
    await using admin = this.admin(flags);
    const field = validatePayloadField(args.field); // before connecting: a typo is exit 2 even offline
    if (!this.jsonEnabled()) this.logToStderr(`indexing ${field} (online: submits and claims go on; several seconds per million tasks)…`);
    const t0 = performance.now();
    const r = await admin.payloadIndexes.add(field);
    const ms = Math.round(performance.now() - t0);
    if (!this.jsonEnabled())
      this.log(
        r.created
          ? `indexed ${field} in ${ms} ms: searches by it (--payload ${field}=…) now read the index`
          : r.built
            ? `finished the build of ${field}'s index, left half-way before, in ${ms} ms: searches by it now read the index`
            : `${field} is indexed already (since ${iso(r.field.createdAt)} by ${r.field.createdBy ?? '?'}): nothing changed`,
      );
    return {field: payloadIndexItem(r.field), created: r.created, built: r.built, ms};
  }
}
