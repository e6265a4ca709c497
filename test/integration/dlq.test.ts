/**
 * The SDK's dead-letter API (client.dlq) against the real MariaDB and RabbitMQ: list, show, stats
 * and replay, the dry run, and a replay racing a worker that runs the task (skipped, not doubled).
 */
import {existsSync, mkdtempSync, readFileSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {openClient} from '../../src/compose.js';
import type {AxClient} from '../../src/core/client.js';
import {planReplay, type ReplayResult, runReplay} from '../../src/core/dlq/replay.js';
import type {AxStore} from '../../src/core/store/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import {createWorkerService} from '../../src/core/worker/service.js';
import type {Worker} from '../../src/core/worker/worker.js';
import {createTestEnv, eventually, takeRung, type TestEnv} from '../helpers/env.js';

let env: TestEnv;
let store: AxStore;
let client: AxClient;
const newId = createIdGenerator(Date.now);

async function deadTask(type: string, error: string): Promise<string> {
  const t = validateTaskSpec({type, payload: {error}}, {maxRetries: 0, payloadLimitBytes: 65_536, cell: 'default'}, Date.now(), newId);
  await store.tasksInsert({tasks: [t], actor: 'it:1'});
  const [c] = (await store.tasksClaim({ids: [t.id], worker: 'w:1', leaseMs: 30_000})).claimed;
  await store.outcomesApply({outcomes: [{kind: 'deadLetter', id: t.id, fence: c!.fence, error}], actor: 'w:1'});
  return t.id;
}

beforeAll(async () => {
  env = await createTestEnv();
  store = await env.store();
  await env.broker();
  client = await openClient({...env.rt, operator: () => 'sdk-op'}, {reconnect: false});
});
afterAll(async () => {
  await client?.close();
  await env?.dispose();
});

describe('client.dlq', () => {
  it('lists, shows and counts dead tasks; a dry run changes nothing; a replay rings and audits', async () => {
    const a = await deadTask('sdk_dead', 'order 7 missing');
    const b = await deadTask('sdk_dead', 'order 8 missing');
    expect((await client.dlq.list({type: 'sdk_dead'})).tasks.map((t) => t.id)).toEqual([b, a]);
    expect((await client.dlq.show(a)).attempts).toMatchObject([{attempt: 1, to: 'dead', error: 'order 7 missing'}]);
    expect(await client.dlq.stats({type: 'sdk_dead'})).toMatchObject([{signature: 'order <n> missing', count: 2}]);
    const plan = await client.dlq.replay({type: 'sdk_dead'}, {dryRun: true});
    expect(plan).toMatchObject({total: 2, byType: {sdk_dead: 2}});
    expect((await store.tasksGet({id: a}))?.state).toBe('dead');
    const r = (await client.dlq.replay({type: 'sdk_dead'}, {reason: 'fixed'})) as ReplayResult;
    expect(r).toMatchObject({replayed: 2, skipped: [], unrung: 0});
    expect((await takeRung(env, 'io')).ids.sort()).toEqual([a, b].sort());
    expect((await store.auditList({limit: 1}))[0]).toMatchObject({
      operator: 'sdk-op',
      command: 'sdk dlq.replay',
      reason: 'fixed',
      taskCount: 2,
    });
    await expect(client.dlq.replay({type: 'sdk_dead'})).rejects.toMatchObject({code: 'not_found'});
  });

  it('a task a worker claimed between the plan and the replay is skipped, not doubled', async () => {
    const id = await deadTask('sdk_race', 'boom');
    // Someone else replays it and a worker claims it after our plan saw it dead.
    const plan = await planReplay(store, {ids: [id]});
    expect(plan.total).toBe(1);
    const other = await env.store();
    await other.deadReplay({ids: [id], actor: 'x:1', audit: {operator: 'x', command: 'dlq replay', filter: {ids: [id]}, reason: null}});
    expect((await other.tasksClaim({ids: [id], worker: 'w:2', leaseMs: 30_000})).claimed).toHaveLength(1);
    const broker = await env.broker();
    const r = await runReplay(
      {store, broker, clock: env.rt.clock, logger: env.rt.logger, actor: 'me:1', operator: 'me', reason: null, command: 'dlq replay'},
      {ids: [id]},
      plan,
    );
    expect(r).toMatchObject({replayed: 0, skipped: [{id, state: 'running'}]});
    const replays = (await store.historyList({taskId: id})).filter((h) => h.from === 'dead' && h.to === 'submitted');
    expect(replays).toHaveLength(1);
    expect((await store.tasksGet({id}))?.state).toBe('running');
  });
});

describe('client.dlq.replay with force and patch, run by a real worker', () => {
  const HANDLERS = new URL('../fixtures/handlers.js', import.meta.url).href;
  let worker: Worker;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ax-it-force-'));
    worker = await createWorkerService({
      ...env.rt,
      config: env.config,
      store: await env.store(),
      broker: await env.broker({reconnect: true}),
      handlersModule: HANDLERS,
      pools: ['io', 'cpu'],
      workerId: 'it-force',
    });
    await worker.start();
  });
  afterAll(async () => {
    await worker?.stop({graceMs: 1000});
    if (dir) rmSync(dir, {recursive: true, force: true});
  });

  type Seen = {taskId: string; attempt: number; payload: Record<string, unknown>; replay: Record<string, unknown> | null; isDate: boolean};
  const seen = (log: string): Seen[] =>
    existsSync(log)
      ? readFileSync(log, 'utf8')
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l) as Seen)
      : [];
  const auditRows = async (): Promise<number> => (await store.auditList({limit: 1000})).length;

  it.each(['test_replay_seen', 'test_replay_seen_cpu'])(
    '%s: a succeeded task is refused without --force, then force-replayed with a patch: it runs again and sees ctx.replay',
    async (type) => {
      const log = join(dir, `${type}.log`);
      const id = await client.submit({type, payload: {log, order: 7, note: 'drop me'}});
      await client.flush();
      await eventually(async () => (await store.tasksGet({id}))?.state === 'succeeded', 15_000, 'the first run');
      expect(seen(log)).toMatchObject([{taskId: id, attempt: 1, replay: null}]);

      const audits = await auditRows();
      await expect(client.dlq.replay({ids: [id]})).rejects.toMatchObject({code: 'conflict', message: expect.stringMatching(/add --force/)});
      await expect(client.dlq.replay({ids: [id]}, {force: true})).rejects.toMatchObject({code: 'invalid_input'});
      await expect(client.dlq.replay({ids: [id]}, {force: true, reason: 'r', patch: {order: 'x'.repeat(70_000)}})).rejects.toMatchObject({
        code: 'invalid_input',
        message: expect.stringContaining(`task ${id}`),
      });
      expect((await store.tasksGet({id}))?.state).toBe('succeeded');
      expect(await auditRows()).toBe(audits);

      const r = (await client.dlq.replay(
        {ids: [id]},
        {force: true, reason: 'receipt lost', patch: {order: 8, note: null}},
      )) as ReplayResult;
      expect(r).toMatchObject({replayed: 1, skipped: [], unrung: 0});
      await eventually(async () => seen(log).length === 2 && (await store.tasksGet({id}))?.state === 'succeeded', 15_000, 'the forced run');
      const again = seen(log)[1]!;
      expect(again).toMatchObject({
        taskId: id,
        attempt: 2,
        payload: {log, order: 8},
        replay: {by: 'sdk-op', reason: 'receipt lost'},
        isDate: true,
      });
      expect(again.payload).not.toHaveProperty('note');
      expect(Date.now() - Date.parse(again.replay!.at as string)).toBeLessThan(60_000);
      expect((await store.tasksGet({id}))?.payload).toEqual({log, order: 8});
      const hist = await store.historyList({taskId: id});
      expect(hist.map((h) => h.to)).toEqual(['succeeded', 'submitted', 'succeeded']);
      // The patch itself is on record (issue 20, defect 7): in the history note and the audit row.
      expect(hist[1]).toMatchObject({from: 'succeeded', error: 'force-replayed by sdk-op: receipt lost; patch {"order":8,"note":null}'});
      expect(await auditRows()).toBe(audits + 1);
      expect((await store.auditList({limit: 1}))[0]).toMatchObject({
        command: 'sdk dlq.replay --force',
        filter: {ids: [id], force: true, patch: '{"order":8,"note":null}'},
        reason: 'receipt lost',
        taskIds: [id],
      });
    },
  );

  it('a plain replay after a forced one clears the stamp: the handler sees no ctx.replay', async () => {
    const log = join(dir, 'plain.log');
    const id = await client.submit({type: 'test_replay_seen', payload: {log}});
    await client.flush();
    await eventually(async () => (await store.tasksGet({id}))?.state === 'succeeded', 15_000, 'the first run');
    await client.dlq.replay({ids: [id]}, {force: true, reason: 'again'});
    await eventually(async () => seen(log).length === 2 && (await store.tasksGet({id}))?.state === 'succeeded', 15_000, 'the forced run');
    // Dead by hand (as after a forced run that failed for good), then replayed without --force.
    await env.sql("UPDATE tasks SET state = 'dead', finished_at = NOW(3) WHERE id = ?", [id]);
    await client.dlq.replay({ids: [id]});
    await eventually(async () => seen(log).length === 3, 15_000, 'the plain replay');
    expect(seen(log).map((s) => s.replay?.reason ?? null)).toEqual([null, 'again', null]);
  });
});
