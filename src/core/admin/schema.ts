/**
 * ax's schema and the business database's outbox table in the admin service (`ax migrate`). The
 * database is created when missing only if the configuration allows it (AX_CREATE_DATABASE; the
 * caller turns it off for the status calls, which must not create what they report on).
 */
import type {MigrateReport, MigrationStatus} from '../store/types.js';
import type {AdminSession} from './session.js';

export interface SchemaAdmin {
  /** Every known migration with its applied time, and how many are pending. Throws unavailable. */
  status(): Promise<{database: string; migrations: MigrationStatus[]; pending: number}>;
  /** Applies the pending migrations in order under a named lock (concurrent runs are safe). Throws unavailable. */
  migrate(): Promise<MigrateReport>;
  /** Whether ax's database has the opt-in index of task keys (per-key limits, fair dispatch). Throws unavailable. */
  taskKeysStatus(): Promise<{database: string; indexed: boolean}>;
  /**
   * Creates the index of task keys online (`ax migrate --task-keys`) unless it exists: a schema
   * change, like migrate. Throws not_migrated before `ax migrate`, unavailable.
   */
  taskKeysEnable(): Promise<{database: string; created: boolean}>;
  /** Whether task_outbox exists in the business database (AX_OUTBOX_MYSQL_URL). Throws unavailable. */
  outboxStatus(): Promise<{database: string; exists: boolean}>;
  /** Creates task_outbox in the business database when missing (never the database). Throws unavailable. */
  outboxCreate(): Promise<{database: string}>;
}

export function createSchemaAdmin(s: AdminSession): SchemaAdmin {
  const outbox = () => s.outbox({requireTable: false});
  return {
    async status() {
      const db = await s.schema();
      const migrations = await db.schemaStatus();
      return {database: db.database, migrations, pending: migrations.filter((m) => m.appliedAt === null).length};
    },
    migrate: async () => (await s.schema()).schemaMigrate(),
    async taskKeysStatus() {
      const db = await s.schema();
      return {database: db.database, indexed: await db.keysIndexed()};
    },
    async taskKeysEnable() {
      const db = await s.schema();
      return {database: db.database, created: await db.keysIndexCreate()};
    },
    async outboxStatus() {
      const o = await outbox();
      return {database: o.database, exists: await o.outboxTableExists()};
    },
    async outboxCreate() {
      const o = await outbox();
      await o.outboxCreateTable();
      return {database: o.database};
    },
  };
}
