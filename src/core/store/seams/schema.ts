/** `ax migrate`: ax's own schema (SchemaStore; on MySQL: mysql/migrate.ts). */

import type {Closable} from './common.js';

/** One numbered migration of ax's database and when it was applied (null: pending). */
export interface MigrationStatus {
  version: number;
  name: string;
  appliedAt: Date | null;
}

export interface MigrateReport {
  database: string;
  applied: Array<{version: number; name: string}>;
  current: number;
  latest: number;
}

/** `ax migrate`: the numbered, forward-only migrations of ax's own database. */
export interface SchemaStore extends Closable {
  /** The database's name (for messages). */
  readonly database: string;
  /** Every known migration with its applied time. */
  schemaStatus(): Promise<MigrationStatus[]>;
  /** Applies the pending migrations in order under a named lock; concurrent runs are safe. */
  schemaMigrate(): Promise<MigrateReport>;
  /** Whether the opt-in index of task keys exists (mysql/keys-index.ts). */
  keysIndexed(): Promise<boolean>;
  /** Creates the index of task keys online unless it exists; returns whether it created it. Needs the schema migrated. */
  keysIndexCreate(): Promise<boolean>;
}
