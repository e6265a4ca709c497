// Handlers for the benchmark suite (`npm run bench`): a no-op, so the suite measures ax itself
// (submit → store → broker → claim → outcome), not handler work. Loaded by ax workers the suite
// starts in a child process or in-process; it imports the built package like a user would.
import {defineHandlers} from '../dist/index.js';

export default defineHandlers({
  bench_noop: {
    execute() {
      // Returning nothing is success.
    },
  },
});
