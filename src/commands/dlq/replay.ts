import {createInterface} from 'node:readline/promises';
import {Args, Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {deadFilterFlags, replayCount} from '../../cli/dlq.js';
import {CONFIRM_ABOVE, PATCH_CLIPPED_MARKER, PATCH_RECORD_BYTES, type ReplayPlan, type ReplayResult} from '../../core/dlq/replay.js';
import {MAX_REASON} from '../../core/dlq/replay-request.js';
import {invalid} from '../../core/errors.js';

export type DlqReplayResult =
  ({dryRun: true} & Omit<ReplayPlan, 'asOf' | 'needsConfirmation' | 'patch'>) | ({dryRun: false} & ReplayResult);

export default class DlqReplay extends AxCommand {
  static override summary = 'Replay dead tasks: back to submitted with their whole retry budget.';
  static override description = `By ids, or by filter (--type, --since, --until, --error, or --all for every dead task). Each replayed task is due at once, gets all of its retries again with the backoff starting over at the first delay, and keeps counting attempts (the budget counts from the replay, kept in tasks.retry_base). Its history records "replayed by <operator>: <reason>"; each batch writes an audit row (ax audit list) in its own transaction. Tasks that are no longer dead when their batch runs (another replay took them, a worker runs them) are skipped and reported, never run twice. Succeeded or cancelled tasks named by id are refused (exit 4) unless --force: a forced replay (which needs --reason) runs them again, skipping the idempotency check that keeps a finished task from running twice; history says "force-replayed by <operator>: <reason>", the audit command is "dlq replay --force", and the handler sees ctx.replay = {by, at, reason} (also on its retries) so its own idempotency can decide. --patch applies a JSON Merge Patch (RFC 7396) to the payload of each selected task, named by id or by a filter; every result is validated like submit's payloads before anything is written, and one invalid result refuses the whole replay (exit 2, naming the task, nothing changed; --dry-run with --patch checks a patch without replaying). The patch is recorded in the audit row (filter.patch) and at the end of each replayed task's history note ("; patch {…}"), as compact JSON of at most ${PATCH_RECORD_BYTES} bytes (a longer one is cut and marked "${PATCH_CLIPPED_MARKER}").

More than ${CONFIRM_ABOVE} tasks, or a filter without --type, asks for confirmation on a terminal and needs --yes otherwise. --dry-run counts what would be replayed and changes nothing. --rate caps tasks per second (batches of rate/10, ten a second: N tasks take at least N/rate seconds); without it, batches of 2000 go as fast as the database allows. The summary gives the time taken (elapsedMs in --json).

Exit codes: 2 bad input (malformed ids, ids mixed with a filter, no selection, --rate 0, no --yes, --force without --reason, a --patch that is not an object or makes a payload invalid, --reason over ${MAX_REASON} characters), 3 unknown ids or a filter that selects nothing, 4 a named task is succeeded or cancelled, 5 MySQL or RabbitMQ unavailable.`;
  static override examples = [
    {
      description: 'Replay two dead tasks',
      command: '<%= config.bin %> dlq replay 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0e',
    },
    {
      description: 'What would a replay of one type select?',
      command: '<%= config.bin %> dlq replay --type order_notify --since 1h --dry-run',
    },
    {
      description: 'Replay them gently, with a reason for the audit trail',
      command: '<%= config.bin %> dlq replay --type order_notify --since 1h --rate 200 --reason "smtp fixed" --yes',
    },
    {
      description: 'Replay a type with a field of each payload changed (every result checked first)',
      command: '<%= config.bin %> dlq replay --type order_notify --error "bad host" --patch \'{"smtp": {"host": "mx2"}}\' --yes',
    },
    {
      description: 'Run a succeeded task again, with its payload patched',
      command:
        '<%= config.bin %> dlq replay 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d --force --reason "receipt lost" --patch \'{"resend": true}\'',
    },
  ];
  static override strict = false;
  static override args = {
    ids: Args.string({description: 'ids of dead tasks (lower-case UUIDs); or use a filter', required: false, ignoreStdin: true}),
  };
  static override flags = {
    ...deadFilterFlags,
    all: Flags.boolean({description: 'every dead task (no filter)'}),
    force: Flags.boolean({
      description: 'also replay succeeded or cancelled tasks named by id, skipping the idempotency check (needs --reason)',
    }),
    patch: Flags.string({
      description:
        'a JSON Merge Patch (RFC 7396) applied to the payload of each selected task (ids or filter) before the replay; all results are validated first',
    }),
    'dry-run': Flags.boolean({description: 'count what would be replayed, per type, with a sample; change nothing'}),
    rate: Flags.integer({description: 'at most this many tasks per second, a positive integer (default: as fast as batches go)'}),
    reason: Flags.string({
      char: 'r',
      description: `why, recorded in each task's history and the audit trail (at most ${MAX_REASON} characters)`,
    }),
    yes: Flags.boolean({
      char: 'y',
      description: `confirm without asking (needed off a terminal for more than ${CONFIRM_ABOVE} tasks or a filter without --type)`,
    }),
  };

  async run(): Promise<DlqReplayResult> {
    const {argv, flags} = await this.parse(DlqReplay);
    await using admin = this.admin(flags);
    const {plan, run} = await admin.dlq.plan({
      ids: argv as string[],
      filter: {type: flags.type, since: flags.since, until: flags.until, error: flags.error},
      all: flags.all,
      force: flags.force,
      reason: flags.reason ?? null,
      ...(flags.patch === undefined ? {} : {patch: flags.patch}),
      ...(flags.rate === undefined ? {} : {rate: flags.rate}),
      command: 'dlq replay',
    });
    if (flags['dry-run']) {
      if (!this.jsonEnabled()) this.printPlan(plan, 'would replay');
      return {dryRun: true, total: plan.total, byType: plan.byType, byState: plan.byState, sample: plan.sample, skipped: plan.skipped};
    }
    if (plan.needsConfirmation && !flags.yes) await this.confirm(plan);
    const tty = process.stderr.isTTY && !this.jsonEnabled();
    const result = await run(tty ? {onProgress: (done: number, total: number) => process.stderr.write(`\rreplayed ${done}/${total}`)} : {});
    if (tty) process.stderr.write('\n');
    if (!this.jsonEnabled()) {
      this.log(
        `replayed ${result.replayed} in ${(result.elapsedMs / 1000).toFixed(1)} s, skipped ${result.skipped.length}${result.unrung > 0 ? `, ${result.unrung} not rung yet (the reconciler rings for them)` : ''}`,
      );
      for (const s of result.skipped.slice(0, 20)) this.log(`  skipped ${s.id}: ${s.why}`);
    }
    return {dryRun: false, ...result};
  }

  private printPlan(plan: ReplayPlan, verb: string): void {
    this.log(`${verb} ${replayCount(plan)}`);
    for (const [type, n] of Object.entries(plan.byType).sort((a, b) => b[1] - a[1])) this.log(`  ${type}  ${n}`);
    if (plan.sample.length > 0) this.log(`sample: ${plan.sample.join(' ')}`);
    for (const s of plan.skipped) this.log(`  skipped ${s.id}: ${s.why}`);
  }

  /** Asks on a terminal; off a terminal (scripts, CI) the operator must have said --yes. */
  private async confirm(plan: ReplayPlan): Promise<void> {
    const why = plan.total > CONFIRM_ABOVE ? `more than ${CONFIRM_ABOVE} tasks` : 'a filter without --type';
    if (!process.stdin.isTTY || !process.stderr.isTTY)
      throw invalid(`this replay selects ${plan.total} tasks (${why}): add --yes to confirm, or --dry-run to look first`);
    this.printPlan(plan, 'about to replay');
    const rl = createInterface({input: process.stdin, output: process.stderr});
    try {
      const answer = await rl.question(`replay ${plan.total} tasks? [y/N] `);
      if (!/^y(es)?$/i.test(answer.trim())) throw invalid('replay not confirmed: nothing changed');
    } finally {
      rl.close();
    }
  }
}
