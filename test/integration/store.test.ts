import {describe, expect, it} from 'vitest';
import {storeConformance} from '../conformance/store.js';
import {createTestEnv} from '../helpers/env.js';
import {mysqlStoreHarness} from '../helpers/mysql-harness.js';
import {openOutbox, openStore} from '../../src/compose.js';
import {claimUpdateSql} from '../../src/core/store/mysql/tasks-claim.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';

storeConformance('MySQL', mysqlStoreHarness);

const newId = createIdGenerator(() => Date.now());
/** A validated `order_notify` task of the default cell (5 retries); `extra` adds spec fields (delay, …). */
const orderTask = (payload: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  validateTaskSpec(
    {type: 'order_notify', payload, ...extra},
    {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'},
    Date.now(),
    newId,
  );

describe('closable stores', () => {
  it('`await using` closes the task store and the outbox at the end of the block; close() is idempotent', async () => {
    const env = await createTestEnv();
    try {
      let escaped: Awaited<ReturnType<typeof openStore>> | undefined;
      let escapedOutbox: Awaited<ReturnType<typeof openOutbox>> | undefined;
      {
        await using store = await openStore(env.rt);
        await using outbox = await openOutbox(env.rt, {requireTable: false});
        expect(await store.clockNow()).toBeInstanceOf(Date);
        expect(typeof (await outbox.outboxTableExists())).toBe('boolean');
        escaped = store;
        escapedOutbox = outbox;
      }
      await expect(escaped.clockNow()).rejects.toThrow();
      await expect(escapedOutbox.outboxTableExists()).rejects.toThrow();
      await escaped.close();
      await escapedOutbox.close();
    } finally {
      await env.dispose();
    }
  });
});

describe('the claim UPDATE carries its own guard', () => {
  it('a claim decided on a stale read (the task was claimed and failed since) matches no row, lock or not', async () => {
    const env = await createTestEnv();
    try {
      const store = await env.store();
      const t = orderTask({stale: 1});
      await store.tasksInsert({tasks: [t], actor: 'test'});
      // What a claimer without a locking read saw: submitted at fence 0, due.
      const [read] = await env.sql<{fence: number}>('SELECT fence FROM tasks WHERE id = ?', [t.id]);
      // Meanwhile another worker claims it and fails it: failed again, due again, at fence 1.
      const [c] = (await store.tasksClaim({ids: [t.id], worker: 'w1', leaseMs: 30_000})).claimed;
      await store.outcomesApply({outcomes: [{kind: 'fail', id: t.id, fence: c!.fence, error: 'boom', retryDelayMs: 0}], actor: 'w1'});
      const q = claimUpdateSql([{id: t.id, fence: Number(read!.fence)}], 'w2', 30_000);
      const res = (await env.sql(q.sql, q.params)) as unknown as {affectedRows: number};
      expect(res.affectedRows).toBe(0);
      expect(await store.tasksGet({id: t.id})).toMatchObject({state: 'failed', fence: 1, attempt: 1});
    } finally {
      await env.dispose();
    }
  });
});

describe('a row that leaves the waiting states unrung gets its mark (idx_tasks_dispatch holds waiting rows only)', () => {
  it('claim and cancel set published_at when it was NULL and keep it when it was set', async () => {
    const env = await createTestEnv();
    try {
      const store = await env.store();
      const spec = (n: number, delayMs = 0) => orderTask({n}, delayMs ? {delay: `${delayMs}ms`} : {});
      const [unrung, rung, delayed, many] = [spec(1), spec(2), spec(3, 3_600_000), spec(4, 3_600_000)];
      await store.tasksInsert({tasks: [unrung!, rung!, delayed!, many!], actor: 'test', markPublished: [rung!.id]});
      const marks = async () =>
        new Map(
          (await env.sql<{id: string; published_at: Date | null}>('SELECT id, published_at FROM tasks')).map((r) => [r.id, r.published_at]),
        );
      const before = await marks();
      expect(before.get(unrung!.id)).toBeNull();
      expect(before.get(rung!.id)).toBeInstanceOf(Date);
      expect(before.get(delayed!.id)).toBeNull();

      await store.tasksClaim({ids: [unrung!.id, rung!.id], worker: 'w1', leaseMs: 30_000});
      await store.tasksCancel({id: delayed!.id, actor: 'op', reason: 'not needed'});
      await store.tasksCancelMany({
        type: 'order_notify',
        states: ['submitted'],
        limit: 10,
        actor: 'op',
        reason: 'all',
        audit: {operator: 'op', command: 'tasks cancel', filter: {type: 'order_notify'}, reason: 'all'},
      });
      const after = await marks();
      expect(after.get(unrung!.id)).toBeInstanceOf(Date);
      expect(after.get(rung!.id)).toEqual(before.get(rung!.id));
      expect(after.get(delayed!.id)).toBeInstanceOf(Date);
      expect(after.get(many!.id)).toBeInstanceOf(Date);
      expect(
        (
          await env.sql<{n: number}>("SELECT COUNT(*) AS n FROM tasks WHERE published_at IS NULL AND state NOT IN ('submitted', 'failed')")
        )[0]!.n,
      ).toBe(0);
    } finally {
      await env.dispose();
    }
  });
});

describe("a worker's outcome batch without a read first (the guarded UPDATEs decide)", () => {
  it('mixed kinds: history copied from the updated rows (to, attempt, error, stack), breaker counts by the given type; a stale one sends the batch the careful way', async () => {
    const env = await createTestEnv();
    try {
      const store = await env.store();
      const specs = [1, 2, 3, 4, 5].map((n) => orderTask({n}));
      await store.tasksInsert({tasks: specs, actor: 'test'});
      const {claimed} = await store.tasksClaim({ids: specs.map((t) => t.id), worker: 'w1', leaseMs: 30_000});
      const [a, b, c, d, e] = claimed.sort((x, y) => (x.id < y.id ? -1 : 1));
      const type = 'order_notify';
      const res = await store.outcomesApply({
        actor: 'w1',
        outcomes: [
          {kind: 'complete', id: a!.id, fence: a!.fence, breaker: 'ok', type},
          {
            kind: 'fail',
            id: b!.id,
            fence: b!.fence,
            error: 'boom',
            stack: 'Error: boom\n    at x',
            retryDelayMs: 60_000,
            breaker: 'failed',
            type,
          },
          {kind: 'deadLetter', id: c!.id, fence: c!.fence, error: 'bad payload', type},
          {kind: 'release', id: d!.id, fence: d!.fence, reason: 'released: shutdown', type},
          {kind: 'park', id: e!.id, fence: e!.fence, reason: 'paused', delayMs: 1000, parked: 'paused', type},
        ],
      });
      expect(res.stale).toEqual([]);
      expect([...res.applied].sort()).toEqual([a, b, c, d, e].map((x) => x!.id).sort());
      const last = async (id: string) =>
        (
          await env.sql<{
            from_state: string;
            to_state: string;
            attempt: number;
            worker: string;
            error: string | null;
            stack: string | null;
          }>('SELECT from_state, to_state, attempt, worker, error, stack FROM task_history WHERE task_id = ? ORDER BY seq DESC LIMIT 1', [
            id,
          ])
        )[0];
      expect(await last(a!.id)).toMatchObject({
        from_state: 'running',
        to_state: 'succeeded',
        attempt: 1,
        worker: 'w1',
        error: null,
        stack: null,
      });
      // The attempt's one row carries its start and worker, copied from the row the claim wrote.
      for (const x of [a, b, c, d, e]) {
        const [h] = await env.sql<{started_at: Date; worker: string}>(
          'SELECT h.started_at, h.worker FROM task_history h WHERE h.task_id = ? ORDER BY seq DESC LIMIT 1',
          [x!.id],
        );
        expect(h).toEqual({started_at: (await store.tasksGet({id: x!.id}))!.startedAt, worker: 'w1'});
        expect(h!.started_at).toBeInstanceOf(Date);
      }
      expect(await last(b!.id)).toMatchObject({to_state: 'failed', attempt: 1, error: 'boom', stack: 'Error: boom\n    at x'});
      expect(await last(c!.id)).toMatchObject({to_state: 'dead', attempt: 1, error: 'bad payload'});
      // A hand-back and a park give the attempt back: their rows say attempt 0, as the task row does.
      expect(await last(d!.id)).toMatchObject({to_state: 'failed', attempt: 0, error: 'released: shutdown'});
      expect(await last(e!.id)).toMatchObject({to_state: 'submitted', attempt: 0, error: 'paused'});
      expect(await env.sql('SELECT type, SUM(ok) AS ok, SUM(failed) AS failed FROM type_outcomes GROUP BY type')).toEqual([
        {type, ok: '1', failed: '1'},
      ]);

      // One stale outcome among current ones: the stale one is reported and writes nothing.
      const more = [6, 7].map((n) => orderTask({n}));
      await store.tasksInsert({tasks: more, actor: 'test'});
      const [f, g] = (await store.tasksClaim({ids: more.map((t) => t.id), worker: 'w1', leaseMs: 30_000})).claimed;
      const before = (await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM task_history WHERE task_id = ?', [g!.id]))[0]!.n;
      const mixed = await store.outcomesApply({
        actor: 'w1',
        outcomes: [
          {kind: 'complete', id: f!.id, fence: f!.fence, breaker: 'ok', type},
          {kind: 'complete', id: g!.id, fence: g!.fence - 1, breaker: 'ok', type},
        ],
      });
      expect(mixed).toEqual({applied: [f!.id], stale: [g!.id]});
      expect((await store.tasksGet({id: g!.id}))?.state).toBe('running');
      expect((await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM task_history WHERE task_id = ?', [g!.id]))[0]!.n).toBe(before);
      expect(await env.sql('SELECT SUM(ok) AS ok FROM type_outcomes')).toEqual([{ok: '2'}]);
    } finally {
      await env.dispose();
    }
  });
});
