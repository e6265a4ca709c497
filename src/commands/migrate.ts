import {Flags} from '@oclif/core';
import {AxCommand} from '../cli/base.js';

export default class Migrate extends AxCommand {
  static override summary = "Create or upgrade ax's tables in MySQL/MariaDB.";
  static override description = `Applies the numbered, forward-only migrations that are not yet applied, in order, under the
named lock "ax_migrate": concurrent runs are safe (the second waits, then finds nothing to do).
The database named in AX_MYSQL_URL is created when missing and the user may create it.`;
  static override examples = [
    '<%= config.bin %> migrate',
    '<%= config.bin %> migrate --status',
    '<%= config.bin %> migrate --status --json',
    '<%= config.bin %> migrate --outbox --status',
  ];
  static override flags = {
    status: Flags.boolean({
      description: 'only show which migrations are applied (with --outbox: whether task_outbox exists); changes nothing',
    }),
    outbox: Flags.boolean({description: 'create task_outbox in the business database (AX_OUTBOX_MYSQL_URL, default AX_MYSQL_URL)'}),
  };

  async run(): Promise<unknown> {
    const {flags} = await this.parse(Migrate);
    // --status only looks: it must not create the database it reports on.
    await using admin = this.admin(flags, flags.status ? {createDatabase: false} : {});
    if (flags.outbox) {
      if (flags.status) {
        const {database, exists} = await admin.schema.outboxStatus();
        if (!this.jsonEnabled())
          this.log(
            exists
              ? `task_outbox exists in database ${database}`
              : `task_outbox does not exist in database ${database}: run \`ax migrate --outbox\``,
          );
        return {outbox: true, database, exists};
      }
      const {database} = await admin.schema.outboxCreate();
      if (!this.jsonEnabled()) this.log(`task_outbox is ready in database ${database}`);
      return {outbox: true, database, exists: true};
    }
    if (flags.status) {
      const {database, migrations, pending} = await admin.schema.status();
      if (!this.jsonEnabled()) {
        for (const s of migrations)
          this.log(
            `${String(s.version).padStart(4, '0')}  ${s.appliedAt ? s.appliedAt.toISOString() : 'pending                 '}  ${s.name}`,
          );
        this.log(pending === 0 ? `database ${database} is up to date` : `${pending} migration(s) pending: run \`ax migrate\``);
      }
      return {database, migrations, pending};
    }
    const report = await admin.schema.migrate();
    if (!this.jsonEnabled()) {
      for (const a of report.applied) this.log(`applied ${String(a.version).padStart(4, '0')} ${a.name}`);
      this.log(`database ${report.database} is at schema version ${report.current}`);
    }
    return report;
  }
}
