/**
 * Results and progress (issue 26) against the real MariaDB and RabbitMQ: a handler's result is
 * stored with its succeeded attempt (the complete's own UPDATE), shown by the admin service, the
 * CLI's JSON and the API, read back by resultsOf, archived and restored with its task; a result
 * over 64 KiB or not JSON ends the attempt dead with the reason; progress is written at most once a
 * second per worker flush, fenced, through the IO pool and a CPU pool thread, and stays on the row
 * after a kill -9 of the worker process.
 */
import {mkdtempSync, readFileSync, existsSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {taskJson} from '../../src/cli/render.js';
import {createClient, type AxClient} from '../../src/core/client.js';
import type {ArchivedTask} from '../../src/core/store/seams/archive.js';
import type {AxStore, ProgressRow} from '../../src/core/store/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import type {JsonObject} from '../../src/core/task/model.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import {createWorkerService} from '../../src/core/worker/service.js';
import type {Worker} from '../../src/core/worker/worker.js';
import {createTestEnv, eventually, TEST_HANDLERS, type TestEnv} from '../helpers/env.js';
import {spawnAx, type Spawned} from '../helpers/spawn.js';
import {call, startTestConsole, type TestConsole} from '../helpers/web.js';

const newId = createIdGenerator(Date.now);
const defaults = {maxRetries: 3, payloadLimitBytes: 65_536, cell: 'default'};
const lines = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

describe('results and progress', () => {
  let env: TestEnv;
  let store: AxStore;
  let client: AxClient;
  let c: TestConsole;
  let dir: string;
  /** Every progressWrite the in-process workers made, with its time. */
  const writes: Array<{at: number; rows: ProgressRow[]}> = [];
  const workers: Worker[] = [];
  const procs: Spawned[] = [];

  /** A worker of `pools` on the test handlers whose progress writes are recorded in `writes`. */
  async function startWorker(pools: Array<'io' | 'cpu'>): Promise<Worker> {
    const real = await env.store();
    const counted = Object.assign(Object.create(real) as AxStore, {
      progressWrite: (p: {rows: ProgressRow[]}) => {
        writes.push({at: Date.now(), rows: p.rows});
        return real.progressWrite(p);
      },
    });
    const w = await createWorkerService({
      ...env.rt,
      config: env.config,
      store: counted,
      broker: await env.broker({reconnect: true}),
      handlersModule: TEST_HANDLERS,
      pools,
    });
    workers.push(w);
    await w.start();
    return w;
  }

  /** Submits and waits until the task is terminal. */
  async function run(type: string, payload: JsonObject, maxRetries?: number): Promise<string> {
    const id = await client.submit({type, payload, ...(maxRetries === undefined ? {} : {maxRetries})});
    await client.flush();
    await eventually(async () => ['succeeded', 'dead'].includes((await store.tasksGet({id}))?.state ?? ''), 20_000, `${type} to end`);
    return id;
  }

  beforeAll(async () => {
    env = await createTestEnv({submitFlushMs: 20, leaseMs: 2000});
    store = await env.store();
    client = createClient({...env.rt, store, broker: await env.broker({reconnect: true}), release: async () => undefined});
    c = await startTestConsole(env, {users: {vic: 'viewer'}});
    dir = mkdtempSync(join(tmpdir(), 'ax-progress-'));
  });
  afterAll(async () => {
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    for (const w of workers) await w.stop({graceMs: 1000});
    await c?.close();
    await client?.close();
    await env?.dispose();
  });

  it('the store: a result rides in the complete (fast and careful paths), a plain complete leaves the column alone; resultsOf reads them', async () => {
    const tasks = ['a', 'b', 'c'].map((n) => validateTaskSpec({type: 'res_store', payload: {n}}, defaults, Date.now(), newId));
    await store.tasksInsert({tasks, actor: 'test'});
    const claimed = (await store.tasksClaim({ids: tasks.map((t) => t.id), worker: 'w:1', leaseMs: 60_000})).claimed;
    const fence = new Map(claimed.map((t) => [t.id, t.fence]));
    const [a, b, cc] = tasks.map((t) => t.id) as [string, string, string];
    // One batch: a with a result, b without (fast path: fenced, typed, counted).
    const fast = await store.outcomesApply({
      outcomes: [
        {kind: 'complete', id: a, fence: fence.get(a)!, type: 'res_store', breaker: 'ok', result: '{"rows":3,"name":"ü"}'},
        {kind: 'complete', id: b, fence: fence.get(b)!, type: 'res_store', breaker: 'ok'},
      ],
      actor: 'w:1',
    });
    expect(fast.applied.sort()).toEqual([a, b].sort());
    // The careful path (no type: the row is read first) writes it too.
    expect(
      (await store.outcomesApply({outcomes: [{kind: 'complete', id: cc, fence: fence.get(cc)!, result: '[1,2]'}], actor: 'w:1'})).applied,
    ).toEqual([cc]);
    expect((await store.tasksGet({id: a}))!.result).toEqual({rows: 3, name: 'ü'});
    expect((await store.tasksGet({id: b}))!.result).toBeNull();
    expect((await store.tasksGet({id: cc}))!.result).toEqual([1, 2]);
    const rows = await env.sql<{id: string; result_json: string | null}>('SELECT id, result_json FROM tasks WHERE id IN (?, ?)', [a, b]);
    expect(new Map(rows.map((r) => [r.id, r.result_json])).get(b)).toBeNull();
    // Lists leave the result out (up to 64 KiB a row).
    expect((await store.tasksList({type: 'res_store', limit: 10})).every((t) => t.result === undefined)).toBe(true);
    const many = await store.resultsOf([a, b, cc, '00000000-0000-7000-8000-000000000000']);
    expect([...many.keys()].sort()).toEqual([a, b, cc].sort());
    expect(many.get(a)).toEqual({state: 'succeeded', type: 'res_store', result: {rows: 3, name: 'ü'}});
    expect(many.get(b)).toEqual({state: 'succeeded', type: 'res_store', result: null});
    // A forced replay starts the task over: its result (and progress) are cleared.
    const audit = {operator: 'alice', command: 'dlq replay', filter: {ids: [a]}, reason: 'again'};
    await store.deadReplay({ids: [a], actor: 'test', audit, force: {at: new Date()}});
    expect(await store.tasksGet({id: a})).toMatchObject({state: 'submitted', result: null, progress: null});
  });

  it('the store: progress is written in one statement for many tasks, only at the running attempt’s fence', async () => {
    const tasks = ['a', 'b'].map((n) => validateTaskSpec({type: 'prog_store', payload: {n}}, defaults, Date.now(), newId));
    await store.tasksInsert({tasks, actor: 'test'});
    const claimed = (await store.tasksClaim({ids: tasks.map((t) => t.id), worker: 'w:1', leaseMs: 60_000})).claimed;
    const [a, b] = claimed as [(typeof claimed)[0], (typeof claimed)[0]];
    expect(
      await store.progressWrite({
        rows: [
          {id: a.id, fence: a.fence, percent: 40, note: 'rows 400/1000'},
          {id: b.id, fence: b.fence, percent: 7, note: null},
        ],
      }),
    ).toBe(2);
    const got = await store.tasksGet({id: a.id});
    expect(got).toMatchObject({progress: 40, progressNote: 'rows 400/1000', progressAt: expect.any(Date)});
    expect((await store.tasksGet({id: b.id}))!.progress).toBe(7);
    // A zombie (an older fence) writes nothing; nor does anyone once the attempt has ended.
    expect(await store.progressWrite({rows: [{id: a.id, fence: a.fence - 1, percent: 99, note: 'zombie'}]})).toBe(0);
    await store.outcomesApply({outcomes: [{kind: 'complete', id: b.id, fence: b.fence}], actor: 'w:1'});
    expect(await store.progressWrite({rows: [{id: b.id, fence: b.fence, percent: 99, note: 'late'}]})).toBe(0);
    expect(await store.tasksGet({id: a.id})).toMatchObject({progress: 40, progressNote: 'rows 400/1000'});
    expect(await store.tasksGet({id: b.id})).toMatchObject({state: 'succeeded', progress: 7, progressNote: null});
    // The attempt's last unwritten report rides in its outcome's UPDATE (here a retryable failure).
    await store.outcomesApply({
      outcomes: [
        {kind: 'fail', id: a.id, fence: a.fence, type: 'prog_store', error: 'e', retryDelayMs: 0, progress: {percent: 45, note: 'last'}},
      ],
      actor: 'w:1',
    });
    expect(await store.tasksGet({id: a.id})).toMatchObject({state: 'failed', progress: 45, progressNote: 'last'});
  });

  it('a handler’s result is shown by the admin service, the CLI’s JSON and the API; over the limit or not JSON it dies with the reason', async () => {
    await startWorker(['io']);
    const ok = await run('test_result', {result: {invoice: 'INV-7', lines: [1, 2]}});
    const plain = await run('test_result', {plain: true, result: 'done'});
    const big = await run('test_result', {bigKiB: 80});
    const odd = await run('test_result', {nonJson: true});

    const shown = await c.admin.tasks.show(ok);
    expect(shown.task).toMatchObject({state: 'succeeded', result: {invoice: 'INV-7', lines: [1, 2]}});
    expect(JSON.parse(JSON.stringify(taskJson(shown.task)))).toMatchObject({result: {invoice: 'INV-7', lines: [1, 2]}, progress: null});
    expect((await c.admin.tasks.show(plain)).task.result).toBe('done');
    const api = await call(c, 'GET', `/api/v1/tasks/${ok}`, {token: c.tokens.vic});
    expect(api.status).toBe(200);
    expect(api.body.task).toMatchObject({result: {invoice: 'INV-7', lines: [1, 2]}, progress: null, progressNote: null});

    for (const [id, msg] of [
      [big, /^result is 81 KiB, over the 64 KiB limit/],
      [odd, /^result is not JSON: the result is a Map, not a plain object/],
    ] as const) {
      const d = await c.admin.tasks.show(id);
      expect(d.task).toMatchObject({state: 'dead', attempt: 1, result: null, lastError: expect.stringMatching(msg)});
      expect(d.history.at(-1)).toMatchObject({to: 'dead', error: expect.stringMatching(msg)});
    }
  });

  it('progress from the IO pool: the latest report of a burst in one write, shown while it runs; the result at the end', async () => {
    const before = writes.length;
    const steps = Array.from({length: 200}, (_, i) => [i / 2, `step ${i}`]);
    const id = await client.submit({type: 'test_progress', payload: {steps, ms: 1500, result: {ok: 1}}});
    await client.flush();
    const running = await eventually(async () => {
      const t = (await c.admin.tasks.show(id)).task;
      return t.state === 'running' && t.progress !== null ? t : undefined;
    });
    expect(running).toMatchObject({progress: 100, progressNote: 'step 199'}); // 99.5 rounds to 100
    const api = await call(c, 'GET', `/api/v1/tasks/${id}`, {token: c.tokens.vic});
    expect(api.body.task).toMatchObject({progress: 100, progressNote: 'step 199', progressAt: expect.any(String)});
    await eventually(async () => (await store.tasksGet({id}))?.state === 'succeeded');
    // 200 reports, one write.
    const mine = writes.slice(before).filter((w) => w.rows.some((r) => r.id === id));
    expect(mine).toHaveLength(1);
    expect(mine[0]!.rows.find((r) => r.id === id)).toMatchObject({percent: 100, note: 'step 199'});
    expect(await store.tasksGet({id})).toMatchObject({result: {ok: 1}, progress: 100});
  });

  it('bad progress input throws in the handler and writes nothing', async () => {
    const before = writes.length;
    const id = await run('test_progress', {steps: [[101, 'too far']]}, 0);
    const d = await c.admin.tasks.show(id);
    expect(d.task).toMatchObject({state: 'dead', progress: null});
    expect(d.history.at(-1)!.error).toMatch(/ctx\.progress: percent must be from 0 to 100, got 101/);
    expect(writes.slice(before).some((w) => w.rows.some((r) => r.id === id))).toBe(false);
  });

  it('a CPU pool thread posts its progress and its serialized result to the main thread', async () => {
    await startWorker(['cpu']);
    const id = await client.submit({
      type: 'test_progress_cpu',
      payload: {
        steps: [
          [10, 'a'],
          [55, 'thread'],
        ],
        ms: 800,
        result: {cpu: true},
      },
    });
    await client.flush();
    await eventually(async () => (await store.tasksGet({id}))?.state === 'succeeded');
    expect(await store.tasksGet({id})).toMatchObject({progress: 55, progressNote: 'thread', result: {cpu: true}});
    const big = await run('test_result_cpu', {bigKiB: 70});
    expect((await store.tasksGet({id: big}))!.lastError).toMatch(/^result is 71 KiB, over the 64 KiB limit/);
  });

  it('results and progress are archived and restored with their task', async () => {
    const id = await run('test_progress', {steps: [[60, 'archived']], result: {kept: ['yes']}});
    await eventually(async () => (await store.tasksGet({id}))?.progress === 60);
    const seen: ArchivedTask[] = [];
    await store.archiveBatch({
      state: 'succeeded',
      finishedBefore: new Date(Date.now() + 86_400_000),
      after: null,
      limit: 1000,
      write: async (t) => void seen.push(...t),
    });
    const mine = seen.find((t) => t.task.id === id)!;
    expect(mine.task).toMatchObject({result_json: '{"kept":["yes"]}', progress: 60, progress_note: 'archived'});
    expect(await store.tasksGet({id})).toBeNull();
    await store.archiveRestore({tasks: seen});
    expect(await store.tasksGet({id})).toMatchObject({
      result: {kept: ['yes']},
      progress: 60,
      progressNote: 'archived',
      progressAt: expect.any(Date),
    });
    // An archive written before schema version 21 (no such columns) restores without them.
    const [old] = seen.filter((t) => t.task.id !== id && t.task.result_json !== null);
    const oldId = String(old!.task.id);
    await env.sql('DELETE FROM task_history WHERE task_id = ?', [oldId]);
    await env.sql('DELETE FROM tasks WHERE id = ?', [oldId]);
    const {result_json: _r, progress: _p, progress_note: _n, progress_at: _a, ...task} = old!.task;
    await store.archiveRestore({tasks: [{task, history: old!.history}]});
    expect(await store.tasksGet({id: oldId})).toMatchObject({state: 'succeeded', result: null, progress: null});
  });

  it('kill -9 of a worker process mid-task: the last progress written stays on the row', async () => {
    const started = join(dir, 'started.log');
    const p = spawnAx(['worker', '--handlers', 'test/fixtures/handlers.js', '--pools', 'io'], {
      ...env.env,
      AX_LEASE: '30s',
      AX_TEST_STARTED_LOG: started,
    });
    procs.push(p);
    // The in-process workers must not take it.
    await Promise.all(workers.splice(0).map((w) => w.stop({graceMs: 1000})));
    const id = await client.submit({type: 'test_progress', payload: {steps: [[40, 'halfway']], ms: 60_000}});
    await client.flush();
    await eventually(async () => lines(started).some((l) => l.startsWith(`${id} 1 `)), 20_000, 'the handler to start');
    await eventually(async () => (await store.tasksGet({id}))?.progress === 40, 10_000, 'the progress write');
    p.child.kill('SIGKILL');
    await p.exited;
    expect(await store.tasksGet({id})).toMatchObject({
      state: 'running',
      progress: 40,
      progressNote: 'halfway',
      progressAt: expect.any(Date),
    });
  }, 60_000);
});
