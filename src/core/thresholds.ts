/**
 * The thresholds of ax's alerting, in one place for everything that judges the live system: the
 * Prometheus alert rules, `ax top`'s alert level and `ax workers`' scale-out mark (from the design
 * ax follows: backlog > 10,000 and still growing for 5 minutes pages at P2, > 100,000 at P1; one
 * machine consuming more than 1,000 tasks/s is time to scale out).
 */

/**
 * Due tasks (all types; delayed and running ones do not count) above this that keep growing for
 * BACKLOG_GROWING_MS is P2. deploy/prometheus/ax-rules.yml repeats these numbers as literals
 * (test/unit/thresholds.test.ts keeps them equal).
 */
export const BACKLOG_P2 = 10_000;
/** Due tasks above this are P1, growing or not. */
export const BACKLOG_P1 = 100_000;
/** How long the backlog must have grown (and stayed above BACKLOG_P2) for the P2 alert. */
export const BACKLOG_GROWING_MS = 5 * 60_000;
/** Attempts per second on one worker above which it is time to scale out. */
export const SCALE_OUT_TASKS_PER_S = 1000;
/** A worker whose last heartbeat is older than this many of its heartbeat intervals is stale (crashed or cut off). */
export const STALE_AFTER_BEATS = 3;
