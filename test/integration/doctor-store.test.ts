import {doctorStoreConformance} from '../conformance/doctor.js';
import {createTestEnv} from '../helpers/env.js';

doctorStoreConformance('MySQL', async () => {
  const env = await createTestEnv();
  const store = await env.store();
  return {
    store,
    async waitDbMs(ms) {
      const until = (await store.clockNow()).getTime() + ms;
      while ((await store.clockNow()).getTime() <= until) await new Promise((r) => setTimeout(r, 5));
    },
    dispose: () => env.dispose(),
  };
});
