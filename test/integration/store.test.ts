import {describe, expect, it} from 'vitest';
import {storeConformance} from '../conformance/store.js';
import {createTestEnv} from '../helpers/env.js';
import {openOutbox, openStore} from '../../src/compose.js';

storeConformance('MySQL', async () => {
  const env = await createTestEnv();
  const store = await env.store();
  const other = await env.store();
  return {
    store,
    other,
    async waitDbMs(ms) {
      const until = (await store.clockNow()).getTime() + ms;
      while ((await store.clockNow()).getTime() <= until) await new Promise((r) => setTimeout(r, 10));
    },
    async historyEdges() {
      const rows = await env.sql<{from_state: string | null; to_state: string}>('SELECT DISTINCT from_state, to_state FROM task_history');
      return rows.map((r) => [r.from_state, r.to_state]);
    },
    dispose: () => env.dispose(),
  };
});

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
