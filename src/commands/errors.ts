import {Flags} from '@oclif/core';
import {AxCommand} from '../cli/base.js';
import {signatureJson, type SignatureJson, signatureTable} from '../cli/dlq.js';
import {limitFlag} from '../cli/flags.js';
import {when} from '../cli/render.js';
import {DEFAULT_ERRORS_LIMIT, DEFAULT_ERRORS_SINCE, MAX_ERRORS_LIMIT} from '../core/inspect/failures.js';

const WHEN = 'a duration back from now (15m, 2h, 7d) or an ISO-8601 time';

export interface ErrorsResult {
  since: string;
  until: string;
  /** Failed attempts counted in the window. */
  total: number;
  groups: SignatureJson[];
  /** Groups left off by --limit. */
  more: number;
}

export default class Errors extends AxCommand {
  static override readOnly = true;
  static override summary = 'Which types fail now and why: failed attempts per type and error signature.';
  static override description = `Every failed attempt counts, retried or dead (also a lease that expired and a task released by its worker), not only the dead tasks of ax dlq stats. The window is --since (default ${DEFAULT_ERRORS_SINCE}) to --until (default now), by the time the attempt failed (UTC). Signatures are those of ax dlq stats: the first line of the error with ids, numbers, hex and quoted values normalised away. Each row has the count, the first and last failure in the window, a sample task id (ax tasks show it) and, in --json, a sample error. The largest groups first, at most --limit.

The cost is one read of the failures of the window (index idx_history_failures), so a wide window on a busy system reads more.

Exit codes: 2 bad flag value, 5 MySQL unavailable.`;
  static override examples = [
    {description: 'What failed in the last hour?', command: '<%= config.bin %> errors'},
    {description: 'One type, the last day', command: '<%= config.bin %> errors --type order_notify --since 1d --json'},
  ];
  static override flags = {
    type: Flags.string({char: 't', description: 'only tasks of this type (domain_action)'}),
    since: Flags.string({description: `only attempts that failed since: ${WHEN} (default ${DEFAULT_ERRORS_SINCE})`}),
    until: Flags.string({description: `only attempts that failed before: ${WHEN}`}),
    limit: limitFlag({char: 'n', max: MAX_ERRORS_LIMIT, what: 'groups shown', defaultText: String(DEFAULT_ERRORS_LIMIT)}),
  };

  async run(): Promise<ErrorsResult> {
    const {flags} = await this.parse(Errors);
    await using admin = this.admin(flags);
    const r = await admin.tasks.errors({type: flags.type, since: flags.since, until: flags.until, limit: flags.limit});
    if (!this.jsonEnabled()) {
      if (r.groups.length === 0) this.log(`no failed attempts since ${when(r.since, {seconds: true})} UTC`);
      else {
        for (const line of signatureTable(r.groups, 'FAILED')) this.log(line);
        const groups = r.groups.length + r.more;
        this.log(
          `${r.total} failed attempt${r.total === 1 ? '' : 's'} in ${groups} group${groups === 1 ? '' : 's'} since ${when(r.since, {seconds: true})} UTC` +
            (r.more > 0 ? ` (${r.more} more: raise --limit)` : ''),
        );
      }
    }
    return {since: r.since.toISOString(), until: r.until.toISOString(), total: r.total, groups: r.groups.map(signatureJson), more: r.more};
  }
}
