/**
 * Indexed payload fields (`ax payload-index`): a payload field operators search by, made an index so
 * that `ax tasks list --payload field=value` and the console's search answer from an index range
 * instead of reading every task of the window (tasks-search.ts: about 1.1 s per million tasks here,
 * bound by the CPU that reads the rows and their JSON; docs/benchmarks.md).
 *
 * A field is a virtual column of `tasks`, `pf_<id>` = LEFT(JSON_VALUE(payload, '$.<field>'),
 * VALUE_CHARS), with the index (cell, pf_<id>, created_at) (then the primary key id: the list's
 * order); and the same of `task_payloads` over its body (a payload stored apart leaves `tasks.payload`
 * empty, its column NULL). InnoDB keeps both in step with every write: insert, replay's patch, the
 * batch callback's `$.batch`, delete. Nothing in ax's code writes them. `payload_indexes` (migration
 * 24) names the fields: `building` while the columns and indexes are added, `ready` once both
 * indexes exist; only a ready field is searched by its index.
 *
 * Exact: the index finds every task whose field's text starts with the value's first VALUE_CHARS
 * characters (utf8mb4_bin, as the filter compares), and the search keeps the filter's own
 * `JSON_VALUE(…) = ?` on each of them (listWhere), so a longer value and the rows of a stored-apart
 * payload answer as the scan does. The columns cover the whole database, every cell stored in it.
 *
 * Cost: every task pays one more index entry at insert, whether it has the field or not (the
 * virtual column is NULL then). `ax payload-index add` is for the fields operators search by.
 * Failure modes: the ALTERs are online (INPLACE, LOCK=NONE: submits and claims go on) but need the
 * metadata lock of their table for a moment, like any DDL: one held by a long transaction fails the
 * command after DDL_LOCK_WAIT_S (timeout). A failure or crash half-way leaves the field `building`
 * (not searched by index), and `add` again finishes it.
 */
import {AxError} from '../../errors.js';
import type {AuditContext, ListFilter, PayloadIndexInfo} from '../types.js';
import {auditInsert} from './audit.js';
import {type Db, type Row, exec, mapDbError, select, tx} from './db.js';
import {listWhere} from './list-filter.js';

/** Characters of a field's value in its index entry (utf8mb4: 760 bytes); a longer value is checked on its row. */
export const VALUE_CHARS = 190;
/** Fields at most: each is an index every insert maintains. */
export const MAX_PAYLOAD_INDEXES = 8;

/** The column and index names of the field with id `id`. */
export function payloadIndexNames(id: number): {column: string; tasksIndex: string; payloadsIndex: string} {
  return {column: `pf_${id}`, tasksIndex: `idx_tasks_pf_${id}`, payloadsIndex: `idx_task_payloads_pf_${id}`};
}

/**
 * The DDL of field `field` (checked by the caller: letters, digits, _ and dots, so safe to write into
 * the path literal) with id `id`, in order. Columns alone first: MariaDB builds an index online only
 * when it is the ALTER's one action.
 */
export function payloadIndexDdl(id: number, field: string): Array<{sql: string; done: string}> {
  const n = payloadIndexNames(id);
  const col = (text: string) =>
    `${n.column} VARCHAR(${VALUE_CHARS}) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin AS (LEFT(JSON_VALUE(${text}, '$.${field}'), ${VALUE_CHARS})) VIRTUAL`;
  const online = 'ALGORITHM=INPLACE, LOCK=NONE';
  return [
    {sql: `ALTER TABLE tasks ADD COLUMN ${col('payload')}`, done: 'ER_DUP_FIELDNAME'},
    {sql: `ALTER TABLE task_payloads ADD COLUMN ${col('CONVERT(UNCOMPRESS(body) USING utf8mb4)')}`, done: 'ER_DUP_FIELDNAME'},
    {sql: `ALTER TABLE tasks ADD INDEX ${n.tasksIndex} (cell, ${n.column}, created_at), ${online}`, done: 'ER_DUP_KEYNAME'},
    {sql: `ALTER TABLE task_payloads ADD INDEX ${n.payloadsIndex} (${n.column}), ${online}`, done: 'ER_DUP_KEYNAME'},
  ];
}

/** The DDL that undoes payloadIndexDdl(id, …), in order (indexes, then their columns); each instant. */
export function payloadIndexDropDdl(id: number): Array<{sql: string; done: string}> {
  const n = payloadIndexNames(id);
  const done = 'ER_CANT_DROP_FIELD_OR_KEY';
  return [
    {sql: `ALTER TABLE tasks DROP INDEX ${n.tasksIndex}`, done},
    {sql: `ALTER TABLE task_payloads DROP INDEX ${n.payloadsIndex}`, done},
    {sql: `ALTER TABLE tasks DROP COLUMN ${n.column}`, done},
    {sql: `ALTER TABLE task_payloads DROP COLUMN ${n.column}`, done},
  ];
}

/** How long one DDL statement may run: the index build reads the whole table (about 6 s per million tasks here). */
const DDL_TIMEOUT_MS = 6 * 3_600_000;
/**
 * How long a DDL statement waits for the metadata lock of its table (held by any open transaction
 * that touched it) instead of the server's default of a year: while it waits, every new statement on
 * the table queues behind it, so a long transaction would stall submits and claims.
 */
const DDL_LOCK_WAIT_S = 10;

/**
 * Runs `steps` in order on a connection of their own (DDL_TIMEOUT_MS, DDL_LOCK_WAIT_S), taking a
 * step's MySQL error `done` (the column or index is there already: an earlier or concurrent run) as
 * success. Throws AxError('timeout') when a metadata lock is not granted in time; the steps before it
 * stand (the field stays `building`).
 */
async function runDdl(db: Db, steps: ReadonlyArray<{sql: string; done: string}>, lockWaitS = DDL_LOCK_WAIT_S): Promise<void> {
  const c = await db.pool.getConnection();
  try {
    await c.query(`SET SESSION lock_wait_timeout = ${Math.max(1, Math.floor(lockWaitS))}`);
    for (const step of steps) {
      try {
        await c.query({sql: step.sql, timeout: DDL_TIMEOUT_MS});
      } catch (e) {
        const code = (e as {code?: string}).code;
        if (code === step.done) continue;
        if (code === 'ER_LOCK_WAIT_TIMEOUT')
          throw new AxError(
            'timeout',
            `a transaction held the table for more than ${lockWaitS} s, so \`${step.sql.slice(0, 60)}…\` could not start or finish (other statements on the table waited as long meanwhile). Run the command again once it has ended (open transactions: information_schema.INNODB_TRX)`,
            {cause: e},
          );
        throw mapDbError(e, db.url);
      }
    }
  } finally {
    // The session setting goes with the connection: it is not given back to the pool.
    c.destroy();
  }
}

/** Every declared field, oldest first. */
export async function payloadIndexes(db: Db): Promise<PayloadIndexInfo[]> {
  const rows = await select(db, db.pool, 'SELECT id, field, state, created_at, created_by FROM payload_indexes ORDER BY id');
  return rows.map((r) => ({
    id: Number(r.id),
    field: r.field as string,
    state: r.state as PayloadIndexInfo['state'],
    createdAt: r.created_at as Date,
    createdBy: (r.created_by as string | null) ?? null,
  }));
}

/** The id of the ready index of JSON path `path` (`$.orderId`), else undefined. Index: uq_payload_indexes_field. */
export async function payloadIndexOf(db: Db, path: string): Promise<number | undefined> {
  if (!path.startsWith('$.')) return undefined;
  const rows = await select(db, db.pool, "SELECT id FROM payload_indexes WHERE field = ? AND state = 'ready'", [path.slice(2)]);
  return rows.length > 0 ? Number(rows[0]!.id) : undefined;
}

/**
 * Declares `field` and builds its columns and indexes (see the module comment), then marks it
 * ready; audited (in `cell`'s trail) once it is. Returns whether this call declared it (false: it was
 * declared before) and whether it ran the DDL (false: it was ready; true with created false: a
 * `building` one was finished). Throws conflict past MAX_PAYLOAD_INDEXES, and the
 * database's error when a DDL fails, timeout when a table's metadata lock is not granted within
 * `lockWaitS` (the field stays `building`: run it again).
 */
export async function payloadIndexAdd(
  db: Db,
  cell: string,
  field: string,
  audit: AuditContext,
  lockWaitS = DDL_LOCK_WAIT_S,
): Promise<{field: PayloadIndexInfo; created: boolean; built: boolean}> {
  const all = await payloadIndexes(db);
  const known = all.find((x) => x.field === field);
  if (known?.state === 'ready') return {field: known, created: false, built: false};
  let id = known?.id;
  if (id === undefined) {
    if (all.length >= MAX_PAYLOAD_INDEXES)
      throw new AxError(
        'conflict',
        `${all.length} payload fields are indexed already, the most ax allows: remove one first (ax payload-index rm)`,
      );
    const r = await exec(
      db,
      db.pool,
      "INSERT INTO payload_indexes (field, state, created_at, created_by) VALUES (?, 'building', NOW(3), ?) ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)",
      [field, audit.operator],
    );
    id = Number(r.insertId);
  }
  await runDdl(db, payloadIndexDdl(id, field), lockWaitS);
  await tx(db, async (c) => {
    await exec(db, c, "UPDATE payload_indexes SET state = 'ready' WHERE id = ?", [id]);
    await auditInsert(db, c, cell, audit, []);
  });
  const info = (await payloadIndexes(db)).find((x) => x.id === id);
  if (!info) throw new Error(`payload_indexes lost the row of ${field} while it was built (removed meanwhile?)`);
  return {field: info, created: known === undefined, built: true};
}

/**
 * Stops searching `field` by index, drops its indexes and columns, and forgets it; audited. Returns
 * false, changing nothing, when it is not declared. The drops are instant (metadata only).
 */
export async function payloadIndexRemove(db: Db, cell: string, field: string, audit: AuditContext): Promise<boolean> {
  const known = (await payloadIndexes(db)).find((x) => x.field === field);
  if (!known) return false;
  await exec(db, db.pool, "UPDATE payload_indexes SET state = 'building' WHERE id = ?", [known.id]);
  await runDdl(db, payloadIndexDropDdl(known.id));
  await tx(db, async (c) => {
    await exec(db, c, 'DELETE FROM payload_indexes WHERE id = ?', [known.id]);
    await auditInsert(db, c, cell, audit, []);
  });
  return true;
}

/**
 * The statement of a payload search of `f` (f.payload set) by the ready index `id` (payload-index.test.ts
 * checks its plan): the tasks whose inline payload's column matches, by idx_tasks_pf_<id> read
 * backwards from the newest, and those whose payload is stored apart, by idx_task_payloads_pf_<id>,
 * each sorted and limited as tasksListQuery, then merged. One statement, so one snapshot: a replay's
 * patch that moves a payload between inline and apart meanwhile cannot make a task missed or listed
 * twice. Each part keeps every condition of the filter (the exact JSON_VALUE comparison among them);
 * the value is cut to VALUE_CHARS characters in SQL, as the column is. Params bound.
 */
export function payloadIndexQuery(cell: string, f: ListFilter, columns: string, id: number): {sql: string; params: unknown[]} {
  const where = listWhere(cell, f);
  const n = payloadIndexNames(id);
  const value = (f.payload as {value: string}).value;
  const order = 'ORDER BY created_at DESC, id DESC LIMIT ?';
  const part = [value, ...where.params, f.limit];
  return {
    sql: `(SELECT ${columns} FROM tasks FORCE INDEX (${n.tasksIndex})
        WHERE tasks.${n.column} = LEFT(?, ${VALUE_CHARS}) AND ${where.sql} ${order})
      UNION ALL
      (SELECT ${columns} FROM task_payloads tp FORCE INDEX (${n.payloadsIndex}) STRAIGHT_JOIN tasks ON tasks.id = tp.task_id
        WHERE tp.${n.column} = LEFT(?, ${VALUE_CHARS}) AND tasks.payload = '' AND ${where.sql} ${order})
      ${order}`,
    params: [...part, ...part, f.limit],
  };
}

/** MySQL's error for an index named in FORCE INDEX that is not there (dropped by `remove` meanwhile). */
const NO_SUCH_INDEX = 'ER_KEY_DOES_NOT_EXITS';

/**
 * The rows of tasksList for a payload filter on an indexed field (payloadIndexQuery), or undefined
 * when the field has no ready index — or lost it while this ran — so the caller searches without
 * it. Rejects with the database's error otherwise.
 */
export async function payloadIndexSearch(db: Db, cell: string, f: ListFilter, columns: string): Promise<Row[] | undefined> {
  if (!f.payload) return undefined;
  const id = await payloadIndexOf(db, f.payload.path);
  if (id === undefined) return undefined;
  const q = payloadIndexQuery(cell, f, columns, id);
  try {
    return await select(db, db.pool, q.sql, q.params);
  } catch (e) {
    if ((e as {code?: string}).code === NO_SUCH_INDEX) return undefined;
    throw e;
  }
}
