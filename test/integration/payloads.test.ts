/**
 * Big payloads stored apart (issue 13, a claim check) against the real MariaDB and RabbitMQ, with
 * AX_PAYLOAD_INLINE = 1024: a payload longer than that (in UTF-8 bytes) lives compressed in
 * task_payloads and its task row keeps payload = ''; one at the limit stays inline. Big payloads
 * round-trip byte for byte through submit (SDK and outbox relay), claim, retry, DLQ replay with and
 * without a patch, archive and restore, and `ax tasks show` / `ax dlq show`.
 */
import {randomBytes} from 'node:crypto';
import {existsSync, mkdtempSync, readFileSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {createArchiver, openClient} from '../../src/compose.js';
import {restoreArchived, showArchived} from '../../src/core/archive/admin.js';
import {DirectoryArchiveTarget} from '../../src/core/archive/files.js';
import type {AxClient} from '../../src/core/client.js';
import {enqueueInTransaction} from '../../src/core/outbox/enqueue.js';
import {createRelayService} from '../../src/core/outbox/service.js';
import {MysqlTaskStore} from '../../src/core/store/mysql/store.js';
import type {AxStore} from '../../src/core/store/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import type {JsonObject, NewTask} from '../../src/core/task/model.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import type {Worker} from '../../src/core/worker/worker.js';
import {createBusinessDb, type BusinessDb} from '../helpers/outbox.js';
import {createTestEnv, createTestWorker, eventually, mysql, type TestEnv} from '../helpers/env.js';
import {runCli} from '../helpers/spawn.js';

const INLINE = 1024;
const newId = createIdGenerator(Date.now);
let env: TestEnv;
let store: AxStore;
let client: AxClient;
let worker: Worker;
let biz: BusinessDb;
let dir: string;

/** A payload whose JSON text is exactly `bytes` UTF-8 bytes, with two-byte characters (fewer characters than bytes). */
function exact(bytes: number, extra: JsonObject = {}): JsonObject {
  const p = {...extra, s: 'é'.repeat(50)};
  const pad = bytes - Buffer.byteLength(JSON.stringify(p));
  if (pad < 0) throw new Error(`${bytes} bytes is too small`);
  return {...p, s: p.s + 'x'.repeat(pad)};
}

/** A big payload of ~`bytes`, not all one character, with non-ASCII text. */
function big(extra: JsonObject = {}, bytes = 20_000): JsonObject {
  const items = Array.from({length: Math.ceil(bytes / 60)}, (_, i) => ({
    sku: `SKU-${(i * 7919) % 100_000}`,
    qty: i % 9,
    note: `čaj ☕ ${i}`,
  }));
  return {...extra, items};
}

const task = (type: string, payload: JsonObject, maxRetries = 3): NewTask =>
  validateTaskSpec({type, payload}, {maxRetries, payloadLimitBytes: 65_536, cell: 'default'}, Date.now(), newId);

interface Stored {
  inline: string | null;
  body: string | null;
  bodyBytes: number | null;
}
/** How a task's payload is stored: the hot row's text and the side table's (read by UNCOMPRESS in SQL). */
async function stored(id: string): Promise<Stored> {
  const [r] = await env.sql<{inline: string | null; body: string | null; bodyBytes: number | null}>(
    `SELECT t.payload AS inline, CONVERT(UNCOMPRESS(p.body) USING utf8mb4) AS body, LENGTH(p.body) AS bodyBytes
       FROM tasks t LEFT JOIN task_payloads p ON p.task_id = t.id WHERE t.id = ?`,
    [id],
  );
  if (!r) throw new Error(`task ${id} is not in the hot table`);
  return {inline: r.inline, body: r.body, bodyBytes: r.bodyBytes === null ? null : Number(r.bodyBytes)};
}
const sideRows = async (ids: string[]) =>
  Number((await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM task_payloads WHERE task_id IN (?)', [ids]))[0]!.n);

/** Handler test_replay_seen appends {taskId, attempt, payload} to payload.log per run. */
const seen = (log: string): Array<{taskId: string; attempt: number; payload: JsonObject}> =>
  existsSync(log)
    ? readFileSync(log, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as {taskId: string; attempt: number; payload: JsonObject})
    : [];

/** A dead task of `payload` (inserted, claimed, dead-lettered through the store). */
async function deadTask(type: string, payload: JsonObject): Promise<NewTask> {
  const t = task(type, payload, 0);
  await store.tasksInsert({tasks: [t], actor: 'it:1'});
  const [c] = (await store.tasksClaim({ids: [t.id], worker: 'w:1', leaseMs: 30_000})).claimed;
  await store.outcomesApply({outcomes: [{kind: 'deadLetter', id: t.id, fence: c!.fence, error: 'downstream said no'}], actor: 'w:1'});
  return t;
}

beforeAll(async () => {
  biz = await createBusinessDb({migrate: true});
  env = await createTestEnv({payloadInlineBytes: INLINE, outboxMysqlUrl: biz.url, archivePauseMs: 0});
  store = await env.store();
  await env.broker();
  client = await openClient({...env.rt, operator: () => 'it-op'}, {reconnect: false});
  worker = await createTestWorker(env);
  await worker.start();
  dir = mkdtempSync(join(tmpdir(), 'ax-it-payloads-'));
});
afterAll(async () => {
  await worker?.stop({graceMs: 1000});
  await client?.close();
  await env?.dispose();
  await biz?.dispose();
  if (dir) rmSync(dir, {recursive: true, force: true});
});

describe('payloads stored apart', () => {
  it('a payload at the limit stays inline; one byte more is stored apart, compressed, and the hot row keeps ""', async () => {
    const at = task('payload_edge', exact(INLINE, {k: 'at'}));
    const over = task('payload_edge', exact(INLINE + 1, {k: 'over'}));
    const small = task('payload_edge', {k: 'small'});
    expect(Buffer.byteLength(at.payload)).toBe(INLINE);
    expect(at.payload.length).toBeLessThan(INLINE); // counted in bytes, not characters
    await store.tasksInsert({tasks: [at, over, small], actor: 'it:1'});

    expect(await stored(at.id)).toEqual({inline: at.payload, body: null, bodyBytes: null});
    expect(await stored(small.id)).toEqual({inline: small.payload, body: null, bodyBytes: null});
    const s = await stored(over.id);
    expect(s).toMatchObject({inline: '', body: over.payload});
    expect(s.bodyBytes).toBeLessThan(INLINE / 2);

    for (const t of [at, over, small]) expect((await store.tasksGet({id: t.id}))?.payload).toEqual(JSON.parse(t.payload));
    // The payload filter of `ax tasks list` sees stored-apart payloads too.
    const found = await store.tasksList({limit: 10, payload: {path: '$.k', value: 'over'}});
    expect(found.map((t) => t.id)).toEqual([over.id]);
  });

  it('claim returns the exact text of a stored-apart payload, on the first attempt and on the retry', async () => {
    const t = task('payload_retry', big({k: 'retry'}));
    const small = task('payload_retry', {k: 'small'});
    await store.tasksInsert({tasks: [t, small], actor: 'it:1'});
    const first = (await store.tasksClaim({ids: [t.id, small.id], worker: 'w:1', leaseMs: 30_000})).claimed;
    expect(new Map(first.map((c) => [c.id, c.payload]))).toEqual(
      new Map([
        [t.id, t.payload],
        [small.id, small.payload],
      ]),
    );
    const c1 = first.find((c) => c.id === t.id)!;
    await store.outcomesApply({
      outcomes: [{kind: 'fail', id: t.id, fence: c1.fence, error: 'try again', retryDelayMs: 0}],
      actor: 'w:1',
    });
    const [c2] = (await store.tasksClaim({ids: [t.id], worker: 'w:2', leaseMs: 30_000})).claimed;
    expect(c2).toMatchObject({id: t.id, attempt: 2, payload: t.payload});
    expect(await stored(t.id)).toMatchObject({inline: '', body: t.payload});
  });

  it('a claim that waited for a row lock reads the body committed meanwhile, not an older snapshot', async () => {
    // In id order: the claim locks `first`, then waits for `second`.
    const [first, second] = [task('payload_race', big({k: 'a'})), task('payload_race', big({k: 'b'}))].sort((x, y) =>
      x.id < y.id ? -1 : 1,
    );
    await store.tasksInsert({tasks: [first!, second!], actor: 'it:1'});
    const patched = JSON.stringify({...JSON.parse(second!.payload), note: 'patched meanwhile'});
    // Another transaction holds the second row and rewrites its body (as dlq replay --patch does).
    const conn = await mysql.createConnection(env.config.mysqlUrl);
    try {
      await conn.query('START TRANSACTION');
      await conn.query('SELECT id FROM tasks WHERE id = ? FOR UPDATE', [second!.id]);
      await conn.query('UPDATE task_payloads SET body = COMPRESS(?) WHERE task_id = ?', [patched, second!.id]);
      // The claim locks the first row, reads its body, then waits for the second row's lock.
      const claim = store.tasksClaim({ids: [first!.id, second!.id], worker: 'w:1', leaseMs: 30_000});
      // Blocked: the claim's locking read has been running for a while (the lock is held until COMMIT).
      const blocked = () =>
        env.sql(
          "SELECT 1 FROM information_schema.PROCESSLIST WHERE db = DATABASE() AND info LIKE 'SELECT id, type, pool,%FOR UPDATE' AND time_ms > 300",
        );
      await eventually(async () => (await blocked()).length > 0, 10_000, 'the claim waiting for the lock');
      await conn.query('COMMIT');
      const {claimed} = await claim;
      expect(new Map(claimed.map((c) => [c.id, c.payload]))).toEqual(
        new Map([
          [first!.id, first!.payload],
          [second!.id, patched],
        ]),
      );
    } finally {
      await conn.end();
    }
  });

  it('a task submitted with the SDK runs with its whole payload', async () => {
    const log = join(dir, 'sdk.log');
    const payload = big({log});
    const id = await client.submit({type: 'test_replay_seen', payload});
    await client.flush();
    expect(await stored(id)).toMatchObject({inline: '', body: JSON.stringify(payload)});
    await eventually(async () => (await store.tasksGet({id}))?.state === 'succeeded', 20_000, 'the run');
    expect(seen(log)).toMatchObject([{taskId: id, attempt: 1, payload}]);
  });

  it('a big payload written to task_outbox is relayed, stored apart, and runs whole', async () => {
    const log = join(dir, 'outbox.log');
    const payload = big({log});
    const conn = await biz.pool.getConnection();
    try {
      await conn.beginTransaction();
      await enqueueInTransaction(conn, {type: 'test_replay_seen', payload});
      await conn.commit();
    } finally {
      conn.release();
    }
    const relay = createRelayService({
      ...env.rt,
      config: env.config,
      outbox: await biz.outbox(),
      store: await env.store(),
      broker: await env.broker(),
      id: 'relay-payloads',
    });
    try {
      expect(await relay.once()).toBe(1);
    } finally {
      await relay.stop();
    }
    await eventually(async () => seen(log).length === 1, 20_000, 'the relayed run');
    const [run] = seen(log);
    expect(run!.payload).toEqual(payload);
    expect(await stored(run!.taskId)).toMatchObject({inline: '', body: JSON.stringify(payload)});
  });

  it('dlq replay without a patch runs the stored-apart payload unchanged', async () => {
    const log = join(dir, 'replay.log');
    const t = await deadTask('test_replay_seen', big({log}));
    const r = await client.dlq.replay({ids: [t.id]}, {reason: 'fixed'});
    expect(r).toMatchObject({replayed: 1});
    await eventually(async () => seen(log).length === 1, 20_000, 'the replayed run');
    expect(seen(log)[0]).toMatchObject({taskId: t.id, payload: JSON.parse(t.payload)});
    expect(await stored(t.id)).toMatchObject({inline: '', body: t.payload});
  });

  it('dlq replay --patch rewrites a stored-apart payload, and moves it inline or apart by its new size', async () => {
    const log = join(dir, 'patch.log');
    const bigOne = await deadTask('test_replay_seen', big({log, k: 'big'}));
    const shrinks = await deadTask('test_replay_seen', big({log, k: 'shrinks'}));
    const grows = await deadTask('test_replay_seen', {log, k: 'grows'});
    const filler = big({}, 5000).items!;
    await client.dlq.replay({ids: [bigOne.id]}, {reason: 'r', patch: {note: 'patched'}});
    await client.dlq.replay({ids: [shrinks.id]}, {reason: 'r', patch: {items: null}});
    await client.dlq.replay({ids: [grows.id]}, {reason: 'r', patch: {items: filler}});
    await eventually(async () => seen(log).length === 3, 20_000, 'the patched runs');
    const ran = new Map(seen(log).map((x) => [x.taskId, x.payload]));
    expect(ran.get(bigOne.id)).toEqual({...JSON.parse(bigOne.payload), note: 'patched'});
    expect(ran.get(shrinks.id)).toEqual({log, k: 'shrinks'});
    expect(ran.get(grows.id)).toEqual({log, k: 'grows', items: filler});

    const b = await stored(bigOne.id);
    expect(b.inline).toBe('');
    expect(JSON.parse(b.body!)).toEqual(ran.get(bigOne.id));
    const s = await stored(shrinks.id);
    expect(s.body).toBeNull();
    expect(JSON.parse(s.inline!)).toEqual({log, k: 'shrinks'});
    expect(await sideRows([shrinks.id])).toBe(0);
    const g = await stored(grows.id);
    expect(g.inline).toBe('');
    expect(JSON.parse(g.body!)).toEqual(ran.get(grows.id));
  });

  it('ax tasks show and ax dlq show print the whole stored-apart payload', async () => {
    const t = await deadTask('payload_show', big({k: 'show'}));
    const cli = {env: env.env, cwd: dir};
    const task = await runCli(['tasks', 'show', t.id, '--json'], cli);
    expect(task.code, task.stderr).toBe(0);
    expect(JSON.stringify(task.json.task.payload)).toBe(t.payload);
    const dead = await runCli(['dlq', 'show', t.id, '--json'], cli);
    expect(dead.code, dead.stderr).toBe(0);
    expect(JSON.stringify(dead.json.task.payload)).toBe(t.payload);
  });

  it('archive takes a stored-apart payload with its task (full text in the archive); restore stores it apart again', async () => {
    const bigOne = task('payload_arch', big({k: 'arch'}));
    const small = task('payload_arch', {k: 'small'});
    await store.tasksInsert({tasks: [bigOne, small], actor: 'it:1'});
    const claimed = (await store.tasksClaim({ids: [bigOne.id, small.id], worker: 'w:1', leaseMs: 30_000})).claimed;
    await store.outcomesApply({outcomes: claimed.map((c) => ({kind: 'complete', id: c.id, fence: c.fence})), actor: 'w:1'});
    const ids = [bigOne.id, small.id];
    await env.sql(
      'UPDATE tasks SET finished_at = finished_at - INTERVAL 40 DAY, run_at = run_at - INTERVAL 40 DAY, updated_at = updated_at - INTERVAL 40 DAY WHERE id IN (?)',
      [ids],
    );
    const target = new DirectoryArchiveTarget(join(dir, 'archive'));
    const report = await createArchiver(env.rt, store, target).run({});
    expect(report.tasks.succeeded).toBeGreaterThanOrEqual(2);
    expect(await env.sql('SELECT id FROM tasks WHERE id IN (?)', [ids])).toEqual([]);
    expect(await sideRows(ids)).toBe(0);
    expect((await showArchived(target, 'default', bigOne.id)).archived.task.payload).toBe(bigOne.payload);

    expect((await restoreArchived(target, store, 'default', {ids})).restored.sort()).toEqual([...ids].sort());
    expect(await stored(bigOne.id)).toMatchObject({inline: '', body: bigOne.payload});
    expect(await stored(small.id)).toEqual({inline: small.payload, body: null, bodyBytes: null});
    expect((await store.tasksGet({id: bigOne.id}))?.payload).toEqual(JSON.parse(bigOne.payload));
  });

  it('a batch of 500 near-limit payloads (over max_allowed_packet as one statement) is written whole, apart and inline', async () => {
    const max = (await env.sql<{max: number}>('SELECT @@max_allowed_packet AS max'))[0]!.max;
    // Random base64 barely compresses: 500 × ~60 KB is well over the server's packet limit either way.
    const payload = (i: number): JsonObject => ({i, blob: randomBytes(44_000).toString('base64')});
    const inlineStore = await MysqlTaskStore.open({
      url: env.config.mysqlUrl,
      createDatabase: false,
      queryTimeoutMs: 30_000,
      cell: 'default',
      now: Date.now,
      payloadInlineBytes: 65_536,
    });
    try {
      for (const [s, type] of [
        [store, 'payload_batch_apart'],
        [inlineStore, 'payload_batch_inline'],
      ] as const) {
        const tasks = Array.from({length: 500}, (_, i) => task(type, payload(i)));
        expect(tasks.reduce((n, t) => n + t.payload.length, 0)).toBeGreaterThan(Number(max));
        expect((await s.tasksInsert({tasks, actor: 'it:1'})).inserted).toHaveLength(500);
        const back = await store.tasksGet({id: tasks[499]!.id});
        expect(JSON.stringify(back?.payload)).toBe(tasks[499]!.payload);
      }
      expect(
        await sideRows((await env.sql<{id: string}>("SELECT id FROM tasks WHERE type = 'payload_batch_apart'")).map((r) => r.id)),
      ).toBe(500);
      expect(
        Number((await env.sql<{n: number}>("SELECT COUNT(*) AS n FROM tasks WHERE type = 'payload_batch_inline' AND payload <> ''"))[0]!.n),
      ).toBe(500);
    } finally {
      await inlineStore.close();
    }
  });
});

describe('AX_PAYLOAD_INLINE bad input', () => {
  it('a store refuses an inline limit that is not a whole number of bytes >= 0, before it connects', async () => {
    for (const bad of [-1, 1.5, Number.NaN])
      await expect(
        MysqlTaskStore.open({
          url: env.config.mysqlUrl,
          createDatabase: false,
          queryTimeoutMs: 1000,
          cell: 'default',
          now: Date.now,
          payloadInlineBytes: bad,
        }),
      ).rejects.toMatchObject({code: 'invalid_input', message: expect.stringContaining('payloadInlineBytes')});
  });

  it('ax refuses AX_PAYLOAD_INLINE that is not a size, with exit code 2 and the variable named; nothing is written', async () => {
    const before = Number((await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM tasks'))[0]!.n);
    const r = await runCli(['submit', 'payload_bad', '--payload', '{}'], {env: {...env.env, AX_PAYLOAD_INLINE: 'lots'}, cwd: dir});
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('AX_PAYLOAD_INLINE');
    expect(Number((await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM tasks'))[0]!.n)).toBe(before);
  });
});
