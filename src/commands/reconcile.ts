import {Flags} from '@oclif/core';
import {limitFlag} from '../cli/flags.js';
import {AxCommand} from '../cli/base.js';
import type {ReconcileReport} from '../core/reconcile/reconcile.js';

const MAX_LIMIT = 1_000_000;

export default class Reconcile extends AxCommand {
  static override summary = 'Repair what a crash or a lost message left behind, once.';
  static override description = `One reconcile pass, the same the scheduler runs every 5 minutes:

1. running tasks whose lease expired (their worker died) become failed, to be retried with backoff, or dead when out of retries; a worker that renewed its lease in between wins.
2. cron schedules get their missing occurrences back (deleted by hand, lost in a restore), and a pending occurrence that missed its fire time is handled by the schedule's misfire policy.
3. due submitted/failed tasks never rung for on RabbitMQ, or rung longer ago than AX_REPUBLISH_AFTER and still unclaimed, are published again: at most --limit of them, at AX_RECONCILE_RATE tasks/s, so a merely long backlog is not doubled. An occurrence of a paused or removed schedule, or one its overlap policy skips, is cancelled instead, with the reason.

Safe at any time, alongside workers and schedulers: every change is a guarded update of the task row. --dry-run reports what it would do and changes nothing. When the report says "truncated", run it again to handle the rest.`;
  static override examples = [
    {description: 'See what is stuck, changing nothing', command: '<%= config.bin %> reconcile --dry-run'},
    {description: 'Repair at most 1000 tasks of each kind', command: '<%= config.bin %> reconcile --limit 1000'},
    {description: 'Machine-readable report', command: '<%= config.bin %> reconcile --json'},
  ];
  static override flags = {
    'dry-run': Flags.boolean({description: 'report only; change nothing', default: false}),
    limit: limitFlag({max: MAX_LIMIT, what: 'tasks handled per kind', defaultText: 'AX_RECONCILE_LIMIT, 10000'}),
  };

  async run(): Promise<ReconcileReport> {
    const {flags} = await this.parse(Reconcile);
    await using admin = this.admin(flags);
    const report = await admin.reconcile.once({dryRun: flags['dry-run'], ...(flags.limit === undefined ? {} : {limit: flags.limit})});
    if (!this.jsonEnabled()) for (const line of summarize(report)) this.log(line);
    return report;
  }
}

function sample(ids: string[], found: number): string[] {
  if (ids.length === 0) return [];
  return [`    ${ids.join('\n    ')}`, ...(found > ids.length ? [`    … and ${found - ids.length} more`] : [])];
}

function summarize(r: ReconcileReport): string[] {
  const e = r.expiredLeases;
  const u = r.undispatched;
  const lines = [r.dryRun ? 'dry run: nothing was changed' : 'reconcile done'];
  lines.push(
    r.dryRun
      ? `  expired leases: ${e.found} found`
      : `  expired leases: ${e.found} found, ${e.failed} → failed (will retry), ${e.dead} → dead, ${e.stale} already moved on`,
  );
  lines.push(...sample(e.ids, e.found));
  lines.push(
    r.dryRun ? `  undispatched:   ${u.found} due and not rung for` : `  undispatched:   ${u.found} found, ${u.republished} re-published`,
  );
  lines.push(...sample(u.ids, u.found));
  if (r.cron.repaired.length > 0) lines.push(`  cron: recreated the missing occurrence of ${r.cron.repaired.join(', ')}`);
  if (r.cron.skipped > 0)
    lines.push(`  cron: ${r.cron.skipped} occurrence(s) not rung by their schedule's policy (cancelled; see ax tasks show)`);
  if (r.truncated) lines.push('  the limit was reached: run again to handle the rest');
  lines.push(`  took ${r.durationMs} ms`);
  return lines;
}
