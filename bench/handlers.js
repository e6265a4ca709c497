// Handlers for the benchmark suite (`npm run bench`): a no-op, so the suite measures ax itself
// (submit → store → broker → claim → outcome), not handler work; and bench_sleep (P4), which awaits
// `payload.ms` (default 200) the way an IO handler awaits a remote call; and bench_latency
// (bench/latency.js), a no-op that records when it started against its payload's submit time `t`.
// Loaded by ax workers the suite starts in a child process or in-process; it imports the built
// package like a user would.
import {defineHandlers} from '../dist/index.js';
import {recordStart} from './lib/latency-sink.js';

export default defineHandlers({
  bench_noop: {
    execute() {
      // Returning nothing is success.
    },
  },
  bench_latency: {
    execute(ctx) {
      recordStart(ctx.taskId, ctx.payload.t, ctx.payload.n);
    },
  },
  bench_sleep: {
    execute(ctx) {
      const ms = typeof ctx.payload.ms === 'number' ? ctx.payload.ms : 200;
      return new Promise((resolve) => setTimeout(resolve, ms));
    },
  },
});
