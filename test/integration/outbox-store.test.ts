import {outboxConformance} from '../conformance/outbox.js';
import {createBusinessDb} from '../helpers/outbox.js';

outboxConformance('MySQL', async () => {
  const biz = await createBusinessDb();
  return {
    outbox: await biz.outbox(),
    async insertRows(n, type = 'order_notify') {
      const ids: number[] = [];
      for (let i = 0; i < n; i++) {
        const [r] = await biz.pool.query('INSERT INTO task_outbox (type, payload) VALUES (?, ?)', [type, JSON.stringify({i})]);
        ids.push((r as {insertId: number}).insertId);
      }
      return ids;
    },
    async ageSent(ids, ms) {
      await biz.sql('UPDATE task_outbox SET sent_at = sent_at - INTERVAL ? MICROSECOND WHERE id IN (?)', [ms * 1000, ids]);
    },
    dispose: () => biz.dispose(),
  };
});
