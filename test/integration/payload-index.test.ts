/**
 * Indexed payload fields (`ax payload-index`, src/core/store/mysql/payload-index.ts) on MariaDB: a
 * search by an indexed field answers exactly what the search without the index answers (taken
 * before the index exists, as the reference) — inline and stored-apart payloads, values longer than
 * the index keeps, trailing spaces, case, nested fields, another cell's rows, keyset pages — and the
 * tasks written or rewritten after the index is built (a real submit, big payloads, a payload
 * patch) are found by it; add and rm are audited, idempotent, refuse bad input changing nothing,
 * and a search whose index was dropped under it falls back to reading the rows.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {openAdmin} from '../../src/compose.js';
import type {ListFilter} from '../../src/core/store/types.js';
import type {AxStore} from '../../src/core/store/types.js';
import {
  MAX_PAYLOAD_INDEXES,
  VALUE_CHARS,
  payloadIndexAdd,
  payloadIndexDdl,
  payloadIndexNames,
  payloadIndexQuery,
  payloadIndexSearch,
} from '../../src/core/store/mysql/payload-index.js';
import type {MysqlTaskStore} from '../../src/core/store/mysql/store.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {createTestEnv, mysql, type TestEnv} from '../helpers/env.js';
import {idsOfAllPages} from '../helpers/pages.js';
import {ROOT, runCli} from '../helpers/spawn.js';

const N = 3_000;
const INLINE = 300;
const LONG = 'x'.repeat(VALUE_CHARS + 20);
/** Longer than the index keeps, with characters outside the BMP (two UTF-16 units each) before and at the cut. */
const EMOJI_LONG = '😀'.repeat(100) + 'b'.repeat(100);
const EMOJI_AT_CUT = 'a'.repeat(VALUE_CHARS - 1) + '😀z';

/** The payload of row i: every 10th stored apart (padded past the inline limit); long, spaced and cased values among them. */
function payloadOf(i: number): Record<string, unknown> {
  const variants = [`${LONG}${i % 2}`, 'Case', 'case', 'case ', EMOJI_LONG, EMOJI_AT_CUT];
  const s = variants[i % 17] ?? `v${i % 5}`;
  const g: unknown = i % 29 === 0 ? {nested: 1} : i % 31 === 0 ? null : i % 13;
  return {orderId: i, g, s, customer: {id: `c${i % 7}`}, ...(i % 10 === 0 ? {pad: 'p'.repeat(INLINE)} : {})};
}

describe('indexed payload fields', () => {
  let env: TestEnv;
  let store: AxStore;
  let now: number;
  let since: Date;
  const reference = new Map<string, string[]>();
  const filters = (): ListFilter[] => [
    {since, payload: {path: '$.g', value: '5'}, limit: 1000},
    {since, payload: {path: '$.g', value: '5'}, limit: 7},
    {since, until: new Date(now - 1_200_000), payload: {path: '$.g', value: '5'}, limit: 1000},
    {since, payload: {path: '$.s', value: `${LONG}1`}, limit: 1000},
    {since, payload: {path: '$.s', value: LONG}, limit: 1000},
    {since, payload: {path: '$.s', value: 'case'}, limit: 1000},
    {since, payload: {path: '$.s', value: EMOJI_LONG}, limit: 1000},
    {since, payload: {path: '$.s', value: EMOJI_AT_CUT}, limit: 1000},
    {since, payload: {path: '$.s', value: 'Case'}, limit: 1000},
    {since, payload: {path: '$.customer.id', value: 'c3'}, limit: 1000},
    {since, state: 'cancelled', payload: {path: '$.customer.id', value: 'c3'}, limit: 1000},
    {since, type: 'u', payload: {path: '$.g', value: '2'}, limit: 1000},
    {since, payload: {path: '$.g', value: 'nope'}, limit: 50},
  ];
  const ids = (rows: ReadonlyArray<object>): string[] => rows.map((r) => (r as {id: string}).id);
  const db = () => (store as unknown as MysqlTaskStore).db;

  beforeAll(async () => {
    env = await createTestEnv({payloadInlineBytes: INLINE});
    store = await env.store();
    now = (await env.sql<{now: Date}>('SELECT NOW(3) AS now'))[0]!.now.getTime();
    since = new Date(now - 3_600_000);
    const rows: string[] = [];
    const values: unknown[] = [];
    const apart: Array<[string, string]> = [];
    for (let i = 0; i < N; i++) {
      const created = now - i * 1_000;
      const id = createIdGenerator(() => created)();
      const text = JSON.stringify(payloadOf(i));
      const big = i % 10 === 0;
      if (big) apart.push([id, text]);
      for (const cell of i % 9 === 0 ? ['default', 'other'] : ['default']) {
        const rowId = cell === 'default' ? id : createIdGenerator(() => created)();
        rows.push('(?, ?, ?, ?, 1, 5, ?, ?, ?, ?, ?)');
        values.push(
          rowId,
          cell,
          i % 4 === 0 ? 'u' : 't',
          i % 3 === 0 ? 'cancelled' : 'succeeded',
          'x',
          new Date(created),
          new Date(created),
          new Date(created),
          big && cell === 'default' ? '' : text,
        );
      }
    }
    for (let k = 0; k < rows.length; k += 500)
      await env.sql(
        `INSERT INTO tasks (id, cell, type, state, attempt, max_retries, content_hash, run_at, created_at, updated_at, payload) VALUES ${rows.slice(k, k + 500).join(', ')}`,
        values.slice(k * 9, (k + 500) * 9),
      );
    for (const [id, text] of apart) await env.sql('INSERT INTO task_payloads (task_id, body) VALUES (?, COMPRESS(?))', [id, text]);
    for (const f of filters()) reference.set(JSON.stringify(f), ids(await store.tasksList(f)));
  });
  afterAll(async () => env?.dispose());

  it('answers what the search without it answered, from the index (inline and stored apart, long, cased, nested)', async () => {
    // The reference is not empty where it matters: long values, apart payloads, the case variants.
    expect(reference.get(JSON.stringify(filters()[3]))!.length).toBeGreaterThan(10);
    expect(reference.get(JSON.stringify(filters()[4]))).toEqual([]);
    expect(reference.get(JSON.stringify(filters()[5]))!.length).toBeGreaterThan(100); // 'case' and 'case ' (PAD SPACE), not 'Case'
    expect(reference.get(JSON.stringify(filters()[6]))!.length).toBeGreaterThan(100);
    expect(reference.get(JSON.stringify(filters()[7]))!.length).toBeGreaterThan(100);
    await using admin = openAdmin(env.rt);
    for (const field of ['g', 's', 'customer.id']) expect((await admin.payloadIndexes.add(field)).created).toBe(true);
    expect((await admin.payloadIndexes.list()).map((x) => [x.field, x.state])).toEqual([
      ['g', 'ready'],
      ['s', 'ready'],
      ['customer.id', 'ready'],
    ]);
    for (const f of filters()) {
      const indexed = await payloadIndexSearch(db(), 'default', f, 'id, created_at');
      expect(indexed, JSON.stringify(f)).toBeDefined();
      expect(ids(indexed!), JSON.stringify(f)).toEqual(reference.get(JSON.stringify(f)));
      expect(ids(await store.tasksList(f))).toEqual(reference.get(JSON.stringify(f)));
    }
    // tasksList (the CLI's, the console's and the bulk actions' reading) sends the index's statements, not the id-range reading.
    const pool = db().pool as unknown as {query: (...a: unknown[]) => unknown};
    const query = pool.query;
    const sent: string[] = [];
    pool.query = function (this: unknown, ...a: unknown[]) {
      sent.push(typeof a[0] === 'string' ? a[0] : (a[0] as {sql: string}).sql);
      return query.apply(this, a);
    };
    try {
      expect(ids(await store.tasksList(filters()[0]!))).toEqual(reference.get(JSON.stringify(filters()[0])));
    } finally {
      pool.query = query;
    }
    // One statement (one snapshot) reads both indexes.
    expect(
      sent.filter((q) => q.includes('FORCE INDEX (idx_tasks_pf_1)') && q.includes('FORCE INDEX (idx_task_payloads_pf_1)')),
    ).toHaveLength(1);
    expect(sent.filter((q) => q.includes('FORCE INDEX (PRIMARY)') || q.includes('idx_tasks_created'))).toEqual([]);
    // The plan reads the field's indexes, not the table.
    const q = payloadIndexQuery('default', filters()[0]!, 'id, created_at', 1);
    const plan = await env.sql<{table: string; key: string | null}>(`EXPLAIN ${q.sql}`, q.params);
    const keys = Object.fromEntries(plan.filter((p) => !p.table.startsWith('<union')).map((p) => [p.table, p.key]));
    // p: the stored-apart body of the exact JSON_VALUE check, by primary key.
    expect(keys).toEqual({tasks: 'PRIMARY', tp: 'idx_task_payloads_pf_1', p: 'PRIMARY'});
    expect(plan.filter((p) => p.table === 'tasks').map((p) => p.key)).toEqual(['idx_tasks_pf_1', 'PRIMARY']);
    const audit = await env.sql<{command: string; filter: string; operator: string}>(
      "SELECT command, filter, operator FROM admin_audit WHERE command LIKE 'payload-index%' ORDER BY id",
    );
    expect(audit.map((a) => [a.command, JSON.parse(a.filter).field])).toEqual([
      ['payload-index add', 'g'],
      ['payload-index add', 's'],
      ['payload-index add', 'customer.id'],
    ]);
  });

  it('pages by keyset through the index as without it', async () => {
    const f: ListFilter = {since, payload: {path: '$.customer.id', value: 'c2'}, limit: 23};
    const got = await idsOfAllPages(store, f);
    expect(got.length).toBeGreaterThan(300);
    expect(got).toEqual(reference.get(JSON.stringify({...f, limit: 1000})) ?? ids(await store.tasksList({...f, limit: 1000})));
  });

  it('finds tasks submitted after it was built, big payloads included, and a rewritten payload by its new value', async () => {
    await using admin = openAdmin(env.rt);
    const small = await admin.producer.submit([{type: 'order_notify', payload: {g: 'fresh', customer: {id: 'new'}}}]);
    const big = await admin.producer.submit([{type: 'order_notify', payload: {g: 'fresh', pad: 'q'.repeat(INLINE * 2)}}]);
    expect((await env.sql<{p: string}>('SELECT payload AS p FROM tasks WHERE id = ?', [big.ids[0]]))[0]!.p).toBe(''); // stored apart
    const f: ListFilter = {since, payload: {path: '$.g', value: 'fresh'}, limit: 50};
    expect((await payloadIndexSearch(db(), 'default', f, 'id, created_at'))!.map((r) => r.id).sort()).toEqual(
      [small.ids[0], big.ids[0]].sort(),
    );
    // A payload rewritten (as a replay's --patch does, inline and apart): found by its new value only.
    await env.sql(`UPDATE tasks SET payload = JSON_SET(payload, '$.g', 'patched') WHERE id = ?`, [small.ids[0]]);
    await env.sql(
      `UPDATE task_payloads SET body = COMPRESS(JSON_SET(CONVERT(UNCOMPRESS(body) USING utf8mb4), '$.g', 'patched')) WHERE task_id = ?`,
      [big.ids[0]],
    );
    expect(await store.tasksList(f)).toEqual([]);
    expect(ids(await store.tasksList({...f, payload: {path: '$.g', value: 'patched'}})).sort()).toEqual([small.ids[0], big.ids[0]].sort());
  });

  it('refuses a bad field and a field past the maximum, changing nothing; add again does nothing', async () => {
    await using admin = openAdmin(env.rt);
    const before = await admin.payloadIndexes.list();
    for (const bad of ['', 'a b', '$.x', "x')) --", 'a..b', '1x'])
      await expect(admin.payloadIndexes.add(bad), bad).rejects.toMatchObject({code: 'invalid_input'});
    expect(await admin.payloadIndexes.add('g')).toMatchObject({created: false, built: false, field: {field: 'g', state: 'ready'}});
    for (let i = before.length; i < MAX_PAYLOAD_INDEXES; i++) await admin.payloadIndexes.add(`f${i}`);
    await expect(admin.payloadIndexes.add('one_more')).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringMatching(/ax payload-index rm/),
    });
    expect((await admin.payloadIndexes.list()).map((x) => x.field)).not.toContain('one_more');
    for (let i = before.length; i < MAX_PAYLOAD_INDEXES; i++) expect(await admin.payloadIndexes.remove(`f${i}`)).toBe(true);
    expect(await admin.payloadIndexes.list()).toEqual(before);
  });

  it('add finishes a field left building half-way (a crash between its DDL statements)', async () => {
    await env.sql("INSERT INTO payload_indexes (field, state, created_at) VALUES ('half', 'building', NOW(3))");
    const hid = (await env.sql<{n: number}>("SELECT id AS n FROM payload_indexes WHERE field = 'half'"))[0]!.n;
    await env.sql(payloadIndexDdl(hid, 'half')[0]!.sql); // the tasks column only
    await using admin = openAdmin(env.rt);
    expect((await admin.payloadIndexes.list()).find((x) => x.field === 'half')?.state).toBe('building');
    expect(await admin.payloadIndexes.add('half')).toMatchObject({created: false, built: true, field: {field: 'half', state: 'ready'}});
    const names = payloadIndexNames(hid);
    const have = await env.sql<{k: string}>(
      `SELECT DISTINCT CONCAT(TABLE_NAME, '.', INDEX_NAME) AS k FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND INDEX_NAME IN (?, ?)`,
      [names.tasksIndex, names.payloadsIndex],
    );
    expect(have.map((x) => x.k).sort()).toEqual([`task_payloads.${names.payloadsIndex}`, `tasks.${names.tasksIndex}`]);
    expect(await admin.payloadIndexes.remove('half')).toBe(true);
  });

  it('stops with timeout when a transaction holds the table, leaving the field building; add again finishes it', async () => {
    const holder = await mysql.createConnection({uri: env.config.mysqlUrl});
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM tasks LIMIT 1'); // its metadata lock lasts until the transaction ends
      const audit = {operator: 'ops-test', command: 'payload-index add', filter: {field: 'held'}, reason: null};
      await expect(payloadIndexAdd(db(), 'default', 'held', audit, 1)).rejects.toMatchObject({
        code: 'timeout',
        message: expect.stringMatching(/a transaction held the table for more than 1 s/),
      });
      await holder.query('COMMIT');
      await using admin = openAdmin(env.rt);
      expect((await admin.payloadIndexes.list()).find((x) => x.field === 'held')?.state).toBe('building');
      expect(await admin.payloadIndexes.add('held')).toMatchObject({created: false, field: {state: 'ready'}});
      expect(await admin.payloadIndexes.remove('held')).toBe(true);
    } finally {
      await holder.end();
    }
  });

  it('a search whose index is gone reads the rows instead; rm drops columns and indexes, and searches answer as before', async () => {
    // A field marked ready whose index is missing: as when `rm` drops it while a search runs.
    await env.sql("INSERT INTO payload_indexes (id, field, state, created_at) VALUES (60000, 'orderId', 'ready', NOW(3))");
    const f: ListFilter = {since, payload: {path: '$.orderId', value: '42'}, limit: 50};
    expect(await payloadIndexSearch(db(), 'default', f, 'id, created_at')).toBeUndefined();
    expect((await store.tasksList(f)).length).toBe(1);
    await env.sql('DELETE FROM payload_indexes WHERE id = 60000');

    const ax = (args: string[]) => runCli(args, {env: {...env.env, AX_OPERATOR: 'ops-test'}, cwd: ROOT});
    expect(await ax(['payload-index', 'rm', 'g', '--json'])).toMatchObject({code: 0, json: {field: 'g', removed: true}});
    expect(await ax(['payload-index', 'rm', 'g'])).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/g has no index: nothing changed/),
    });
    expect(await ax(['payload-index', 'add', 'a b'])).toMatchObject({code: 2, stderr: expect.stringMatching(/not a field name/)});
    const listed = await ax(['payload-index', 'list', '--json']);
    expect(listed).toMatchObject({code: 0, json: {count: 2}});
    expect((listed.json as {fields: Array<{field: string}>}).fields.map((x) => x.field)).toEqual(['s', 'customer.id']);
    const cols = await env.sql<{c: string}>(
      "SELECT CONCAT(TABLE_NAME, '.', COLUMN_NAME) AS c FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND COLUMN_NAME LIKE 'pf\\_%'",
    );
    expect(cols.map((c) => c.c).sort()).toEqual(['task_payloads.pf_2', 'task_payloads.pf_3', 'tasks.pf_2', 'tasks.pf_3']);
    for (const f of filters()) expect(ids(await store.tasksList(f)), JSON.stringify(f)).toEqual(reference.get(JSON.stringify(f)));
    const added = await ax(['payload-index', 'add', 'g']);
    expect(added).toMatchObject({code: 0, stdout: expect.stringMatching(/indexed g in \d+ ms/)});
    const audit = await env.sql<{command: string; operator: string}>(
      "SELECT command, operator FROM admin_audit WHERE command LIKE 'payload-index%' ORDER BY id DESC LIMIT 2",
    );
    expect(audit).toEqual([
      {command: 'payload-index add', operator: 'ops-test'},
      {command: 'payload-index remove', operator: 'ops-test'},
    ]);
  });
});
