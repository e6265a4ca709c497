import {Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {signalController} from '../../cli/signals.js';
import type {ArchiveRunReport} from '../../core/archive/archiver.js';
import {DURATION_RULE} from '../../core/duration.js';

export default class ArchiveRun extends AxCommand {
  static override summary = 'Move finished tasks older than the retention window to the archive.';
  static override description = `Finished tasks — succeeded, dead and cancelled — whose finish time is older than --older-than
(default AX_RETENTION, 30d) are written with their history to the archive directory (AX_ARCHIVE_DIR),
read back and verified, then deleted from MySQL, AX_ARCHIVE_BATCH (500) tasks per transaction with
AX_ARCHIVE_PAUSE (100ms) between batches. Submitted, failed and running tasks and cron schedules are
never archived. An interrupted run is finished by the next one (nothing lost, nothing twice).

Every scheduler runs this every AX_ARCHIVE_EVERY (1h); one archiver per cell works at a time: when
another holds the cell's lock this run does nothing and says so. The file format is in docs/archive.md.

Exit codes: 2 bad --older-than or unusable archive directory (nothing changed), 5 MySQL unavailable.`;
  static override examples = [
    {description: 'What would go?', command: '<%= config.bin %> archive run --dry-run'},
    {description: 'Archive everything finished more than 7 days ago', command: '<%= config.bin %> archive run --older-than 7d'},
    {description: 'For a script', command: '<%= config.bin %> archive run --json | jq .tasks'},
  ];
  static override flags = {
    'dry-run': Flags.boolean({description: 'count the tasks that would be archived, per state; change nothing'}),
    'older-than': Flags.string({description: `archive tasks finished longer ago than this (${DURATION_RULE}; default AX_RETENTION)`}),
  };

  async run(): Promise<ArchiveRunReport> {
    const {flags} = await this.parse(ArchiveRun);
    await using admin = this.admin(flags);
    const tty = !this.jsonEnabled() && process.stderr.isTTY === true;
    const {signal} = signalController();
    const report = await admin.archive.run({
      dryRun: flags['dry-run'],
      signal,
      olderThan: flags['older-than'],
      ...(tty ? {onProgress: (p) => process.stderr.write(`\r${p.state}: ${p.archived} archived, ${p.parts} parts so far  `)} : {}),
    });
    if (tty) process.stderr.write('\n');
    if (!this.jsonEnabled()) for (const line of render(report)) this.log(line);
    return report;
  }
}

function render(r: ArchiveRunReport): string[] {
  if (!r.ran) return ['another archiver of this cell is running: nothing done'];
  const t = r.tasks;
  const counts = `${t.succeeded} succeeded, ${t.dead} dead, ${t.cancelled} cancelled`;
  if (r.dryRun) return [`would archive ${counts} (finished before ${r.cutoff}); nothing changed`];
  const lines = [`archived ${counts} with ${r.history} history rows in ${r.parts} parts (finished before ${r.cutoff})`];
  if (r.recovered > 0) lines.push(`finished an interrupted run: ${r.recovered} tasks deleted that were already archived`);
  if (r.cleaned > 0) lines.push(`removed ${r.cleaned} temporary files of an interrupted run`);
  return lines;
}
