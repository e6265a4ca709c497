import {Args, Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {parseReleaseRate} from '../../cli/types.js';
import type {ResumeResult} from '../../core/types/admin.js';
import {validateTypeName} from '../../core/task/validate.js';

export default class TypesResume extends AxCommand {
  static override summary = 'Resume a paused task type and release its parked backlog, optionally at N tasks/s.';
  static override description = `Workers run the type again within AX_FLOW_REFRESH; then the tasks parked while it was paused are made due and rung in batches, at most --rate per second when given (so a recovering downstream is not hit by the whole backlog at once; the command runs until all are released). Recorded in the audit trail and the type's history.

Exit codes: 2 malformed type name or --rate not a positive number, 3 unknown type, 4 the type is not paused (nothing changed), 5 MySQL or RabbitMQ unavailable.`;
  static override examples = [
    {description: 'The downstream is back', command: '<%= config.bin %> types resume order_notify'},
    {description: 'Gently: 200 tasks per second', command: '<%= config.bin %> types resume order_notify --rate 200'},
  ];
  static override args = {type: Args.string({description: 'task type (domain_action)', required: true, ignoreStdin: true})};
  static override flags = {
    rate: Flags.string({description: 'release the parked backlog at most this many tasks per second (default: as fast as it goes)'}),
    reason: Flags.string({description: 'why (recorded in the audit trail and the type history)'}),
  };

  async run(): Promise<ResumeResult> {
    const {args, flags} = await this.parse(TypesResume);
    await using admin = this.admin(flags);
    const type = validateTypeName(args.type);
    const rate = flags.rate === undefined ? undefined : parseReleaseRate(flags.rate);
    const r = await admin.types.resume(type, {...(rate === undefined ? {} : {rate}), reason: flags.reason ?? null});
    if (!this.jsonEnabled())
      this.log(
        `resumed ${type}: released ${r.released} parked task${r.released === 1 ? '' : 's'}${r.unrung > 0 ? ` (${r.unrung} left to the scheduler to ring)` : ''}`,
      );
    return r;
  }
}
