/**
 * task_outbox refuses out-of-range rows itself, in every SQL mode: a non-strict session used to store
 * a negative delay_ms as 0 (the task ran at once). `ax migrate --outbox` (MysqlOutboxStore.migrate)
 * gives a table made before the constraints the same checks, and refuses, changing nothing, while
 * existing rows would break them.
 */
import type {ResultSetHeader} from 'mysql2/promise';
import {afterEach, describe, expect, it} from 'vitest';
import {OUTBOX_CHECKS} from '../../src/core/outbox/schema.js';
import {createBusinessDb, type BusinessDb} from '../helpers/outbox.js';

/** task_outbox as `ax migrate --outbox` created it before the CHECK constraints. */
const LEGACY_DDL = `CREATE TABLE task_outbox (
  id            BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  task_id       CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NULL,
  type          VARCHAR(64) NOT NULL,
  payload       MEDIUMTEXT NOT NULL,
  run_at        DATETIME(3) NULL,
  delay_ms      INT UNSIGNED NULL COMMENT 'counted from created_at',
  pool          VARCHAR(8) NULL,
  max_retries   SMALLINT UNSIGNED NULL,
  timeout_ms    INT UNSIGNED NULL,
  dedup_key     VARCHAR(191) NULL,
  created_at    DATETIME(3) NOT NULL DEFAULT (UTC_TIMESTAMP(3)),
  sent_at       DATETIME(3) NULL,
  claimed_by    VARCHAR(128) NULL,
  claimed_until DATETIME(3) NULL,
  attempts      INT UNSIGNED NOT NULL DEFAULT 0,
  last_error    TEXT NULL,
  failed_at     DATETIME(3) NULL,
  PRIMARY KEY (id),
  KEY idx_outbox_unsent (sent_at, failed_at, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;

const BAD: Array<[string, string, unknown]> = [
  ['negative delay_ms', 'delay_ms', -5],
  ['delay_ms beyond 366 days', 'delay_ms', 367 * 86_400_000],
  ['delay_ms beyond any integer', 'delay_ms', '1e30'],
  ['negative max_retries', 'max_retries', -1],
  ['max_retries over 100', 'max_retries', 101],
  ['max_retries beyond SMALLINT', 'max_retries', 70_000],
  ['zero timeout_ms', 'timeout_ms', 0],
  ['negative timeout_ms', 'timeout_ms', -1000],
  ['negative attempts', 'attempts', -1],
];

describe('task_outbox CHECK constraints', () => {
  let biz: BusinessDb | undefined;
  afterEach(async () => {
    await biz?.dispose();
    biz = undefined;
  });

  /** Inserts one row in a session with sql_mode='' (no strict mode); returns the MySQL errno or 0. */
  const insertNonStrict = async (b: BusinessDb, column: string, value: unknown): Promise<number> => {
    const c = await b.pool.getConnection();
    try {
      await c.query("SET SESSION sql_mode = ''");
      await c.query(`INSERT INTO task_outbox (type, payload, ${column}) VALUES ('order_notify', '{}', ?)`, [value]);
      return 0;
    } catch (e) {
      return (e as {errno?: number}).errno ?? -1;
    } finally {
      c.release();
    }
  };
  const constraints = async (b: BusinessDb): Promise<string[]> =>
    (
      await b.sql<{name: string}>(
        "SELECT CONSTRAINT_NAME AS name FROM information_schema.TABLE_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = DATABASE() AND TABLE_NAME = 'task_outbox' AND CONSTRAINT_TYPE = 'CHECK' ORDER BY name",
      )
    ).map((r) => r.name);
  const columnType = async (b: BusinessDb, column: string): Promise<string> =>
    (
      await b.sql<{t: string}>(
        "SELECT COLUMN_TYPE AS t FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'task_outbox' AND COLUMN_NAME = ?",
        [column],
      )
    )[0]?.t ?? '';
  const count = async (b: BusinessDb): Promise<number> => Number((await b.sql<{n: number}>('SELECT COUNT(*) AS n FROM task_outbox'))[0]?.n);

  it.each(BAD)('a non-strict session cannot insert a %s (MariaDB error 4025)', async (_what, column, value) => {
    biz = await createBusinessDb({migrate: true});
    expect(await insertNonStrict(biz, column, value)).toBe(4025);
    expect(await count(biz)).toBe(0);
  });

  it('in range and NULL values still go in, in strict and non-strict sessions', async () => {
    biz = await createBusinessDb({migrate: true});
    for (const [column, value] of [
      ['delay_ms', 0],
      ['delay_ms', 366 * 86_400_000],
      ['delay_ms', null],
      ['max_retries', 0],
      ['max_retries', 100],
      ['timeout_ms', 1],
      ['timeout_ms', null],
    ] as const)
      expect(await insertNonStrict(biz, column, value), `${column} = ${value}`).toBe(0);
    const [r] = await biz.pool.query<ResultSetHeader>(
      "INSERT INTO task_outbox (type, payload, delay_ms, max_retries, timeout_ms) VALUES ('report_build', '{}', 5000, 3, 60000)",
    );
    expect(r.affectedRows).toBe(1);
    expect(await count(biz)).toBe(8);
  });

  it('ax migrate --outbox adds them to a table made before them, keeps its rows, and is re-runnable', async () => {
    biz = await createBusinessDb();
    await biz.sql(LEGACY_DDL);
    await biz.sql(
      "INSERT INTO task_outbox (type, payload, delay_ms, max_retries, timeout_ms, attempts) VALUES ('order_notify', '{\"k\":1}', 4000, 2, 1234, 1), ('order_notify', '{\"k\":2}', NULL, NULL, NULL, 0)",
    );
    // Before: the legacy table turns -5 into 0 without a word.
    expect(await insertNonStrict(biz, 'delay_ms', -5)).toBe(0);
    await biz.sql('DELETE FROM task_outbox WHERE delay_ms = 0');

    const store = await biz.outbox();
    await store.outboxCreateTable();
    expect(await constraints(biz)).toEqual(OUTBOX_CHECKS.map((c) => c.name).sort());
    expect(await columnType(biz, 'delay_ms')).toBe('bigint(20)');
    const rows = await biz.sql('SELECT payload, delay_ms, max_retries, timeout_ms, attempts FROM task_outbox ORDER BY id');
    expect(rows).toEqual([
      {payload: '{"k":1}', delay_ms: 4000, max_retries: 2, timeout_ms: 1234, attempts: 1},
      {payload: '{"k":2}', delay_ms: null, max_retries: null, timeout_ms: null, attempts: 0},
    ]);
    for (const [, column, value] of BAD) expect(await insertNonStrict(biz, column, value), `${column} = ${String(value)}`).toBe(4025);
    await store.outboxCreateTable();
    expect(await constraints(biz)).toHaveLength(OUTBOX_CHECKS.length);
    expect(await count(biz)).toBe(2);
  });

  it('ax migrate --outbox refuses, naming the rows and changing nothing, while existing rows break a constraint', async () => {
    biz = await createBusinessDb();
    await biz.sql(LEGACY_DDL);
    await biz.sql("INSERT INTO task_outbox (type, payload, max_retries) VALUES ('order_notify', '{}', 3), ('order_notify', '{}', 500)");
    await biz.sql("INSERT INTO task_outbox (type, payload, timeout_ms) VALUES ('order_notify', '{}', 0)");
    const store = await biz.outbox();
    await expect(store.outboxCreateTable()).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/ids 2, 3\b.*run `ax migrate --outbox` again/),
    });
    expect(await constraints(biz)).toEqual([]);
    expect(await columnType(biz, 'max_retries')).toBe('smallint(5) unsigned');
    await biz.sql('DELETE FROM task_outbox WHERE id IN (2, 3)');
    await store.outboxCreateTable();
    expect(await constraints(biz)).toHaveLength(OUTBOX_CHECKS.length);
  });
});
