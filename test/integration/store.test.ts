import {describe, expect, it} from 'vitest';
import {storeConformance} from '../conformance/store.js';
import {createTestEnv} from '../helpers/env.js';
import {mysqlStoreHarness} from '../helpers/mysql-harness.js';
import {openOutbox, openStore} from '../../src/compose.js';
import {claimUpdateSql} from '../../src/core/store/mysql/write.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';

storeConformance('MySQL', mysqlStoreHarness);

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
      const newId = createIdGenerator(() => Date.now());
      const t = validateTaskSpec(
        {type: 'order_notify', payload: {stale: 1}},
        {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'},
        Date.now(),
        newId,
      );
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
      const newId = createIdGenerator(() => Date.now());
      const spec = (n: number, delayMs = 0) =>
        validateTaskSpec(
          {type: 'order_notify', payload: {n}, ...(delayMs ? {delay: `${delayMs}ms`} : {})},
          {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'},
          Date.now(),
          newId,
        );
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
