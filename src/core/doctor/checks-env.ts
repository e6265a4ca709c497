/** "Timing inaccurate" (clock skew between this host and the database) and "memory growing". */
import {formatDuration} from '../duration.js';
import {capped, finding, plural} from './evidence.js';
import type {Check, CheckContext, Finding, StandaloneCheck} from './types.js';

/**
 * The database clock against this host's, read in the middle of one round trip: the difference is
 * known to ± half the round trip. Due times, leases and the wheel run on the database clock; a
 * host whose clock is off submits explicit `runAt` times early or late by the difference, and its
 * log times disagree with the history's.
 */
export const clockCheck: Check = {
  id: 'timing.clock',
  symptom: 'timing',
  run({db, settings}: CheckContext): Finding[] {
    const skew = db.dbAt.getTime() - db.localAt.getTime();
    const margin = db.rttMs / 2;
    const sure = Math.max(0, Math.abs(skew) - margin);
    const evidence = [
      `database ${db.dbAt.toISOString()}, this host ${db.localAt.toISOString()}: ${skew >= 0 ? '+' : '-'}${formatDuration(Math.abs(skew))} ± ${formatDuration(margin)}`,
    ];
    if (sure <= settings.maxSkewMs)
      return [
        finding(
          'timing.clock',
          'timing',
          'ok',
          `this host's clock agrees with the database's (within ${formatDuration(settings.maxSkewMs)})`,
          evidence,
        ),
      ];
    return [
      finding(
        'timing.clock',
        'timing',
        'problem',
        `this host's clock is ${formatDuration(Math.abs(skew))} ${skew > 0 ? 'behind' : 'ahead of'} the database's`,
        [...evidence, 'explicit runAt times submitted from here are off by as much; due times themselves use the database clock'],
        ['sync the clocks (NTP): timedatectl status, chronyc tracking — here and on the database host'],
      ),
    ];
  },
};

/** Average start lateness (claim − run_at) beyond which a type's tasks start late. */
export const LATE_START_AVG_MS = 1000;

/**
 * When attempts started compared with when their tasks were due (latest attempts of the window):
 * a backlog delays starts too, but without one a late start is the wheel ringing late (a starved
 * or missing scheduler).
 */
export const lateStartCheck: Check = {
  id: 'timing.start',
  symptom: 'timing',
  run({db, settings}: CheckContext): Finding[] {
    const known = db.attempts.filter((a) => a.startLateAvgMs !== null).sort((a, b) => b.startLateAvgMs! - a.startLateAvgMs!);
    if (known.length === 0) return [];
    const late = known.filter((a) => a.startLateAvgMs! > LATE_START_AVG_MS);
    const line = (a: (typeof known)[number]): string =>
      `${a.type}: started on average ${formatDuration(a.startLateAvgMs!)} after due, at worst ${formatDuration(a.startLateMaxMs ?? 0)}`;
    const since = settings.since.toISOString();
    if (late.length === 0)
      return [
        finding(
          'timing.start',
          'timing',
          'ok',
          `attempts since ${since} started within ${formatDuration(LATE_START_AVG_MS)} of due on average`,
          capped(known.map(line)),
        ),
      ];
    return [
      finding(
        'timing.start',
        'timing',
        'warn',
        `${plural(late.length, 'type')} whose tasks started more than ${formatDuration(LATE_START_AVG_MS)} after due on average since ${since}`,
        capped(late.map(line)),
        [
          'with a backlog (backlog.late), the workers are behind; without one the scheduler rings late: is one running, starved of CPU (AX_SCHEDULER_TICK)?',
        ],
      ),
    ];
  },
};

/**
 * Memory is not measured: workers do not report their memory to the database (the `workers` row
 * has no such column). Their own endpoints do: /metrics carries process_resident_memory_bytes
 * once the metrics land.
 */
export const memoryCheck: StandaloneCheck = {
  id: 'memory',
  symptom: 'memory',
  standalone: true,
  run(): Finding[] {
    return [
      finding(
        'memory',
        'memory',
        'skipped',
        'not measured here: workers do not report memory in their heartbeat',
        ["a worker's memory is bounded by its pools: concurrency + AX_POOL_QUEUE tasks per pool, each with its payload (AX_PAYLOAD_LIMIT)"],
        ["watch the worker's resident memory (its /metrics, the container's memory); a lower AX_POOL_QUEUE holds fewer tasks in memory"],
      ),
    ];
  },
};
