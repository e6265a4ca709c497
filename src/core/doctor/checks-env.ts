/** "Timing inaccurate" (clock skew between this host and the database) and "memory growing". */
import {formatDuration} from '../duration.js';
import {finding} from './evidence.js';
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
