/**
 * The SDK's dead-letter API (client.dlq) against the real MariaDB and RabbitMQ: list, show, stats
 * and replay, the dry run, and a replay racing a worker that runs the task (skipped, not doubled).
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {openClient} from '../../src/compose.js';
import type {AxClient} from '../../src/core/client.js';
import {planReplay, type ReplayResult, runReplay} from '../../src/core/dlq/replay.js';
import type {AxStore} from '../../src/core/store/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import {createTestEnv, takeRung, type TestEnv} from '../helpers/env.js';

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
