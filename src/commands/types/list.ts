import {AxCommand} from '../../cli/base.js';
import {typeJson, type TypeJson, typesTable} from '../../cli/types.js';

export interface TypesListResult {
  /** The database clock when read. */
  at: string;
  types: TypeJson[];
}

export default class TypesList extends AxCommand {
  static override readOnly = true;
  static override summary = 'List task types: handlers, backlog, parked tasks, breaker, pause, limits.';
  static override description = `Every task type the cell knows of: registered by a worker's handlers, named by a waiting, running or dead task, or paused by an operator. HANDLERS counts the live workers (heartbeat within 15 s) that have a handler for it; "no handler" means its tasks wait parked (no attempt used) until a worker with the handler starts, and go dead only after AX_UNHANDLED_DEAD_AFTER. DUE, DELAYED and RUNNING are the backlog (ax tasks stats); PARKED the waiting tasks held back by flow control, per reason (paused, breaker, unhandled, capped: over its max running, rate: waiting for its rate-limit slot). LIMITS shows --max-running and --rate (ax types set). FAIL%1M is the share of failed attempts in the last minute as the breaker counts them (timeouts included, unrecoverable failures not); BREAKER is closed, open (its tasks park until the next probe) or half_open (a few probes run). PAUSED says who paused it and since when (UTC).

Exit codes: 5 MySQL unavailable.`;
  static override examples = [
    {description: 'What every type is doing', command: '<%= config.bin %> types list'},
    {
      description: 'Types no live worker handles, for a script',
      command: "<%= config.bin %> types list --json | jq -r '.types[] | select(.noHandler) | .type'",
    },
  ];

  async run(): Promise<TypesListResult> {
    const {flags} = await this.parse(TypesList);
    await using admin = this.admin(flags);
    const r = await admin.types.list();
    if (!this.jsonEnabled()) {
      if (r.types.length === 0) this.log('no task types known yet');
      else for (const line of typesTable(r.types)) this.log(line);
    }
    return {at: r.at.toISOString(), types: r.types.map(typeJson)};
  }
}
