import {defineConfig} from 'vitest/config';

/**
 * The test tiers (docs/testing.md). Every file is in exactly one:
 * - fast: the unit tests, the conformance suites on MySQL and RabbitMQ, and the quick integration
 *   tests (`npm run test:fast`, < 3 min);
 * - full: the other integration and the end-to-end tests (`npm test` runs fast + full);
 * - soak: the issue-sized tests (`npm run test:soak`; .ci/run runs it after `npm test`);
 * - soak-alone: soaks that must run with no other test at once: vitest runs a project without file
 *   parallelism after the parallel ones.
 *
 * Files run in parallel (maxWorkers forks): each makes its own database and AMQP prefix
 * (test/helpers/env.ts), spawned servers take port 0 or a free port, tmux sessions and MySQL users
 * are named per process or run.
 */

/** Issue-sized tests: tens of thousands of tasks, outages of minutes. */
const SOAK = [
  'test/e2e/flow-full.test.ts', // 20k tasks through a 90 s outage, a handler 2 min late, five breaker episodes, resume --rate
  'test/e2e/archive-full.test.ts', // 200k finished tasks, the archiver killed mid-run
  'test/integration/cells.test.ts', // 50k slow tasks in one cell, the other's latency
  'test/integration/priority.test.ts', // a high task behind a 100k normal backlog
];

/** Soaks that must run alone: outbox-faults restarts the local MariaDB (every other file's connections die). */
const SOAK_ALONE = ['test/integration/outbox-faults.test.ts'];

/** The integration tests of the fast tier: the conformance suites and the quick ones. */
const FAST_INTEGRATION = [
  // Conformance suites (test/conformance) on the real adapters.
  'test/integration/store.test.ts',
  'test/integration/broker.test.ts',
  'test/integration/archive.test.ts',
  'test/integration/doctor-store.test.ts',
  'test/integration/flow-store.test.ts',
  'test/integration/outbox-store.test.ts',
  // Quick ones.
  'test/integration/archive-plan.test.ts',
  'test/integration/breaker-half-open.test.ts',
  'test/integration/db-open.test.ts',
  'test/integration/dlq-scan.test.ts',
  'test/integration/explain.test.ts',
  'test/integration/flow-model.test.ts',
  'test/integration/migrate.test.ts',
  'test/integration/outbox-checks.test.ts',
  'test/integration/pause-local-queue.test.ts',
  'test/integration/producer-doorbells.test.ts',
  'test/integration/producer.test.ts',
  'test/integration/retry-race.test.ts',
  'test/integration/scheduler-stop.test.ts',
  'test/integration/worker-lanes.test.ts',
  'test/integration/worker-safety.test.ts',
];

const FAST = ['test/unit/**/*.test.ts', ...FAST_INTEGRATION];

export default defineConfig({
  test: {
    disableConsoleIntercept: true,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: two files at a time (override: --max-workers N or VITEST_MAX_WORKERS).
    maxWorkers: 2,
    reporters: ['default'],
    projects: [
      {extends: true, test: {name: 'fast', include: FAST}},
      {extends: true, test: {name: 'full', include: ['test/**/*.test.ts'], exclude: [...FAST, ...SOAK, ...SOAK_ALONE]}},
      {extends: true, test: {name: 'soak', include: SOAK}},
      {extends: true, test: {name: 'soak-alone', include: SOAK_ALONE, fileParallelism: false}},
    ],
  },
});
