import {AxCommand} from '../../cli/base.js';
import {disposable} from '../../cli/dispose.js';
import {table} from '../../cli/render.js';
import {openStore} from '../../cli/runtime.js';
import {type StatsReport, taskStats} from '../../core/inspect/inspect.js';
import {TASK_STATES} from '../../core/task/state.js';

export default class TasksStats extends AxCommand {
  static override readOnly = true;
  static override summary = 'Count tasks per type and state.';
  static override description = `One row per task type with a column per state (${TASK_STATES.join(', ')}) and a total, then the totals per state, for the configured cell. --json gives {rows: [{type, state, count}], byState, total}.`;
  static override examples = [
    {description: 'Where is the work?', command: '<%= config.bin %> tasks stats'},
    {description: 'Dead tasks in total, for a script', command: "<%= config.bin %> tasks stats --json | jq '.byState.dead'"},
  ];

  async run(): Promise<StatsReport> {
    const {flags} = await this.parse(TasksStats);
    const rt = this.runtime(flags.config);
    await using store = disposable(await openStore(rt));
    const report = await taskStats(store);
    if (!this.jsonEnabled()) for (const line of render(report)) this.log(line);
    return report;
  }
}

function render(r: StatsReport): string[] {
  if (r.total === 0) return ['no tasks'];
  const byType = new Map<string, Record<string, number>>();
  for (const row of r.rows) {
    const counts = byType.get(row.type) ?? {};
    counts[row.state] = (counts[row.state] ?? 0) + row.count;
    byType.set(row.type, counts);
  }
  const head = ['TYPE', ...TASK_STATES.map((s) => s.toUpperCase()), 'TOTAL'];
  const body = [...byType.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([type, counts]) => [
      type,
      ...TASK_STATES.map((s) => String(counts[s] ?? 0)),
      String(TASK_STATES.reduce((n, s) => n + (counts[s] ?? 0), 0)),
    ]);
  const total = ['TOTAL', ...TASK_STATES.map((s) => String(r.byState[s])), String(r.total)];
  // Type left-aligned, counts right-aligned.
  return table(head, [...body, total], {right: head.map((_, i) => i).slice(1)});
}
