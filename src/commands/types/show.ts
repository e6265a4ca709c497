import {Args} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {iso, table, when} from '../../cli/render.js';
import {keysLines} from '../../cli/keys.js';
import {limitsLine, typeJson, type TypeJson, typesTable} from '../../cli/types.js';
import type {KeysView} from '../../core/types/keys.js';
import {validateTypeName} from '../../core/task/validate.js';

export interface TypesShowResult extends TypeJson {
  /** Newest first: paused, resumed, breaker transitions. */
  history: Array<{at: string | null; event: string; actor: string; detail: string | null}>;
  /** Its task keys: totals, the top keys by backlog and by running, the key that dominates the backlog (or null). */
  keys: KeysView;
}

export default class TypesShow extends AxCommand {
  static override readOnly = true;
  static override summary =
    'Show one task type: its live state, its workers, its limits, its top task keys and its history (pauses, breaker transitions).';
  static override description = `The row of ax types list for the type, the live workers that have its handler, its task keys (how many keys have a backlog; the 10 keys with the most backlog and the 10 with the most running; a "!" line when one key holds at least half of a backlog of 100 or more), and its history newest first (the last 50 events: paused, resumed, breaker transitions) with who and why.

Exit codes: 2 malformed type name, 3 unknown type, 5 MySQL unavailable.`;
  static override examples = [
    {description: 'Why is order_notify not running?', command: '<%= config.bin %> types show order_notify'},
    {description: 'Its breaker, for a script', command: "<%= config.bin %> types show order_notify --json | jq '.breaker'"},
  ];
  static override args = {type: Args.string({description: 'task type (domain_action)', required: true, ignoreStdin: true})};

  async run(): Promise<TypesShowResult> {
    const {args, flags} = await this.parse(TypesShow);
    await using admin = this.admin(flags);
    const type = validateTypeName(args.type);
    const d = await admin.types.show(type);
    if (!this.jsonEnabled()) {
      for (const line of typesTable([d])) this.log(line);
      this.log('');
      this.log(`workers: ${d.workers.length === 0 ? 'none live with its handler' : d.workers.join(', ')}`);
      this.log(`limits: ${limitsLine(d.limits)}`);
      if (d.paused)
        this.log(`paused by ${d.paused.by ?? '?'} since ${when(d.paused.since)} UTC${d.paused.reason ? `: ${d.paused.reason}` : ''}`);
      this.log('');
      for (const line of keysLines(d.type, d.keys, d.limits)) this.log(line);
      this.log('');
      if (d.history.length === 0) this.log('no history yet');
      else
        for (const line of table(
          ['AT (UTC)', 'EVENT', 'BY', 'DETAIL'],
          d.history.map((h) => [when(h.at), h.event, h.actor, h.detail ?? '']),
        ))
          this.log(line);
    }
    return {
      ...typeJson(d),
      history: d.history.map((h) => ({at: iso(h.at), event: h.event, actor: h.actor, detail: h.detail})),
      keys: d.keys,
    };
  }
}
