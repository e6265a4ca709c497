import {Flags} from '@oclif/core';
import {AxCommand} from '../cli/base.js';

export default class Migrate extends AxCommand {
  static override summary = "Create or upgrade ax's tables in MySQL/MariaDB.";
  static override description = `Applies the numbered, forward-only migrations that are not yet applied, in order, under the
named lock "ax_migrate": concurrent runs are safe (the second waits, then finds nothing to do).
The database named in AX_MYSQL_URL is created when missing and the user may create it.

--task-keys adds the index of task keys, which per-key limits and fair dispatch need (ax types set
--max-running-per-key, --rate-per-key, --fair): an online index build (writes go on), opt-in because
every task pays for it, keyed or not (about 8 % of end-to-end throughput here, docs/benchmarks.md).`;
  static override examples = [
    '<%= config.bin %> migrate',
    '<%= config.bin %> migrate --status',
    '<%= config.bin %> migrate --status --json',
    '<%= config.bin %> migrate --outbox --status',
    '<%= config.bin %> migrate --task-keys',
  ];
  static override flags = {
    status: Flags.boolean({
      description: 'only show which migrations are applied (with --outbox: whether task_outbox exists); changes nothing',
    }),
    outbox: Flags.boolean({description: 'create task_outbox in the business database (AX_OUTBOX_MYSQL_URL, default AX_MYSQL_URL)'}),
    'task-keys': Flags.boolean({
      description: 'add the index of task keys that per-key limits and --fair need (with --status: whether it exists)',
      exclusive: ['outbox'],
    }),
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
    if (flags['task-keys']) {
      if (flags.status) {
        const {database, indexed} = await admin.schema.taskKeysStatus();
        if (!this.jsonEnabled())
          this.log(
            indexed
              ? `database ${database} has the index of task keys`
              : `database ${database} has no index of task keys: run \`ax migrate --task-keys\` before per-key limits or --fair`,
          );
        return {taskKeys: true, database, indexed};
      }
      const {database, created} = await admin.schema.taskKeysEnable();
      if (!this.jsonEnabled())
        this.log(
          created ? `added the index of task keys to database ${database}` : `database ${database} has the index of task keys already`,
        );
      return {taskKeys: true, database, indexed: true, created};
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
