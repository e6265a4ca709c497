// Example handlers used by `npm run demo`. A worker loads them with:
//   ax worker --handlers ./examples/handlers.js
import {createHash} from 'node:crypto';
import {defineHandlers, TaskResult, UnrecoverableError} from 'ax-executor';

const pause = (ms, signal) =>
  new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), reject(signal.reason)), {once: true});
  });

export default defineHandlers({
  // IO-bound: "send the payment notice for order N" — waits on a (simulated) downstream call.
  order_notify: {
    pool: 'io',
    timeout: '30s',
    async execute(ctx) {
      await pause(5 + (ctx.payload.orderId % 20), ctx.signal);
      return TaskResult.success();
    },
  },
  // Flaky downstream: fails on the first `failTimes` attempts, then succeeds (retried with backoff).
  user_register_credit: {
    pool: 'io',
    async execute(ctx) {
      if (ctx.attempt <= (ctx.payload.failTimes ?? 0)) return TaskResult.fail(`credit service busy (attempt ${ctx.attempt})`);
      return TaskResult.success();
    },
  },
  // CPU-bound: runs in a worker thread so it never blocks the event loop.
  report_build: {
    pool: 'cpu',
    timeout: '1m',
    execute(ctx) {
      let h = Buffer.from(String(ctx.payload.seed));
      for (let i = 0; i < (ctx.payload.rounds ?? 20000); i++) h = createHash('sha256').update(h).digest();
      return TaskResult.success();
    },
  },
  // Always fails: reaches `dead` after its last retry.
  payment_capture: {
    pool: 'io',
    async execute() {
      throw new Error('card processor rejected the request: HTTP 502');
    },
  },
  // A payload no retry can fix: dead at once.
  invoice_render: {
    pool: 'io',
    async execute(ctx) {
      if (!ctx.payload.invoiceId) throw new UnrecoverableError('payload has no invoiceId');
      return TaskResult.success();
    },
  },
});
