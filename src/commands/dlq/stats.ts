import {AxCommand} from '../../cli/base.js';
import {deadFilterFlags, signatureJson, type SignatureJson, signatureTable} from '../../cli/dlq.js';

export interface DlqStatsResult {
  /** Dead tasks counted. */
  total: number;
  groups: SignatureJson[];
}

export default class DlqStats extends AxCommand {
  static override readOnly = true;
  static override summary = 'Count dead tasks per type and error signature.';
  static override description = `A signature is the first line of the last error with what varies from task to task normalised away: ids (UUID, ULID) become <id>, hex <hex>, numbers <n>, quoted values '<s>'. So "order 42 not found" and "order 43 not found" are one row. Each row has the count, the first and last death (UTC), a sample task id (ax dlq show it) and, in --json, a sample error. The largest groups first. The filters are those of ax dlq list.

Exit codes: 2 bad flag value, 5 MySQL unavailable.`;
  static override examples = [
    {description: 'What killed the dead tasks?', command: '<%= config.bin %> dlq stats'},
    {description: 'One type, the last day', command: '<%= config.bin %> dlq stats --type order_notify --since 1d --json'},
  ];
  static override flags = {...deadFilterFlags};

  async run(): Promise<DlqStatsResult> {
    const {flags} = await this.parse(DlqStats);
    await using admin = this.admin(flags);
    const rows = await admin.dlq.stats({type: flags.type, since: flags.since, until: flags.until, error: flags.error});
    const result = {total: rows.reduce((n, r) => n + r.count, 0), groups: rows.map(signatureJson)};
    if (!this.jsonEnabled()) {
      if (rows.length === 0) this.log('no dead tasks match');
      else {
        for (const line of signatureTable(rows, 'DEAD')) this.log(line);
        this.log(`${result.total} dead in ${rows.length} group${rows.length === 1 ? '' : 's'}`);
      }
    }
    return result;
  }
}
