/**
 * Cancelling a running task against the real MariaDB and RabbitMQ, in process: the store's
 * running → cancelled transition (fenced, the fence moves on: the attempt's late outcome and lease
 * renewals are stale), bulk cancel of running tasks, and a worker that never receives the control
 * message (its control consumer is not running) still stopping the handler at its next lease
 * renewal. The path through `ax tasks cancel` and worker processes is in test/e2e/cancel-running.test.ts.
 */
import {mkdtempSync, readFileSync, existsSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {Broker} from '../../src/core/broker/types.js';
import {createClient, type AxClient} from '../../src/core/client.js';
import {nextEvent} from '../../src/core/events.js';
import type {AxStore} from '../../src/core/store/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import {createWorkerService} from '../../src/core/worker/service.js';
import type {Worker} from '../../src/core/worker/worker.js';
import {createTestEnv, eventually, TEST_HANDLERS, type TestEnv} from '../helpers/env.js';

const newId = createIdGenerator(Date.now);
const defaults = {maxRetries: 3, payloadLimitBytes: 65_536, cell: 'default'};

describe('cancelling a running task', () => {
  let env: TestEnv;
  let store: AxStore;

  beforeAll(async () => {
    env = await createTestEnv({leaseMs: 600, submitFlushMs: 20, heartbeatMs: 200});
    store = await env.store();
  });
  afterAll(async () => env?.dispose());

  /** A task of `type` written and claimed by `worker`; returns its id and the claim's fence. */
  async function running(type: string, worker = 'w:1'): Promise<{id: string; fence: number}> {
    const t = validateTaskSpec({type, payload: {n: 1}}, defaults, Date.now(), newId);
    await store.tasksInsert({tasks: [t], actor: 'test'});
    const [c] = (await store.tasksClaim({ids: [t.id], worker, leaseMs: 60_000})).claimed;
    return {id: t.id, fence: c!.fence};
  }

  it('moves running → cancelled at a new fence: the attempt is over, its late outcome and renewals are stale, no retry', async () => {
    const {id, fence} = await running('cancel_store');
    const audit = {operator: 'alice', command: 'tasks cancel', filter: {ids: [id]}, reason: 'refunded'};
    // Without `running` (the cron admin's own cancels) a running task is left alone.
    expect(await store.tasksCancel({id, actor: 'cli:1', reason: null})).toEqual({from: 'running', cancelled: false});
    const r = await store.tasksCancel({id, actor: 'cli:1', reason: 'refunded', running: true, audit});
    expect(r).toEqual({from: 'running', cancelled: true, stopped: {id, fence, attempt: 1, worker: 'w:1'}});
    const [row] = await env.sql<{state: string; fence: number; attempt: number; lease_until: Date | null}>(
      'SELECT state, fence, attempt, lease_until FROM tasks WHERE id = ?',
      [id],
    );
    expect(row).toMatchObject({state: 'cancelled', attempt: 1, lease_until: null});
    expect(Number(row!.fence)).toBe(fence + 1);
    // The attempt's history row: to cancelled, who and why, on the worker it ran on.
    const history = await store.historyList({taskId: id});
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({from: 'running', to: 'cancelled', attempt: 1, worker: 'w:1', error: 'cancelled by alice: refunded'});
    expect(history[0]!.startedAt).toBeInstanceOf(Date);
    // The worker's late outcome of that attempt is stale and changes nothing; so is its renewal.
    const late = await store.outcomesApply({
      outcomes: [{kind: 'fail', id, fence, retryDelayMs: 0, error: 'aborted: cancelled by alice'}],
      actor: 'w:1',
    });
    expect(late.applied).toEqual([]);
    expect(late.stale).toEqual([id]);
    expect(await store.leasesRenew({held: [{id, fence}], leaseMs: 60_000})).toEqual([]);
    expect(await store.outcomesApply({outcomes: [{kind: 'complete', id, fence}], actor: 'w:1'})).toMatchObject({applied: []});
    expect((await store.tasksGet({id}))?.state).toBe('cancelled');
    expect(await store.historyList({taskId: id})).toHaveLength(1);
    expect((await store.tasksClaim({ids: [id], worker: 'w:2', leaseMs: 60_000})).claimed).toEqual([]);
    // A finished task cannot be cancelled: nothing changes, nothing is audited.
    const audits = (await store.auditList({limit: 1000})).length;
    expect(await store.tasksCancel({id, actor: 'cli:1', reason: null, running: true, audit})).toEqual({
      from: 'cancelled',
      cancelled: false,
    });
    expect((await store.auditList({limit: 1000})).length).toBe(audits);
  });

  it('a bulk cancel of running tasks returns each stopped attempt, with one history row each and one audit row', async () => {
    const a = await running('cancel_bulk', 'w:a');
    const b = await running('cancel_bulk', 'w:b');
    const t = validateTaskSpec({type: 'cancel_bulk', payload: {n: 2}}, defaults, Date.now(), newId);
    await store.tasksInsert({tasks: [t], actor: 'test'});
    const audits = (await store.auditList({limit: 1000})).length;
    const done = await store.tasksCancelMany({
      type: 'cancel_bulk',
      states: ['running', 'submitted'],
      limit: 10,
      actor: 'cli:1',
      reason: null,
      audit: {operator: 'bob', command: 'tasks cancel --type', filter: {type: 'cancel_bulk'}, reason: null},
    });
    const byId = new Map(done.map((d) => [d.id, d]));
    expect(byId.get(a.id)).toEqual({id: a.id, from: 'running', stopped: {id: a.id, fence: a.fence, attempt: 1, worker: 'w:a'}});
    expect(byId.get(b.id)?.stopped).toEqual({id: b.id, fence: b.fence, attempt: 1, worker: 'w:b'});
    expect(byId.get(t.id)).toEqual({id: t.id, from: 'submitted'});
    expect((await store.historyList({taskId: a.id})).at(-1)).toMatchObject({to: 'cancelled', error: 'cancelled by bob', worker: 'w:a'});
    expect((await store.auditList({limit: 1000})).length).toBe(audits + 1);
    expect(await store.leasesRenew({held: [a, b], leaseMs: 60_000})).toEqual([]);
  });

  describe('a worker that never gets the control message', () => {
    let worker: Worker;
    let client: AxClient;
    let dir: string;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'ax-cancel-'));
      process.env.AX_TEST_STARTED_LOG = join(dir, 'started.log');
      const broker = await env.broker({reconnect: true});
      // Its control consumer never runs: only the lease renewal can tell it.
      const deaf = Object.assign(Object.create(broker) as Broker, {
        consumeControl: async () => ({cancel: async () => undefined}),
      });
      worker = await createWorkerService({
        ...env.rt,
        config: env.config,
        store: await env.store(),
        broker: deaf,
        handlersModule: TEST_HANDLERS,
        pools: ['io'],
        workerId: 'deaf:1',
      });
      await worker.start();
      client = createClient({...env.rt, store, broker, release: async () => undefined});
    });
    afterAll(async () => {
      await worker?.stop({graceMs: 0});
      await client?.close();
      delete process.env.AX_TEST_STARTED_LOG;
    });

    it('stops the handler at its next lease renewal; the task stays cancelled with one history row, no retry', async () => {
      const id = await client.submit({type: 'test_sleep', payload: {ms: 60_000}});
      await client.flush();
      const log = join(dir, 'started.log');
      await eventually(async () => existsSync(log) && readFileSync(log, 'utf8').includes(id), 20_000, 'the handler to start');
      const lost = nextEvent(worker.events, 'lease:lost', (e) => e.id === id);
      const failed = nextEvent(worker.events, 'outcome:stale', () => true);
      let told = 0;
      worker.events.on('task:cancelled', () => told++);
      // The SDK's cancel: the control message goes out (RabbitMQ confirms it), but this worker is deaf.
      const r = await client.cancel(id, 'wrong order');
      expect(r).toEqual({id, from: 'running', stopped: {worker: 'deaf:1', attempt: 1}, notified: true});
      // The renewal (every 200 ms with a 600 ms lease) finds the row gone and aborts the handler;
      // its outcome (aborted) is then written and found stale.
      expect(await lost).toEqual({id, type: 'test_sleep'});
      await failed;
      expect(told).toBe(0);
      expect(worker.inFlight).toBe(0);
      const detail = await client.getTask(id);
      expect(detail.task).toMatchObject({state: 'cancelled', attempt: 1});
      expect(detail.history.filter((h) => h.to === 'cancelled' || h.to === 'failed')).toEqual([
        expect.objectContaining({
          from: 'running',
          to: 'cancelled',
          error: `cancelled by ${env.rt.operator()}: wrong order`,
          worker: 'deaf:1',
        }),
      ]);
    });
  });
});
