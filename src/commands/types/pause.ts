import {Args, Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {iso, when} from '../../cli/render.js';
import {openAdmin} from '../../cli/runtime.js';
import {invalid} from '../../core/errors.js';
import {validateTypeName} from '../../core/task/validate.js';

export interface TypesPauseResult {
  type: string;
  /** False: it already was paused; nothing changed. */
  changed: boolean;
  paused: {by: string | null; reason: string | null; since: string | null};
}

const MAX_REASON = 1000;

export default class TypesPause extends AxCommand {
  static override summary = 'Pause a task type: no worker claims it until it is resumed; submits still accepted.';
  static override description = `The runbook's "take the failing type out of service". Within AX_FLOW_REFRESH (1 s by default) every worker stops running the type: tasks that arrive are parked in storage unclaimed (no attempt used, shown as PARKED in ax types list and in each task's history) and new submits are accepted and wait. Running tasks finish. ax types resume releases the parked backlog, optionally at a controlled rate. Pausing a paused type changes nothing and says so. Recorded in the audit trail (ax audit list) as done by $AX_OPERATOR, else user@host, and in the type's history (ax types show).

Exit codes: 2 malformed type name or missing/empty --reason, 3 unknown type, 5 MySQL unavailable.`;
  static override examples = [
    {
      description: 'The mail provider is down',
      command: '<%= config.bin %> types pause order_notify --reason "smtp provider outage INC-42"',
    },
  ];
  static override args = {type: Args.string({description: 'task type (domain_action)', required: true, ignoreStdin: true})};
  static override flags = {
    reason: Flags.string({description: 'why (recorded in the audit trail and the type history)', required: true}),
  };

  async run(): Promise<TypesPauseResult> {
    const {args, flags} = await this.parse(TypesPause);
    const rt = this.runtime(flags);
    await using admin = openAdmin(rt);
    const type = validateTypeName(args.type);
    const reason = flags.reason.trim();
    if (reason === '') throw invalid('--reason must not be empty');
    if (reason.length > MAX_REASON) throw invalid(`--reason is at most ${MAX_REASON} characters`);
    const r = await admin.types.pause(type, reason);
    if (!this.jsonEnabled()) {
      const since = `${when(r.paused.since, {seconds: true})} UTC`;
      this.log(
        r.changed
          ? `paused ${type}: workers stop claiming it within ${rt.config.flowRefreshMs} ms; submits wait parked. Resume with: ax types resume ${type}`
          : `${type} was already paused by ${r.paused.by ?? '?'} since ${since}${r.paused.reason ? ` (${r.paused.reason})` : ''}: nothing changed`,
      );
    }
    return {type: r.type, changed: r.changed, paused: {...r.paused, since: iso(r.paused.since)}};
  }
}
