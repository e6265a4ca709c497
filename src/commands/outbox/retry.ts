import {Args, Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import type {OutboxRetryResult} from '../../core/admin/outbox.js';

export type {OutboxRetryResult};

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
    await using admin = this.admin(flags);
    const {retried, ids} = await admin.outbox.retry({ids: argv as string[], all: flags.all});
    if (!this.jsonEnabled()) {
      this.log(retried === 0 ? 'no failed outbox rows to retry' : `${retried} outbox row${retried === 1 ? '' : 's'} will be relayed again`);
    }
    return {retried, ids};
  }
}
