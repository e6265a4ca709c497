import {Args, Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {parseReleaseRate} from '../../cli/types.js';
import {validateTypeName} from '../../core/task/validate.js';
import {invalid} from '../../core/errors.js';

export interface TypesBreakerResult {
  type: string;
  /** The state it was reset from. */
  from: string;
  to: 'closed';
  /** Tasks the breaker had parked, made due now. */
  released: number;
  /** Released but not rung (RabbitMQ refused): the scheduler rings them. */
  unrung: number;
}

export default class TypesBreaker extends AxCommand {
  static override summary = "Reset a task type's circuit breaker: closed now, its cool-down back to the base.";
  static override description = `For when the downstream is known to be back before the next probe: the breaker closes at once, workers run the type again within AX_FLOW_REFRESH, and the tasks the breaker parked are due and rung at once (at most --rate per second when given). Recorded in the type's history and the audit trail. Without --reset it does nothing: see ax types show for the breaker's state and transitions.

Exit codes: 2 malformed type name, no --reset or --rate not a positive number, 3 unknown type, 4 the breaker is closed already (nothing changed), 5 MySQL or RabbitMQ unavailable.`;
  static override examples = [
    {
      description: 'The payment API is back',
      command: '<%= config.bin %> types breaker payment_capture --reset --reason "vendor fixed INC-7"',
    },
  ];
  static override args = {type: Args.string({description: 'task type (domain_action)', required: true, ignoreStdin: true})};
  static override flags = {
    reset: Flags.boolean({description: 'close the breaker now'}),
    reason: Flags.string({description: 'why (history and audit trail)'}),
    rate: Flags.string({description: 'release the parked backlog at most this many tasks per second (default: as fast as it goes)'}),
  };

  async run(): Promise<TypesBreakerResult> {
    const {args, flags} = await this.parse(TypesBreaker);
    await using admin = this.admin(flags);
    const type = validateTypeName(args.type);
    if (!flags.reset) throw invalid('say what to do: --reset (ax types show shows the breaker)');
    const rate = flags.rate === undefined ? undefined : parseReleaseRate(flags.rate);
    const r = await admin.types.resetBreaker(type, flags.reason ?? null, rate === undefined ? {} : {rate});
    if (!this.jsonEnabled())
      this.log(
        `reset the breaker of ${type} (was ${r.from}): closed; released ${r.released} parked task${r.released === 1 ? '' : 's'}${r.unrung > 0 ? ` (${r.unrung} left to the scheduler to ring)` : ''}`,
      );
    return {type: r.type, from: r.from, to: 'closed', released: r.released, unrung: r.unrung};
  }
}
