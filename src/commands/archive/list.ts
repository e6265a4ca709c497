import {AxCommand} from '../../cli/base.js';
import {table} from '../../cli/render.js';
import type {ArchiveListing} from '../../core/admin/archive.js';

export type ArchiveListResult = ArchiveListing;

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
    await using admin = this.admin(flags);
    const listing = await admin.archive.list();
    const {days} = listing;
    if (!this.jsonEnabled()) {
      if (days.length === 0) this.log(`no archived tasks for cell "${listing.cell}" in ${listing.location}`);
      else
        for (const l of table(
          ['DAY', 'PARTS', 'TASKS', 'HISTORY', 'BYTES', 'PENDING'],
          days.map((d) => [d.day, String(d.parts), String(d.tasks), String(d.history), String(d.bytes), String(d.pending)]),
          {right: [1, 2, 3, 4, 5]},
        ))
          this.log(l);
    }
    return {location: listing.location, cell: listing.cell, days};
  }
}
