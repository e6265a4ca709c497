import {Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {deadFilterFlags, deadTaskJson, type DeadTaskJson} from '../../cli/dlq.js';
import {limitFlag} from '../../cli/flags.js';
import {oneLine, table, when} from '../../cli/render.js';
import {MAX_DLQ_LIMIT} from '../../core/dlq/dlq.js';
import {attemptBudget, attemptCell} from '../../core/inspect/timeline.js';
import type {DeadTaskRow} from '../../core/store/types.js';

export interface DlqListResult {
  count: number;
  tasks: DeadTaskJson[];
  /** Pass as --after for the next page; null when this page is the last. */
  next: string | null;
}

export default class DlqList extends AxCommand {
  static override readOnly = true;
  static override summary = 'List dead tasks, the newest death first.';
  static override description = `Dead tasks ran out of retries or failed unrecoverably; they wait here for an operator (ax dlq show, ax dlq replay). Filters combine (AND); --since and --until are about when the task died (UTC). Past --limit, the last line names the --after value of the next page. On a terminal the last error is cut to fit the table (a task id never is); --wide shows it whole, and so do piped output and --json.

Exit codes: 2 bad flag value, 3 the --after task does not exist, 5 MySQL unavailable.`;
  static override examples = [
    {description: 'The 50 newest dead tasks', command: '<%= config.bin %> dlq list'},
    {
      description: 'Dead order notifications of the last hour whose error mentions a timeout, errors whole',
      command: '<%= config.bin %> dlq list --type order_notify --since 1h --error timeout --wide',
    },
    {
      description: 'The next page',
      command: '<%= config.bin %> dlq list --limit 1000 --after 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d --json',
    },
  ];
  static override flags = {
    ...deadFilterFlags,
    limit: limitFlag({char: 'n', max: MAX_DLQ_LIMIT, what: 'tasks shown', defaultText: '50'}),
    after: Flags.string({description: 'only tasks after this one (the "next" id of the previous page)'}),
    wide: Flags.boolean({char: 'w', description: 'show the whole last error (one line per task, not cut)'}),
  };

  async run(): Promise<DlqListResult> {
    const {flags} = await this.parse(DlqList);
    await using admin = this.admin(flags);
    const filter = {type: flags.type, since: flags.since, until: flags.until, error: flags.error};
    const page = await admin.dlq.list(filter, {limit: flags.limit, after: flags.after});
    if (!this.jsonEnabled()) {
      if (page.tasks.length === 0) this.log('no dead tasks match');
      else {
        const head = ['ID', 'TYPE', 'ATTEMPTS', 'DIED (UTC)', 'LAST ERROR'];
        const rows = page.tasks.map(cells);
        for (const line of table(head, rows, flags.wide ? {width: undefined} : {})) this.log(line);
        if (page.next !== null) this.log(`more: --after ${page.next}`);
      }
    }
    return {count: page.tasks.length, tasks: page.tasks.map(deadTaskJson), next: page.next};
  }
}

function cells(t: DeadTaskRow): string[] {
  return [t.id, t.type, attemptCell(attemptBudget(t)), when(t.finishedAt, {seconds: true}), oneLine(t.lastError)];
}
