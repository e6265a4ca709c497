/** "Timing inaccurate" (clock skew between this host or a worker's and the database) and "memory growing". */
import {formatDuration} from '../duration.js';
import {capped, finding, plural, splitWorkers} from './evidence.js';
import {memoryTrend, mib, validMemory, WORKER_RSS_PROBLEM_BYTES, type WorkerMemoryDoc} from '../memory.js';
import type {ClockOffset, WorkerRow} from '../store/types.js';
import type {Check, CheckContext, Finding} from './types.js';

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

/** A heartbeat's clock doc when it has the expected shape, else null (an older ax, or a newer or broken writer's). */
export function validClockOffset(c: unknown): ClockOffset | null {
  if (c === undefined || c === null || typeof c !== 'object') return null;
  const d = c as Partial<ClockOffset>;
  return Number.isFinite(d.offsetMs) && Number.isFinite(d.errorMs) && (d.errorMs as number) >= 0 ? (d as ClockOffset) : null;
}

/**
 * The clock of every live worker against the database's, from its heartbeats (each worker
 * measures it at its flow refresh: WorkerStatsDoc.clock). ax itself decides on the database's
 * clock — due times, leases, retries, cron, breakers — so a worker whose host clock is off runs
 * nothing early and holds no lease late; but its handlers' own Date.now(), its log times and the
 * explicit runAt times its code submits are off by as much. A problem beyond --max-skew after the
 * measurement's uncertainty; says nothing when no live worker reports a clock (an older ax).
 */
export const workerClockCheck: Check = {
  id: 'timing.workers',
  symptom: 'timing',
  run({db, settings}: CheckContext): Finding[] {
    const {live} = splitWorkers(db.workers, settings.heartbeatMs);
    const measured = live.flatMap((w) => {
      const c = validClockOffset(w.stats?.clock);
      return c ? [{w, c}] : [];
    });
    if (measured.length === 0) return [];
    const line = ({w, c}: (typeof measured)[number]) =>
      `${w.id} on ${w.host} (pid ${w.pid}): ${formatDuration(Math.abs(c.offsetMs))} ${c.offsetMs > 0 ? 'ahead of' : 'behind'} the database's ± ${formatDuration(c.errorMs)}`;
    const off = measured
      .filter(({c}) => Math.abs(c.offsetMs) - c.errorMs > settings.maxSkewMs)
      .sort((a, b) => Math.abs(b.c.offsetMs) - Math.abs(a.c.offsetMs));
    if (off.length === 0)
      return [
        finding(
          'timing.workers',
          'timing',
          'ok',
          `the clocks of ${plural(measured.length, 'live worker')} agree with the database's (within ${formatDuration(settings.maxSkewMs)})`,
          capped(measured.map(line)),
        ),
      ];
    return [
      finding(
        'timing.workers',
        'timing',
        'problem',
        `${plural(off.length, 'live worker')} whose clock is off the database's by more than ${formatDuration(settings.maxSkewMs)}`,
        [
          ...capped(off.map(line)),
          "due times, leases, retries, cron and breakers use the database's clock: nothing runs early; the handlers' own time, log times and runAt times submitted from there are off by as much",
        ],
        ['sync the clocks (NTP) of those hosts: timedatectl status, chronyc tracking'],
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

const MEMORY_NEXT = [
  'a worker holds at most concurrency + AX_POOL_QUEUE tasks per pool, each with its payload: if `ax workers` shows it holding many, a lower AX_POOL_QUEUE holds fewer in memory',
  'fat payloads cost memory and CPU on every claim: keep payloads small (AX_PAYLOAD_LIMIT) and big fields elsewhere',
  'to see what holds it: run the worker with NODE_OPTIONS=--heapsnapshot-signal=SIGUSR2, then `kill -USR2 <pid>` writes a .heapsnapshot in its working directory (open it in Chrome DevTools, Memory)',
];

/**
 * "Memory growing", from the memory each live worker reports with its heartbeat (core/memory.ts):
 * a problem above WORKER_RSS_PROBLEM_BYTES, a warning when its resident memory grew steadily over
 * the last samples (memoryTrend), else ok with the largest. Workers that report none (an older
 * ax) are named; with none reporting, the check says it could not measure.
 */
export const memoryCheck: Check = {
  id: 'memory',
  symptom: 'memory',
  run({db, settings}: CheckContext): Finding[] {
    const {live} = splitWorkers(db.workers, settings.heartbeatMs);
    const measured = live.flatMap((w) => {
      const m = validMemory(w.stats?.memory);
      return m ? [{w, m}] : [];
    });
    const where = (w: WorkerRow) => `${w.id} on ${w.host} (pid ${w.pid})`;
    if (measured.length === 0)
      return [
        finding(
          'memory',
          'memory',
          live.length === 0 ? 'skipped' : 'info',
          live.length === 0 ? 'not checked: no live worker' : 'not measured: no live worker reports its memory (an ax older than this one)',
          [],
          ["watch the worker's resident memory on its /metrics (process_resident_memory_bytes) or the container's"],
        ),
      ];
    const line = (w: WorkerRow, m: WorkerMemoryDoc) =>
      `${where(w)}: RSS ${mib(m.rssBytes)}, heap ${mib(m.heapUsedBytes)}, ${w.inFlight} tasks held`;
    const high = measured.filter(({m}) => m.rssBytes > WORKER_RSS_PROBLEM_BYTES);
    const growing = measured.flatMap(({w, m}) => {
      const t = memoryTrend(m.rssSamples, m.sampleEveryMs);
      return t.growing ? [{w, m, t}] : [];
    });
    const out: Finding[] = [];
    if (high.length > 0)
      out.push(
        finding(
          'memory.high',
          'memory',
          'problem',
          `${plural(high.length, 'live worker')} above ${mib(WORKER_RSS_PROBLEM_BYTES)} resident memory`,
          capped(high.map(({w, m}) => line(w, m))),
          MEMORY_NEXT,
        ),
      );
    if (growing.length > 0)
      out.push(
        finding(
          'memory.growing',
          'memory',
          'warn',
          `${plural(growing.length, 'live worker')} with resident memory growing steadily`,
          capped(
            growing.map(
              ({w, m, t}) =>
                `${where(w)}: RSS ${mib(t.fromBytes)} → ${mib(t.toBytes)} over ${formatDuration(t.spanMs)} (heap now ${mib(m.heapUsedBytes)}), ${w.inFlight} tasks held`,
            ),
          ),
          MEMORY_NEXT,
        ),
      );
    const unreported = live.length - measured.length;
    if (out.length === 0) {
      const top = measured.reduce((a, b) => (b.m.rssBytes > a.m.rssBytes ? b : a));
      out.push(
        finding('memory', 'memory', 'ok', `no live worker's memory is growing (${plural(measured.length, 'worker')} reporting)`, [
          `largest: ${line(top.w, top.m)}`,
          ...(unreported > 0 ? [`${plural(unreported, 'live worker')} report no memory (an older ax)`] : []),
        ]),
      );
    }
    return out;
  },
};
