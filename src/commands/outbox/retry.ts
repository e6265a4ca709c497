import {Args, Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {disposable} from '../../cli/dispose.js';
import {openOutbox} from '../../cli/runtime.js';
import {AxError, invalid} from '../../core/errors.js';

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
    const rt = this.runtime(flags);
    const ids = parseIds(argv as string[], flags.all);
    await using outbox = disposable(await openOutbox(rt));
    if (ids !== 'all') mustBeFailed(ids, await outbox.outboxRowStates({ids}));
    const retried = await outbox.outboxRetryFailed({ids});
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
 * for pending or sent ones.
 */
function mustBeFailed(ids: number[], found: Map<number, 'pending' | 'sent' | 'failed'>): void {
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
