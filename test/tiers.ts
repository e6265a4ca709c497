/**
 * The test tiers (docs/testing.md), read by vitest.config.ts. Files not listed here are in `fast`
 * (test/unit) or `full` (the rest), so a renamed file keeps running, in another tier;
 * test/unit/tiers.test.ts checks that every listed file exists and is listed once.
 */

/**
 * Tests of `npm test` that measure time or speed under a load of their own: they run after the
 * parallel files, one at a time, so another file's load does not move their numbers.
 */
export const ALONE = [
  'test/integration/retry-race.test.ts', // every first retry within 5 s of its run_at, with both cores hogged
  'test/e2e/limits.test.ts', // --rate 100/s across 3 worker processes within ± 10 %
  'test/e2e/keys.test.ts', // --rate-per-key 20/s per key within ± 10 %, --fair start times
];

/** Issue-sized tests: tens of thousands of tasks, outages of minutes (`npm run test:soak`). */
export const SOAK = [
  'test/e2e/flow-full.test.ts', // 20k tasks through a 90 s outage, a handler 2 min late, five breaker episodes, resume --rate
  'test/e2e/archive-full.test.ts', // 200k finished tasks, the archiver killed mid-run
  'test/integration/cells.test.ts', // 50k slow tasks in one cell, the other's latency
  'test/integration/priority.test.ts', // a high task behind a 100k normal backlog
  'test/e2e/fair-full.test.ts', // --fair: 100 tasks of one key behind 100k of another; weights 3:1 over a minute
];

/** Soaks that must run with no other file at once: outbox-faults restarts the local MariaDB. */
export const SOAK_ALONE = ['test/integration/outbox-faults.test.ts'];

/**
 * The fault scenarios of issue 24 (`npm run test:faults`, short form in CI; AX_FAULTS_FULL=1 for
 * full lengths): one file at a time, since they inject latency, outages and clock skew and some start
 * their own RabbitMQ nodes.
 */
export const FAULTS = ['test/faults/**/*.test.ts'];

/** The integration tests of the fast tier: the conformance suites on the real adapters and the quick ones. */
export const FAST_INTEGRATION = [
  // Conformance suites (test/conformance).
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
  'test/integration/scheduler-stop.test.ts',
  'test/integration/worker-lanes.test.ts',
  'test/integration/worker-safety.test.ts',
  'test/integration/witness.test.ts',
];

/** The fast tier (`npm run test:fast`): every unit test and the integration tests above. */
export const FAST = ['test/unit/**/*.test.ts', ...FAST_INTEGRATION];
