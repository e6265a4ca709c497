import {Args, Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {openOutbox} from '../../cli/runtime.js';
import {AxError, invalid} from '../../core/errors.js';
import {marks, select} from '../../core/store/mysql/db.js';
import type {MysqlOutboxStore} from '../../core/store/mysql/outbox.js';

const MAX_IDS = 1000;

export interface OutboxRetryResult {
  /** How many failed rows were cleared for the relay to try again. */
  retried: number;
  /** The ids asked for, or 'all'. */
  ids: number[] | 'all';
}

export default class OutboxRetry extends AxCommand {
  static override summary = 'Clear the failure of failed outbox rows so the relay tries them again.';
  static override description = `A failed row is one the relay could never turn into a task as written (payload not JSON, bad type, conflicting dedup key, …): it is skipped until retried. Fix the cause first (correct the row in the business database, or deploy the fix that makes it valid), then retry it: the next relay pass takes it again, and it fails again if nothing changed (see \`ax outbox list --failed\`).

Either name rows by id or give --all. With ids, nothing is changed unless every id is a failed row.

Exit codes: 2 malformed id (or ids together with --all, or neither), 3 no such row, 4 the row is not failed (still pending, or already sent), 5 MySQL unavailable.`;
  static override examples = [
    {description: 'Retry two rows', command: '<%= config.bin %> outbox retry 1041 1042'},
    {description: 'Retry every failed row', command: '<%= config.bin %> outbox retry --all'},
  ];
  static override strict = false;
  static override args = {
    id: Args.string({description: 'ids of failed task_outbox rows (one or more)', ignoreStdin: true}),
  };
  static override flags = {
    all: Flags.boolean({description: 'retry every failed row'}),
  };

  async run(): Promise<OutboxRetryResult> {
    const {argv, flags} = await this.parse(OutboxRetry);
    const rt = this.runtime(flags.config);
    const ids = parseIds(argv as string[], flags.all);
    const outbox = await openOutbox(rt);
    let retried: number;
    try {
      if (ids !== 'all') await mustBeFailed(outbox, ids);
      retried = await outbox.retryFailed(ids);
    } catch (e) {
      throw noOutboxTable(e, outbox.db.database);
    } finally {
      await outbox.close().catch(() => undefined);
    }
    if (!this.jsonEnabled()) {
      this.log(retried === 0 ? 'no failed outbox rows to retry' : `${retried} outbox row${retried === 1 ? '' : 's'} will be relayed again`);
    }
    return {retried, ids};
  }
}

function parseIds(argv: string[], all: boolean): number[] | 'all' {
  if (all && argv.length > 0) throw invalid('give either ids or --all, not both');
  if (all) return 'all';
  if (argv.length === 0) throw invalid('name the failed rows to retry by id (see `ax outbox list --failed`), or give --all');
  if (argv.length > MAX_IDS) throw invalid(`at most ${MAX_IDS} ids at a time; use --all to retry every failed row`);
  const ids = argv.map((s) => {
    const n = /^\d{1,16}$/.test(s) ? Number(s) : 0;
    if (!(n >= 1 && Number.isSafeInteger(n))) throw invalid(`"${s}" is not an outbox row id (a whole number ≥ 1)`);
    return n;
  });
  return [...new Set(ids)];
}

/**
 * Refuses (changing nothing) unless every id is a failed row: not_found for unknown ids, conflict
 * for pending or sent ones. NOTE: this SELECT belongs in MysqlOutboxStore; it lives here only until
 * the store can say which of a set of ids are failed.
 */
async function mustBeFailed(outbox: MysqlOutboxStore, ids: number[]): Promise<void> {
  const rows = await select(
    outbox.db,
    outbox.db.pool,
    `SELECT id, sent_at IS NOT NULL AS sent, failed_at IS NOT NULL AS failed FROM task_outbox WHERE id IN (${marks(ids.length)})`,
    ids,
  );
  const found = new Map(rows.map((r) => [Number(r.id), Number(r.sent) ? 'sent' : Number(r.failed) ? 'failed' : 'pending']));
  const missing = ids.filter((id) => !found.has(id));
  if (missing.length > 0) {
    throw new AxError('not_found', `no task_outbox row with id ${missing.join(', ')}; nothing was retried`, {details: {ids: missing}});
  }
  const notFailed = ids.filter((id) => found.get(id) !== 'failed');
  if (notFailed.length > 0) {
    const what = notFailed.map((id) => `${id} (${found.get(id)})`).join(', ');
    throw new AxError('conflict', `not failed, so nothing to retry: ${what}; nothing was retried`, {details: {ids: notFailed}});
  }
}

/** A missing task_outbox is a set-up step not done (exit 5 with the fix), not a bug. NOTE: belongs in MysqlOutboxStore.open. */
function noOutboxTable(e: unknown, database: string): unknown {
  return (e as {code?: string}).code === 'ER_NO_SUCH_TABLE'
    ? new AxError('unavailable', `task_outbox does not exist in database ${database}: create it with \`ax migrate --outbox\``, {cause: e})
    : e;
}
