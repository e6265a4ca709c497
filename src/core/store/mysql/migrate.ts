import {AxError} from '../../errors.js';
import {type Db, type Row, dbUnavailable, driverCode, exec, select} from './db.js';
import {MIGRATIONS, LATEST_VERSION, type Migration} from './migrations.js';
import type {MigrateReport, MigrationStatus, SchemaStore} from '../types.js';

export type {MigrateReport, MigrationStatus} from '../types.js';
import {keysIndexCreate, keysIndexed} from './keys-index.js';

const LOCK_NAME = 'ax_migrate';
const LOCK_WAIT_S = 60;

async function ensureLedger(db: Db): Promise<void> {
  await exec(
    db,
    db.pool,
    `CREATE TABLE IF NOT EXISTS schema_migrations (
       version INT UNSIGNED NOT NULL PRIMARY KEY,
       name VARCHAR(200) NOT NULL,
       applied_at DATETIME(3) NOT NULL
     ) ENGINE=InnoDB`,
  );
}

async function appliedVersions(db: Db): Promise<Map<number, Date>> {
  const rows = await select(db, db.pool, 'SELECT version, applied_at FROM schema_migrations');
  return new Map(rows.map((r) => [Number(r.version), r.applied_at as Date]));
}

/** Every known migration with its applied time (null when pending). */
export async function schemaStatus(db: Db): Promise<MigrationStatus[]> {
  await ensureLedger(db);
  const done = await appliedVersions(db);
  return MIGRATIONS.map((m) => ({version: m.version, name: m.name, appliedAt: done.get(m.version) ?? null}));
}

/**
 * Applies pending migrations in order under the named lock `ax_migrate`, so concurrent runs are
 * safe: the second waits, then finds nothing to do. Throws AxError('timeout') when the lock is not
 * granted within 60 s, and AxError('internal') when the database is newer than this build.
 */
export async function schemaMigrate(db: Db, migrations: Migration[] = MIGRATIONS): Promise<MigrateReport> {
  const conn = await db.pool.getConnection();
  try {
    const [lockRows] = await conn.query<Row[]>('SELECT GET_LOCK(?, ?) AS ok', [LOCK_NAME, LOCK_WAIT_S]);
    if (Number(lockRows[0]?.ok) !== 1) throw new AxError('timeout', `another migration holds the lock ${LOCK_NAME}`);
    try {
      await ensureLedger(db);
      const done = await appliedVersions(db);
      const newest = Math.max(0, ...done.keys());
      const known = Math.max(0, ...migrations.map((m) => m.version));
      if (newest > known) {
        throw new AxError('internal', `database ${db.database} is at schema version ${newest}, newer than this ax (${known}): upgrade ax`);
      }
      const applied: MigrateReport['applied'] = [];
      for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
        if (done.has(m.version)) continue;
        for (const s of m.statements) {
          if (typeof s !== 'string' && (await select(db, conn, s.unless)).length > 0) continue;
          await exec(db, conn, typeof s === 'string' ? s : s.sql);
        }
        await exec(db, conn, 'INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, UTC_TIMESTAMP(3))', [
          m.version,
          m.name,
        ]);
        applied.push({version: m.version, name: m.name});
      }
      return {database: db.database, applied, current: Math.max(newest, ...applied.map((a) => a.version)), latest: known};
    } finally {
      await conn.query('SELECT RELEASE_LOCK(?)', [LOCK_NAME]).catch(() => undefined);
    }
  } finally {
    conn.release();
  }
}

/** Throws AxError('unavailable') with a hint when the schema is older than this build needs. */
export async function assertMigrated(db: Db): Promise<void> {
  let version = 0;
  try {
    const rows = await select(db, db.pool, 'SELECT MAX(version) AS v FROM schema_migrations');
    version = Number(rows[0]?.v ?? 0);
  } catch (e) {
    if (driverCode(e) !== 'ER_NO_SUCH_TABLE') throw e;
  }
  if (version < LATEST_VERSION) {
    throw dbUnavailable(
      'not_migrated',
      `database ${db.database} is at schema version ${version}, ax needs ${LATEST_VERSION}: run \`ax migrate\``,
    );
  }
}

/** The SchemaStore over an open database handle; closing it ends the handle's pool. */
export function schemaStore(db: Db): SchemaStore {
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => (closing ??= db.pool.end());
  return {
    database: db.database,
    schemaStatus: () => schemaStatus(db),
    schemaMigrate: () => schemaMigrate(db),
    keysIndexed: () => keysIndexed(db),
    async keysIndexCreate() {
      await assertMigrated(db);
      return keysIndexCreate(db);
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
