import {Args, Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import type {RestoreReport} from '../../core/archive/admin.js';

export default class ArchiveRestore extends AxCommand {
  static override summary = 'Put archived tasks back into the hot table, with their history.';
  static override description = `Restores tasks verbatim (state, attempts, payload, timeline), for example to force-replay one
with \`ax dlq replay --force\`. Ids still in the hot table are refused. By ids: all or nothing, one
transaction. By --day: every part of that day is read and verified first, then restored one part
(one transaction) at a time. Restored tasks are marked in their part's manifest so each task lives in
one place; they are archived again after the retention window. Each restore is recorded in the audit
trail (ax audit list).

Exit codes: 2 malformed id or day, 3 not in the archive, 4 still in the hot table or a corrupt archive file (named), 5 MySQL unavailable.`;
  static override examples = [
    '<%= config.bin %> archive restore 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d',
    '<%= config.bin %> archive restore --day 2026-10-30 --json',
  ];
  static override strict = false;
  static override args = {
    ids: Args.string({description: 'ids of archived tasks (lower-case UUIDs); or --day', required: false, ignoreStdin: true}),
  };
  static override flags = {
    day: Flags.string({description: 'restore every archived task of this day (YYYY-MM-DD, UTC, the day of the ids)'}),
  };

  async run(): Promise<RestoreReport> {
    const {argv, flags} = await this.parse(ArchiveRestore);
    await using admin = this.admin(flags);
    const r = await admin.archive.restore({ids: argv as string[], day: flags.day});
    if (!this.jsonEnabled()) this.log(`restored ${r.restored.length} tasks from ${r.parts} parts into the hot table`);
    return r;
  }
}
