import {AxCommand} from '../../cli/base.js';
import {openArchiveTarget} from '../../cli/runtime.js';
import {table} from '../../cli/render.js';
import {type ArchiveDay, listArchive} from '../../core/archive/admin.js';

export interface ArchiveListResult {
  location: string;
  cell: string;
  days: ArchiveDay[];
}

export default class ArchiveList extends AxCommand {
  static override readOnly = true;
  static override summary = 'List the days in the archive: parts, tasks, history rows and bytes.';
  static override description = `Reads the manifests of the configured cell in AX_ARCHIVE_DIR (no MySQL needed). A task is filed
under the day of its id (the day it was created, UTC). "pending" parts are waiting for their MySQL
delete to be confirmed; the next \`ax archive run\` finishes them.

Exit codes: 4 an unreadable manifest (the file is named).`;
  static override examples = ['<%= config.bin %> archive list', 'AX_ARCHIVE_DIR=/mnt/archive <%= config.bin %> archive list --json'];

  async run(): Promise<ArchiveListResult> {
    const {flags} = await this.parse(ArchiveList);
    const rt = this.runtime(flags);
    const target = openArchiveTarget(rt);
    const days = await listArchive(target, rt.config.cell);
    if (!this.jsonEnabled()) {
      if (days.length === 0) this.log(`no archived tasks for cell "${rt.config.cell}" in ${target.location}`);
      else
        for (const l of table(
          ['DAY', 'PARTS', 'TASKS', 'HISTORY', 'BYTES', 'PENDING'],
          days.map((d) => [d.day, String(d.parts), String(d.tasks), String(d.history), String(d.bytes), String(d.pending)]),
          {right: [1, 2, 3, 4, 5]},
        ))
          this.log(l);
    }
    return {location: target.location, cell: rt.config.cell, days};
  }
}
