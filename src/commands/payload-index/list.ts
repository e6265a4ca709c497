import {AxCommand} from '../../cli/base.js';
import {iso, table, when} from '../../cli/render.js';
import type {PayloadIndexInfo} from '../../core/store/types.js';

/** One indexed field as `ax payload-index list --json` shows it. */
export type PayloadIndexItem = Omit<PayloadIndexInfo, 'createdAt'> & {createdAt: string};

export interface PayloadIndexListResult {
  count: number;
  fields: PayloadIndexItem[];
}

export default class PayloadIndexList extends AxCommand {
  static override readOnly = true;
  static override summary = 'List the payload fields searched by index.';
  static override description = `A search by payload (ax tasks list --payload field=value, the console's Tasks page) reads every task created in its window unless the field is indexed (ax payload-index add). STATE is ready once the index is built; a building field is searched as if it had none (an add or rm that stopped half-way: run the same command again).

Exit codes: 5 MySQL unavailable.`;
  static override examples = [
    {description: 'The indexed fields', command: '<%= config.bin %> payload-index list'},
    {description: 'As JSON', command: '<%= config.bin %> payload-index list --json'},
  ];

  async run(): Promise<PayloadIndexListResult> {
    const {flags} = await this.parse(PayloadIndexList);
    await using admin = this.admin(flags);
    const rows = await admin.payloadIndexes.list();
    if (!this.jsonEnabled()) {
      if (rows.length === 0)
        this.log('no payload field is indexed: searches by payload read the tasks of their window (ax payload-index add --help)');
      else
        for (const line of table(
          ['FIELD', 'STATE', 'SINCE', 'BY'],
          rows.map((r) => [r.field, r.state, when(r.createdAt, {seconds: true}), r.createdBy ?? '-']),
        ))
          this.log(line);
    }
    return {count: rows.length, fields: rows.map(payloadIndexItem)};
  }
}

/** An indexed field as the commands' --json shows it: its time as an ISO string. */
export function payloadIndexItem(r: PayloadIndexInfo): PayloadIndexItem {
  return {...r, createdAt: iso(r.createdAt) as string};
}
