import {randomBytes} from 'node:crypto';
import {afterAll, describe, expect, it} from 'vitest';
import {openDb, type Db} from '../../src/core/store/mysql/db.js';
import {schemaMigrate, schemaStatus, assertMigrated} from '../../src/core/store/mysql/migrate.js';
import {LATEST_VERSION, MIGRATIONS} from '../../src/core/store/mysql/migrations.js';
import {MYSQL_ROOT} from '../helpers/env.js';

describe('migrations', () => {
  const name = `axt_mig_${randomBytes(4).toString('hex')}`;
  const dbs: Db[] = [];
  const open = async () => {
    const db = await openDb({url: `${MYSQL_ROOT}/${name}`, createDatabase: true, queryTimeoutMs: 30_000, connectionLimit: 2});
    dbs.push(db);
    return db;
  };
  afterAll(async () => {
    await dbs[0]?.pool.query(`DROP DATABASE IF EXISTS \`${name}\``);
    for (const db of dbs) await db.pool.end();
  });

  it('refuses to run on an unmigrated database, with a hint', async () => {
    const db = await open();
    await expect(assertMigrated(db)).rejects.toMatchObject({code: 'unavailable', message: expect.stringMatching(/run `ax migrate`/)});
  });

  it('applies every migration once even when two runs race', async () => {
    const [a, b] = await Promise.all([open(), open()]);
    const [ra, rb] = await Promise.all([schemaMigrate(a), schemaMigrate(b)]);
    const applied = [...ra.applied, ...rb.applied].map((m) => m.version).sort();
    expect(applied).toEqual(MIGRATIONS.map((m) => m.version).sort());
    expect(ra.current).toBe(LATEST_VERSION);
    expect(rb.current).toBe(LATEST_VERSION);
    const status = await schemaStatus(a);
    expect(status.every((s) => s.appliedAt instanceof Date)).toBe(true);
    await expect(assertMigrated(a)).resolves.toBeUndefined();
  });

  it('re-runs a migration that crashed half-way (its statements are re-runnable)', async () => {
    const db = dbs[0]!;
    // Pretend the process died after the DDL of the latest migration but before recording it.
    await db.pool.query('DELETE FROM schema_migrations WHERE version = ?', [LATEST_VERSION]);
    const r = await schemaMigrate(db);
    expect(r.applied.map((m) => m.version)).toEqual([LATEST_VERSION]);
    expect((await schemaMigrate(db)).applied).toEqual([]);
  });

  it('refuses a database newer than this build', async () => {
    const db = dbs[0]!;
    await db.pool.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, ?, NOW(3))', ['from the future']);
    await expect(schemaMigrate(db)).rejects.toMatchObject({code: 'internal', message: expect.stringMatching(/newer than this ax/)});
    await db.pool.query('DELETE FROM schema_migrations WHERE version = 9999');
  });
});
