import {Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {limitFlag} from '../../cli/flags.js';
import {iso, oneLine, table, when} from '../../cli/render.js';
import {MAX_AUDIT_LIST} from '../../core/audit/audit.js';
import type {AuditRecord} from '../../core/store/types.js';

/** One audit row as `ax audit list --json` shows it: the record with its time as an ISO string. */
export type AuditItem = Omit<AuditRecord, 'at'> & {at: string};

export interface AuditListResult {
  count: number;
  entries: AuditItem[];
  /** Pass as --after for the next (older) page; null when this page is the last. */
  next: number | null;
}

export default class AuditList extends AxCommand {
  static override readOnly = true;
  static override summary = 'List the audit trail of admin actions, newest first.';
  static override description = `Every admin action that changes tasks (tasks cancel, and the DLQ replays) appends a row in the same transaction as the change: who (AX_OPERATOR, else user@host), when (database clock, UTC), the command and its selection, the reason, how many tasks and their ids. The trail is append-only.

Exit codes: 2 bad flag value, 5 MySQL unavailable.`;
  static override examples = [
    {description: 'The 50 newest entries', command: '<%= config.bin %> audit list'},
    {description: 'The next page, as JSON', command: '<%= config.bin %> audit list --after 120 --json'},
  ];
  static override flags = {
    limit: limitFlag({char: 'n', max: MAX_AUDIT_LIST, what: 'entries shown', defaultText: '50'}),
    after: Flags.integer({min: 1, description: 'only entries older than this id (the "next" of the previous page)'}),
  };

  async run(): Promise<AuditListResult> {
    const {flags} = await this.parse(AuditList);
    await using admin = this.admin(flags);
    const {entries: rows, next} = await admin.audit.list({limit: flags.limit, after: flags.after});
    const result = {count: rows.length, entries: rows.map(toItem), next};
    if (!this.jsonEnabled()) {
      if (rows.length === 0) this.log('no audit entries');
      else
        for (const line of table(['ID', 'AT', 'OPERATOR', 'COMMAND', 'TASKS', 'SELECTION', 'REASON'], rows.map(toCells), {right: [0, 4]}))
          this.log(line);
    }
    return result;
  }
}

function toItem(r: AuditRecord): AuditItem {
  return {...r, at: iso(r.at) as string};
}

function toCells(r: AuditRecord): string[] {
  return [
    String(r.id),
    when(r.at, {seconds: true}),
    r.operator,
    r.command,
    String(r.taskCount),
    oneLine(JSON.stringify(r.filter)),
    oneLine(r.reason),
  ];
}
