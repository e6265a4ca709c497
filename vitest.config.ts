import {defineConfig} from 'vitest/config';
import {ALONE, FAST, FAULTS, SOAK, SOAK_ALONE} from './test/tiers.js';

/**
 * One project per tier (test/tiers.ts, docs/testing.md); every file is in exactly one: `fast` (npm
 * run test:fast), `full` and `alone` (npm test runs fast + full + alone), `soak` and `soak-alone`
 * (npm run test:soak; .ci/run runs it after npm test). Projects without file parallelism (alone,
 * soak-alone) run after the parallel ones, one file at a time, with the machine to themselves.
 *
 * Files run in parallel: each makes its own database and AMQP prefix (test/helpers/env.ts), spawned
 * servers listen on port 0 or a free port, tmux sessions and MySQL users are named per process or run.
 */
export default defineConfig({
  test: {
    disableConsoleIntercept: true,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: two files at a time (override: --max-workers N or VITEST_MAX_WORKERS=N).
    maxWorkers: 2,
    reporters: ['default'],
    projects: [
      {extends: true, test: {name: 'fast', include: FAST}},
      {
        extends: true,
        test: {
          name: 'full',
          include: ['test/**/*.test.ts'],
          exclude: [...FAST, ...ALONE, ...SOAK, ...SOAK_ALONE, ...FAULTS],
          // Its e2e tests run the CLI as a process, up to twenty in a row per test (~1 s of CPU each):
          // with another file on the other core their budget is twice a lone file's.
          testTimeout: 120_000,
        },
      },
      {extends: true, test: {name: 'alone', include: ALONE, fileParallelism: false}},
      {extends: true, test: {name: 'soak', include: SOAK}},
      {extends: true, test: {name: 'soak-alone', include: SOAK_ALONE, fileParallelism: false}},
      // Scenarios of minutes (and a 30-minute soak with AX_FAULTS_FULL=1): one file at a time.
      {extends: true, test: {name: 'faults', include: FAULTS, fileParallelism: false, testTimeout: 3_600_000, hookTimeout: 300_000}},
    ],
  },
});
