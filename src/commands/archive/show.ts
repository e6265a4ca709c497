import {Args} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {printable} from '../../cli/render.js';
import type {ArchivedTask} from '../../core/store/archive-types.js';

export interface ArchiveShowResult extends ArchivedTask {
  day: string;
  part: string;
}

export default class ArchiveShow extends AxCommand {
  static override readOnly = true;
  static override summary = 'Show an archived task and its history, found by id.';
  static override description = `A time-ordered id (UUIDv7) names the day it was created, so only that day's parts whose id range
holds it are read; other ids (tasks submitted with a dedup key) are looked for in every day. The
row is printed as archived: the columns of \`tasks\` and \`task_history\` (docs/archive.md).

Exit codes: 2 malformed id, 3 not in the archive, 4 a corrupt archive file (named).`;
  static override examples = [
    '<%= config.bin %> archive show 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d',
    "<%= config.bin %> archive show 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d --json | jq -r '.task.payload | fromjson'",
  ];
  static override args = {id: Args.string({description: 'task id (a lower-case UUID)', required: true, ignoreStdin: true})};

  async run(): Promise<ArchiveShowResult> {
    const {args, flags} = await this.parse(ArchiveShow);
    await using admin = this.admin(flags);
    const f = await admin.archive.show(args.id);
    const t = f.archived.task;
    if (!this.jsonEnabled()) {
      this.log(`${String(t.id)}  ${String(t.type)}  ${String(t.state)}  (archived in ${f.part.day}/${f.part.part})`);
      for (const k of ['attempt', 'created_at', 'run_at', 'finished_at', 'last_error', 'payload', 'result_json'])
        if (k !== 'result_json' || (t[k] ?? null) !== null) this.log(`  ${k.padEnd(12)} ${printable(String(t[k] ?? '-'))}`);
      this.log('', `history (${f.archived.history.length})`);
      for (const h of f.archived.history)
        this.log(
          `  ${String(h.at)}  ${String(h.from_state ?? '-')} → ${String(h.to_state)}  #${String(h.attempt)}  ${String(h.worker ?? '-')}${h.error ? `  ${printable(String(h.error))}` : ''}`,
        );
    }
    return {...f.archived, day: f.part.day, part: f.part.part};
  }
}
