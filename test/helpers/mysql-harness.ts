/** The MySQL side of the store conformance suites: a fresh test database and two store handles on it. */
import type {StoreHarness} from '../conformance/store.js';
import {createTestEnv, type TestEnv} from './env.js';

export async function mysqlStoreHarness(): Promise<StoreHarness & {env: TestEnv}> {
  const env = await createTestEnv();
  const store = await env.store();
  const other = await env.store();
  return {
    env,
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
}
