import {AxCommand, EXIT_CODES} from '../../cli/base.js';
import {table, terminalWidth} from '../../cli/render.js';
import type {CellReport} from '../../core/cells/report.js';

export interface CellsListResult {
  cells: CellReport[];
}

export default class CellsList extends AxCommand {
  static override readOnly = true;
  static override summary = 'List the cells: where each lives, its backlog by state and its live workers.';
  static override description = `One row per cell of the configuration: the default cell (AX_CELL), which takes every task type no pattern names, then those of AX_CELLS by name. TYPES are the patterns routed to the cell (exact names or domain_* prefixes); DATABASE and RABBITMQ where it lives (host:port/database and host:port/vhost, without credentials; "shared" when they are the default cell's, the cell then kept apart by the rows' cell column and its queue names). DUE, DELAYED, RUNNING and DEAD are its backlog (ax tasks stats --cell), WORKERS its live workers (heartbeat fresh) and stale ones. MISPLACED counts the waiting or running tasks of types AX_CELLS now routes to another cell (a type moved while it had tasks: they still run in this cell, README "Cells").

Every cell is read side by side; one that cannot be read (its database down, not migrated) is shown with the error and the others still are. --cell lists only the cells named (comma-separated).

Exit codes: 2 bad configuration or unknown cell, 5 a cell's database unavailable (the others are still listed).`;
  static override examples = [
    {description: 'Every cell', command: '<%= config.bin %> cells list'},
    {description: 'Backlog of one cell, for a script', command: "<%= config.bin %> cells list --cell big --json | jq '.cells[0].backlog'"},
  ];

  async run(): Promise<CellsListResult> {
    const {flags} = await this.parse(CellsList);
    // The default cell's service; --cell is a list here, read by the cells domain.
    await using admin = this.admin({config: flags.config});
    const cells = await admin.cells.list(flags.cell);
    if (!this.jsonEnabled()) for (const line of render(cells)) this.log(line);
    const failed = cells.find((c) => c.error);
    if (failed) {
      process.exitCode = EXIT_CODES.unavailable;
      if (!this.jsonEnabled()) this.logToStderr(`cell ${failed.cell} could not be read: ${failed.error?.message}`);
    }
    return {cells};
  }
}

function render(cells: CellReport[]): string[] {
  const n = (v: number | undefined): string => (v === undefined ? '?' : String(v));
  const rows = cells.map((c) => [
    c.default ? `${c.cell} (default)` : c.cell,
    [...c.types, ...(c.default ? ['(the rest)'] : [])].join(' ') || '-',
    c.ownDatabase || c.default ? c.database : `shared ${c.database}`,
    c.ownAmqp || c.default ? c.amqp : `shared ${c.amqp}`,
    n(c.backlog?.due),
    n(c.backlog?.delayed),
    n(c.backlog?.running),
    n(c.backlog?.dead),
    c.workers ? `${c.workers.live}${c.workers.stale > 0 ? ` (+${c.workers.stale} stale)` : ''}` : '?',
    c.error ? `unavailable: ${c.error.message}` : c.misplaced.map((m) => `${m.type}→${m.cell}: ${m.tasks}`).join(', ') || '-',
  ]);
  return table(['CELL', 'TYPES', 'DATABASE', 'RABBITMQ', 'DUE', 'DELAYED', 'RUNNING', 'DEAD', 'WORKERS', 'MISPLACED'], rows, {
    right: [4, 5, 6, 7],
    keep: [0],
    width: terminalWidth(),
  });
}
