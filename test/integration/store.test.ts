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
