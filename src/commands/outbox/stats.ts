import {AxCommand} from '../../cli/base.js';
import {table} from '../../cli/render.js';
import type {OutboxBacklog} from '../../core/admin/outbox.js';
import {formatDuration} from '../../core/duration.js';

export type OutboxStatsResult = OutboxBacklog;

export default class OutboxStats extends AxCommand {
  static override readOnly = true;
  static override summary = 'Show the outbox backlog: unsent rows, failed rows, and the outbox lag.';
  static override description = `Counts task_outbox rows in the business database (AX_OUTBOX_MYSQL_URL, default AX_MYSQL_URL): unsent rows are waiting for the relay, failed rows were skipped as impossible to relay. The age of the oldest unsent row is the outbox lag, measured on the database clock: a few seconds at most while a relay runs; if it keeps growing, no relay is running or it cannot keep up (check \`ax relay\` / the sidecar's /readyz). The same numbers are in the relay's health details.`;
  static override examples = [
    {description: 'Is the relay keeping up?', command: '<%= config.bin %> outbox stats'},
    {description: 'The lag in milliseconds, for a script', command: "<%= config.bin %> outbox stats --json | jq '.oldestAgeMs'"},
  ];

  async run(): Promise<OutboxStatsResult> {
    const {flags} = await this.parse(OutboxStats);
    await using admin = this.admin(flags);
    const result = await admin.outbox.stats();
    if (!this.jsonEnabled()) {
      this.log(`task_outbox in database ${result.database}`);
      const rows = [
        ['unsent', String(result.unsent)],
        ['failed', String(result.failed)],
        ['oldest unsent', result.oldestAgeMs === null ? '-' : formatDuration(result.oldestAgeMs)],
      ];
      for (const line of table(['', ''], rows, {right: [1], indent: '  '}).slice(1)) this.log(line);
    }
    return result;
  }
}
