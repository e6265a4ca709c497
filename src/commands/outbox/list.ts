import {Flags} from '@oclif/core';
import {limitFlag} from '../../cli/flags.js';
import {AxCommand} from '../../cli/base.js';
import {iso, oneLine, table, when} from '../../cli/render.js';
import {DEFAULT_OUTBOX_LIST, MAX_OUTBOX_LIST} from '../../core/admin/outbox.js';
import type {OutboxRow} from '../../core/store/types.js';

/** The fields of an outbox row that the list shows. */
type Listed = Pick<OutboxRow, 'id' | 'type' | 'taskId' | 'dedupKey' | 'createdAt' | 'attempts' | 'lastError' | 'failedAt'>;
/** One outbox row as `ax outbox list --json` shows it (the payload is left out; times are ISO, UTC). */
export interface OutboxListItem {
  id: number;
  type: string;
  /** The task id the producer chose, if any (else the relay derives one from the row). */
  taskId: string | null;
  dedupKey: string | null;
  createdAt: string;
  /** Relay claims so far (each pass that took the row counts one). */
  attempts: number;
  /** Why the row failed, or the last transient error of a pending row. */
  lastError: string | null;
  failedAt: string | null;
}

export interface OutboxListResult {
  /** `pending`: not yet sent, the relay will take them; `failed`: skipped until `ax outbox retry`. */
  kind: 'pending' | 'failed';
  count: number;
  rows: OutboxListItem[];
}

export default class OutboxList extends AxCommand {
  static override readOnly = true;
  static override summary = 'List task_outbox rows the relay has not sent yet, or (--failed) the ones it gave up on.';
  static override description = `Rows come oldest first, from the business database (AX_OUTBOX_MYSQL_URL, default AX_MYSQL_URL). Pending rows are waiting for the relay: ATTEMPTS counts the relay passes that took them, and LAST ERROR is the last transient error (MySQL or RabbitMQ) that handed them back. Failed rows can never be relayed as written (payload not JSON, bad type, conflicting dedup key, …); the relay skips them until \`ax outbox retry\` clears the failure. The payload is not shown.`;
  static override examples = [
    {description: 'The 50 oldest rows still waiting for the relay', command: '<%= config.bin %> outbox list'},
    {description: 'Rows the relay gave up on, with the reason', command: '<%= config.bin %> outbox list --failed'},
    {
      description: 'Ids of every failed row, for a script',
      command: "<%= config.bin %> outbox list --failed --limit 10000 --json | jq '.rows[].id'",
    },
  ];
  static override flags = {
    failed: Flags.boolean({char: 'f', description: 'list failed rows instead of pending ones'}),
    limit: limitFlag({char: 'n', max: MAX_OUTBOX_LIST, what: 'rows shown', defaultText: String(DEFAULT_OUTBOX_LIST)}),
  };

  async run(): Promise<OutboxListResult> {
    const {flags} = await this.parse(OutboxList);
    await using admin = this.admin(flags);
    const {kind, rows} = await admin.outbox.list({failed: flags.failed, limit: flags.limit});
    if (!this.jsonEnabled()) {
      if (rows.length === 0) this.log(`no ${kind} outbox rows`);
      else {
        const head =
          kind === 'failed'
            ? ['ID', 'TYPE', 'CREATED', 'FAILED', 'ATTEMPTS', 'ERROR']
            : ['ID', 'TYPE', 'CREATED', 'ATTEMPTS', 'LAST ERROR'];
        const cells = rows.map((r) =>
          kind === 'failed'
            ? [
                String(r.id),
                r.type,
                when(r.createdAt, {seconds: true}),
                when(r.failedAt, {seconds: true}),
                String(r.attempts),
                oneLine(r.lastError),
              ]
            : [String(r.id), r.type, when(r.createdAt, {seconds: true}), String(r.attempts), oneLine(r.lastError)],
        );
        for (const line of table(head, cells, {right: [0, kind === 'failed' ? 4 : 3]})) this.log(line);
      }
    }
    return {kind, count: rows.length, rows: rows.map(toItem)};
  }
}

function toItem(r: Listed): OutboxListItem {
  return {
    id: r.id,
    type: r.type,
    taskId: r.taskId,
    dedupKey: r.dedupKey,
    createdAt: r.createdAt.toISOString(),
    attempts: r.attempts,
    lastError: r.lastError,
    failedAt: iso(r.failedAt),
  };
}
