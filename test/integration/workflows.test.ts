/**
 * Dependencies (TaskSpec.after) on the real MariaDB and RabbitMQ, with in-process workers: order of
 * a diamond and of a chain of 100, ctx.parents, a dead parent cancelling (or, with 'run', running)
 * its dependents, cascades, parents already ended, and bad input refused with nothing written.
 */
import {randomUUID} from 'node:crypto';
import {afterAll, beforeAll, beforeEach, describe, expect, it} from 'vitest';
import {createClient, type AxClient} from '../../src/core/client.js';
import {createWorkerService} from '../../src/core/worker/service.js';
import type {Worker} from '../../src/core/worker/worker.js';
import {AxError} from '../../src/core/errors.js';
import {createSchedulerService} from '../../src/core/scheduler/service.js';
import type {Scheduler} from '../../src/core/scheduler/scheduler.js';
import {createTestEnv, eventually, type TestEnv} from '../helpers/env.js';
import {createBusinessDb} from '../helpers/outbox.js';
import {enqueueInTransaction} from '../../src/core/outbox/enqueue.js';
import {createRelayService} from '../../src/core/outbox/service.js';

const HANDLERS = new URL('../fixtures/workflow-handlers.js', import.meta.url).href;

interface Run {
  id: string;
  phase: 'start' | 'end';
  seq: number;
  parents: Record<string, {type: string; state: string; result: unknown}>;
  payload: Record<string, unknown>;
}
const runs = (): Run[] => ((globalThis as {__axWorkflow?: Run[]}).__axWorkflow ??= []);
const at = (id: string, phase: Run['phase']): number => {
  const r = runs().find((x) => x.id === id && x.phase === phase);
  if (!r) throw new Error(`${id} has no ${phase}`);
  return r.seq;
};

describe('dependencies', () => {
  let env: TestEnv;
  let client: AxClient;
  const workers: Worker[] = [];
  let scheduler: Scheduler;

  const stateOf = async (id: string): Promise<{state: string; last_error: string | null}> =>
    (await env.sql<{state: string; last_error: string | null}>('SELECT state, last_error FROM tasks WHERE id = ?', [id]))[0]!;
  const ended = (ids: string[], timeoutMs = 20_000) =>
    eventually(
      async () => {
        const rows = await env.sql<{n: number}>(
          `SELECT COUNT(*) AS n FROM tasks WHERE id IN (${ids.map(() => '?').join(', ')}) AND state IN ('succeeded', 'dead', 'cancelled')`,
          ids,
        );
        return Number(rows[0]!.n) === ids.length;
      },
      timeoutMs,
      `${ids.length} tasks to end`,
    );
  const counts = async () => {
    const [t] = await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM tasks');
    const [d] = await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM task_deps');
    const [b] = await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM task_batches');
    return {tasks: Number(t!.n), deps: Number(d!.n), batches: Number(b!.n)};
  };

  beforeAll(async () => {
    env = await createTestEnv({submitFlushMs: 20});
    client = createClient({
      ...env.rt,
      store: await env.store(),
      broker: await env.broker({reconnect: true}),
      release: async () => undefined,
    });
    // Releases made by a cancel (a batch's last member) are rung by the scheduler's due scan.
    scheduler = createSchedulerService({
      ...env.rt,
      store: await env.store(),
      broker: await env.broker({reconnect: true}),
      maintenance: false,
    });
    await scheduler.start();
    for (let i = 0; i < 2; i++) {
      const w = await createWorkerService({
        ...env.rt,
        config: env.config,
        store: await env.store(),
        broker: await env.broker({reconnect: true}),
        handlersModule: HANDLERS,
        pools: ['io'],
        workerId: `wf-${i}`,
      });
      await w.start();
      workers.push(w);
    }
  });
  afterAll(async () => {
    for (const w of workers) await w.stop({graceMs: 1000});
    await scheduler.stop();
    await client.close();
    await env.dispose();
  });
  beforeEach(() => {
    runs().length = 0;
  });

  it('runs a diamond in order: D after B and C, which start after A; D sees its parents and their results', async () => {
    const [a, b, c, d] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const r = await client.submitBatch([
      {id: d, type: 'wf_step', after: [b, c]},
      {id: b, type: 'wf_step', payload: {ms: 20, result: {from: 'b', rows: [1, 2]}}, after: [a]},
      {id: c, type: 'wf_step', payload: {ms: 80, result: 'c done'}, after: [a]},
      {id: a, type: 'wf_step', payload: {ms: 30}},
    ]);
    expect(r.ids).toEqual([d, b, c, a]);
    const shown = await env.store().then((s) => s.taskLinks(d));
    expect(shown?.waitingFor).toBeGreaterThan(0);
    await ended([a, b, c, d]);
    for (const id of [a, b, c, d]) expect((await stateOf(id)).state).toBe('succeeded');
    expect(at(b, 'start')).toBeGreaterThan(at(a, 'end'));
    expect(at(c, 'start')).toBeGreaterThan(at(a, 'end'));
    expect(at(d, 'start')).toBeGreaterThan(Math.max(at(b, 'end'), at(c, 'end')));
    const dRun = runs().find((x) => x.id === d)!;
    expect(dRun.parents).toEqual({
      [b]: {type: 'wf_step', state: 'succeeded', result: {from: 'b', rows: [1, 2]}},
      [c]: {type: 'wf_step', state: 'succeeded', result: 'c done'},
    });
    expect(runs().find((x) => x.id === a)!.parents).toEqual({});
    const links = await (await env.store()).taskLinks(a);
    expect(links?.dependents.map((x) => x.id).sort()).toEqual([b, c].sort());
  });

  it('runs a chain of 100 in order', async () => {
    const ids = Array.from({length: 100}, () => randomUUID());
    await client.submitBatch(ids.map((id, i) => ({id, type: 'wf_step', ...(i === 0 ? {} : {after: [ids[i - 1]!]})})));
    await ended(ids, 60_000);
    for (let i = 1; i < ids.length; i++) expect(at(ids[i]!, 'start')).toBeGreaterThan(at(ids[i - 1]!, 'end'));
    const [n] = await env.sql<{n: number}>(
      `SELECT COUNT(*) AS n FROM tasks WHERE state = 'succeeded' AND id IN (${ids.map(() => '?').join(', ')})`,
      ids,
    );
    expect(Number(n!.n)).toBe(100);
  });

  it('a parent that ends dead cancels its dependents (cascading) and runs those with onParentFailure run', async () => {
    const [p, x, y, z] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    await client.submitBatch([
      {id: p, type: 'wf_step', payload: {fail: true}},
      {id: x, type: 'wf_step', after: [p]},
      {id: y, type: 'wf_step', after: [p], onParentFailure: 'run'},
      {id: z, type: 'wf_step', after: [x]},
    ]);
    await ended([p, x, y, z]);
    expect(await stateOf(p)).toMatchObject({state: 'dead'});
    expect(await stateOf(x)).toEqual({state: 'cancelled', last_error: `parent ${p} ended dead`});
    expect(await stateOf(z)).toEqual({state: 'cancelled', last_error: `parent ${x} ended cancelled`});
    expect(await stateOf(y)).toMatchObject({state: 'succeeded'});
    expect(runs().some((r) => r.id === x || r.id === z)).toBe(false);
    expect(runs().find((r) => r.id === y)!.parents).toEqual({[p]: {type: 'wf_step', state: 'dead', result: null}});
    const history = await env.sql<{task_id: string; to_state: string; error: string}>(
      'SELECT task_id, to_state, error FROM task_history WHERE task_id IN (?, ?) ORDER BY at',
      [x, y],
    );
    expect(history).toContainEqual({task_id: x, to_state: 'cancelled', error: `parent ${p} ended dead`});
    expect(history).toContainEqual({
      task_id: y,
      to_state: 'submitted',
      error: `parent ${p} ended dead; runs anyway (onParentFailure: run)`,
    });
  });

  it('a dependent of tasks already ended is settled at its submit; cancelling a waiting task cascades', async () => {
    const done = randomUUID();
    await client.submitBatch([{id: done, type: 'wf_step'}]);
    await ended([done]);
    const child = await client.submit({type: 'wf_step', after: [done]});
    await ended([child]);
    expect((await stateOf(child)).state).toBe('succeeded');

    // A dependent of a running parent: the parent's claim saw no dependents, its outcome finds one.
    const running = randomUUID();
    await client.submitBatch([{id: running, type: 'wf_step', payload: {ms: 200}}]);
    await eventually(async () => runs().some((r) => r.id === running), 10_000, 'the parent to start');
    const follower = await client.submit({type: 'wf_step', after: [running]});
    await ended([running, follower]);
    expect((await stateOf(follower)).state).toBe('succeeded');
    expect(at(follower, 'start')).toBeGreaterThan(at(running, 'end'));

    const [slow, mid, leaf] = [randomUUID(), randomUUID(), randomUUID()];
    await client.submitBatch([
      {id: slow, type: 'wf_step', payload: {ms: 300}},
      {id: mid, type: 'wf_step', after: [slow]},
      {id: leaf, type: 'wf_step', after: [mid]},
    ]);
    await client.cancel(mid, 'not needed');
    expect(await stateOf(leaf)).toEqual({state: 'cancelled', last_error: `parent ${mid} ended cancelled`});
    await ended([slow]);
    expect((await stateOf(slow)).state).toBe('succeeded');
    // A dependent submitted after its parent was cancelled is cancelled at once.
    const late = await client.submit({type: 'wf_step', after: [mid]});
    expect(await stateOf(late)).toEqual({state: 'cancelled', last_error: `parent ${mid} ended cancelled`});
  });

  it('a batch runs its callback once, with the counts, when every member ended', async () => {
    const later = randomUUID();
    const small = await client.submitBatch(
      [{type: 'wf_step'}, {type: 'wf_step', payload: {fail: true}}, {id: later, type: 'wf_step', delay: '1h'}],
      {callback: {type: 'wf_callback', payload: {note: 'small'}}},
    );
    await ended(small.ids.slice(0, 2));
    const progress = await client.batch(small.batchId!);
    expect(progress).toMatchObject({total: 3, succeeded: 1, dead: 1, cancelled: 0, callbackState: 'submitted', doneAt: null});
    expect(runs().some((r) => r.id === small.callbackId)).toBe(false);
    await client.cancel(later);
    await ended([small.callbackId!]);
    const calls = runs().filter((r) => r.id === small.callbackId);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.payload).toEqual({note: 'small', batch: {id: small.batchId, total: 3, succeeded: 1, dead: 1, cancelled: 1}});
    expect(await client.batch(small.batchId!)).toMatchObject({callbackState: 'succeeded', cancelled: 1});
    expect((await (await env.store()).batchesList({limit: 10})).map((b) => b.id)).toContain(small.batchId);

    const n = 10_000;
    const big = await client.submitBatch(
      Array.from({length: n}, (_, i) => ({type: 'wf_step', payload: {fail: i % 1000 === 0}})),
      {callback: {type: 'wf_callback'}},
    );
    await ended([big.callbackId!], 240_000);
    const bigCalls = runs().filter((r) => r.id === big.callbackId);
    expect(bigCalls).toHaveLength(1);
    expect(bigCalls[0]!.payload).toEqual({batch: {id: big.batchId, total: n, succeeded: n - 10, dead: 10, cancelled: 0}});
    expect(await client.batch(big.batchId!)).toMatchObject({
      total: n,
      succeeded: n - 10,
      dead: 10,
      cancelled: 0,
      callbackState: 'succeeded',
    });
  }, 300_000);

  it('the outbox carries dependencies within one transaction: parents written first, dependents wait', async () => {
    const biz = await createBusinessDb({migrate: true});
    try {
      const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
      const conn = await biz.pool.getConnection();
      try {
        await conn.beginTransaction();
        // Listed child first: enqueue writes the parents' rows before it.
        await enqueueInTransaction(conn, [
          {id: c, type: 'wf_step', after: [a, b]},
          {id: a, type: 'wf_step', payload: {ms: 30}},
          {id: b, type: 'wf_step', after: [a], onParentFailure: 'run'},
        ]);
        await conn.commit();
      } finally {
        conn.release();
      }
      const rows = await biz.sql<{task_id: string}>('SELECT task_id FROM task_outbox ORDER BY id');
      expect(rows.map((r) => r.task_id)).toEqual([a, b, c]);
      const relay = createRelayService({
        ...env.rt,
        config: env.config,
        outbox: await biz.outbox(),
        store: await env.store(),
        broker: await env.broker(),
        id: 'relay-wf',
      });
      while ((await relay.once()) > 0);
      await ended([a, b, c]);
      expect(at(b, 'start')).toBeGreaterThan(at(a, 'end'));
      expect(at(c, 'start')).toBeGreaterThan(at(b, 'end'));
      const [edge] = await env.sql<{run_on_failure: number}>('SELECT run_on_failure FROM task_deps WHERE parent = ? AND child = ?', [a, b]);
      expect(Number(edge!.run_on_failure)).toBe(1);
      await expect(
        biz.pool.getConnection().then(async (x) => {
          try {
            await enqueueInTransaction(x, [
              {id: a, type: 'wf_step', after: [b]},
              {id: b, type: 'wf_step', after: [a]},
            ]);
          } finally {
            x.release();
          }
        }),
      ).rejects.toThrow(/cycle/);
    } finally {
      await biz.dispose();
    }
  });

  it('a debounced parent replaced by a later submit cancels its dependents', async () => {
    const first = await client.submit({type: 'wf_step', debounce: {key: 'k1', window: '1h'}});
    await client.flush();
    const child = await client.submit({type: 'wf_step', after: [first]});
    const second = await client.submit({type: 'wf_step', debounce: {key: 'k1', window: '1h'}});
    await client.flush();
    expect((await stateOf(first)).state).toBe('cancelled');
    expect((await stateOf(second)).state).toBe('submitted');
    expect(await stateOf(child)).toEqual({state: 'cancelled', last_error: `parent ${first} ended cancelled`});
  });

  it('refuses bad input with invalid_input and writes nothing', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    const stored = randomUUID();
    await client.submitBatch([{id: stored, type: 'wf_step', payload: {ms: 1}}]);
    await ended([stored]);
    await env.sql(`UPDATE tasks SET cell = 'elsewhere' WHERE id = ?`, [stored]);
    const before = await counts();
    const refused = async (p: Promise<unknown>, message: RegExp) => {
      const e = await p.then(
        () => null,
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(AxError);
      expect((e as AxError).code).toBe('invalid_input');
      expect((e as AxError).message).toMatch(message);
    };
    await refused(client.submit({type: 'wf_step', after: [randomUUID()]}), /no task .* in this batch or in cell/);
    await refused(
      client.submitBatch([
        {id: a, type: 'wf_step'},
        {type: 'wf_step', after: [a, randomUUID()]},
      ]),
      /no task/,
    );
    await refused(client.submit({type: 'wf_step', after: [stored]}), /is in cell elsewhere/);
    await refused(
      client.submitBatch([
        {id: a, type: 'wf_step', after: [b]},
        {id: b, type: 'wf_step', after: [a]},
      ]),
      /cycle/,
    );
    await refused(client.submitBatch([{id: a, type: 'wf_step', after: [a]}]), /waits for itself/);
    await refused(client.submit({type: 'wf_step', after: Array.from({length: 101}, () => randomUUID())}), /at most 100/);
    await refused(client.submit({type: 'wf_step', after: [a], delay: '1s'}), /either after or delay/);
    await refused(client.submit({type: 'wf_step', after: []}), /non-empty/);
    await refused(client.submit({type: 'wf_step', onParentFailure: 'run'}), /only for a task with after/);
    await refused(client.submit({type: 'wf_step', after: [a], onParentFailure: 'maybe' as 'run'}), /cancel or run/);
    await refused(client.submitBatch([]), /at least one task/);
    await refused(client.submitBatch([{id: a, type: 'wf_step'}], {callback: {type: 'wf_callback', after: [a]}}), /no after/);
    await refused(
      client.submitBatch([
        {id: a, type: 'wf_step'},
        {id: a, type: 'wf_step'},
      ]),
      /twice/,
    );
    await refused(client.submitBatch([{type: 'wf_step'}, {type: 'Bad'}]), /task 1: /);
    expect(await counts()).toEqual(before);
  });
  it('archiving finished tasks takes their links along: the edges of an archived child, the batch of an archived callback', async () => {
    const [p, c] = [randomUUID(), randomUUID()];
    await client.submitBatch([
      {id: p, type: 'wf_step'},
      {id: c, type: 'wf_step', after: [p]},
    ]);
    const b = await client.submitBatch([{type: 'wf_step'}], {callback: {type: 'wf_callback'}});
    const all = [p, c, ...b.ids, b.callbackId!];
    await ended(all);
    const before = await counts();
    await env.sql('UPDATE tasks SET finished_at = NOW(3) - INTERVAL 40 DAY, run_at = NOW(3) - INTERVAL 40 DAY WHERE id IN (?)', [all]);
    const store = await env.store();
    const lines: Array<Record<string, unknown>> = [];
    for (;;) {
      const r = await store.archiveBatch({
        state: 'succeeded',
        finishedBefore: new Date(Date.now() - 30 * 86_400_000),
        after: null,
        limit: 1000,
        write: async (tasks) => void lines.push(...tasks.map((t) => t.task)),
      });
      if (r.deleted.length === 0) break;
    }
    expect(lines.map((t) => t.id).sort()).toEqual([...all].sort());
    expect(lines.find((t) => t.id === c)).toMatchObject({links: 2});
    expect(await counts()).toEqual({tasks: before.tasks - all.length, deps: before.deps - 1, batches: before.batches - 1});
  });
});
