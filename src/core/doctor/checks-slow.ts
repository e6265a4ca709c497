/**
 * "Consumption dropped": the worker's local pool queue full (claims handed back), every slot busy,
 * slow downstream (attempts timing out, long attempts), the poison queue; the breaker once ax has one.
 */
import {formatDuration} from '../duration.js';
import {capped, countByType, finding, plural, splitWorkers} from './evidence.js';
import type {Check, CheckContext, Finding} from './types.js';

/** Claims handed back because the pool's local queue was full (AX_POOL_QUEUE). */
export const queueFullCheck: Check = {
  id: 'workers.queue-full',
  symptom: 'slow',
  run({db, settings}: CheckContext): Finding[] {
    const full = countByType(db.failures, (e) => /^released: \w+ pool queue full/.test(e));
    if (full.length === 0) return [];
    const total = full.reduce((n, f) => n + f.count, 0);
    return [
      finding(
        'workers.queue-full',
        'slow',
        'warn',
        `${plural(total, 'claim')} handed back since ${settings.since.toISOString()}: a worker's pool queue (AX_POOL_QUEUE=${settings.poolQueueCapacity}) was full`,
        capped(full.map((f) => `${f.type}: ${f.count} handed back — "${f.sample.error ?? ''}"`)),
        [
          'the pool cannot take more: add workers, or a larger pool (--io-concurrency / --cpu-threads); a larger queue only holds more in memory',
        ],
      ),
    ];
  },
};

/** Live workers with every execution slot busy. */
export const saturationCheck: Check = {
  id: 'workers.saturated',
  symptom: 'slow',
  run({db, settings}: CheckContext): Finding[] {
    const {live} = splitWorkers(db.workers, settings.heartbeatMs);
    const busy = live.filter((w) => {
      const slots = Object.values(w.pools).reduce((n, x) => n + x, 0);
      return slots > 0 && w.inFlight >= slots;
    });
    if (busy.length === 0) return [];
    return [
      finding(
        'workers.saturated',
        'slow',
        'warn',
        `${plural(busy.length, 'live worker')} of ${live.length} with every slot busy`,
        capped(busy.map((w) => `${w.id} on ${w.host}: ${w.inFlight} in flight, slots ${JSON.stringify(w.pools)}`)),
        ['if attempts are slow (see attempts.*), the downstream is the limit: more workers will not help; otherwise add workers'],
      ),
    ];
  },
};

/** Attempt durations of the window; attempts that hit their timeout mean a slow or hanging downstream. */
export const slowCheck: Check = {
  id: 'attempts',
  symptom: 'slow',
  run({db, settings}: CheckContext): Finding[] {
    const since = settings.since.toISOString();
    if (db.attempts.length === 0) return [finding('attempts.none', 'slow', 'info', `no attempt ended since ${since}`)];
    const line = (a: (typeof db.attempts)[number]): string =>
      `${a.type}: ${a.attempts} attempts, ${a.failed} failed, ${a.timeouts} timed out; average ${formatDuration(a.avgMs)}, longest ${formatDuration(a.maxMs)}`;
    const timedOut = db.attempts.filter((a) => a.timeouts > 0).sort((a, b) => b.timeouts - a.timeouts);
    if (timedOut.length > 0)
      return [
        finding(
          'attempts.timeouts',
          'slow',
          'warn',
          `${plural(timedOut.length, 'type')} with attempts that hit their timeout since ${since} (a slow or hanging downstream)`,
          capped(timedOut.map(line)),
          [
            `ax errors --type ${timedOut[0]!.type} --since ${since}`,
            'check the downstream the handler calls; a breaker (not in ax yet) would stop feeding it',
          ],
        ),
      ];
    const slowest = [...db.attempts].sort((a, b) => b.avgMs - a.avgMs);
    return [
      finding('attempts.durations', 'slow', 'ok', `no attempt timed out since ${since}; the slowest types:`, capped(slowest.map(line))),
    ];
  },
};

/** Doorbells no worker could read (moved to the poison queue). */
export const poisonCheck: Check = {
  id: 'rabbitmq.poison',
  symptom: 'slow',
  needsBroker: true,
  run({broker}: CheckContext): Finding[] {
    const n = broker ? (broker.depths[broker.queues.poison] ?? 0) : 0;
    if (n === 0) return [];
    return [
      finding(
        'rabbitmq.poison',
        'slow',
        'warn',
        `${plural(n, 'message')} in the poison queue ${broker!.queues.poison} (doorbells a worker could not read)`,
        [],
        [`rabbitmqctl list_queues name messages | grep ${broker!.queues.poison}; the worker logs say why each was poisoned`],
      ),
    ];
  },
};
