/**
 * "Submitted but not running": not due yet, a backlog the workers do not drain, no live worker for
 * the pool (or, once workers report their types, for the type), the wrong pool, nobody ringing.
 */
import {formatDuration} from '../duration.js';
import type {PoolName} from '../task/model.js';
import {age, capped, countByType, finding, plural, splitWorkers} from './evidence.js';
import type {BrokerEvidence, Check, CheckContext, Finding} from './types.js';

const START_WORKER = 'start a worker: ax worker --handlers <module> (docs/operating/deploy.md, "Deploying workers")';

/** Live and stale workers; no live one while tasks are due is a problem. */
export const workersCheck: Check = {
  id: 'workers',
  symptom: 'not-running',
  run({db, settings}: CheckContext): Finding[] {
    const {live, stale} = splitWorkers(db.workers, settings.heartbeatMs);
    const due = db.backlog.rows.reduce((n, r) => n + r.due, 0);
    const out: Finding[] = [];
    if (live.length === 0) {
      const last = db.workers[0];
      out.push(
        finding(
          'workers.none',
          'not-running',
          due > 0 ? 'problem' : 'info',
          due > 0 ? `no live worker, and ${plural(due, 'task')} are due` : 'no live worker (nothing is due)',
          [
            last
              ? `last heartbeat: ${last.id} on ${last.host}, ${age(db.dbAt, last.heartbeatAt)} ago`
              : 'no worker has ever registered in this cell',
          ],
          due > 0 ? [START_WORKER] : [],
        ),
      );
    } else {
      const pools = [...new Set(live.flatMap((w) => Object.keys(w.pools)))].sort();
      out.push(finding('workers.live', 'not-running', 'ok', `${plural(live.length, 'live worker')} (pools ${pools.join(', ')})`));
    }
    if (stale.length > 0) {
      out.push(
        finding(
          'workers.stale',
          'not-running',
          'warn',
          `${plural(stale.length, 'worker')} stopped heartbeating without stopping (crashed, killed or hung)`,
          capped(
            stale.map(
              (w) => `${w.id} on ${w.host} pid ${w.pid}: last heartbeat ${age(db.dbAt, w.heartbeatAt)} ago, ${w.inFlight} in flight`,
            ),
          ),
          [
            `their running tasks are retried once the lease (${formatDuration(settings.leaseMs)}) expires; ax reconcile does it now`,
            "read the worker's log and exit code (7: an uncaught exception in handler code)",
          ],
        ),
      );
    }
    return out;
  },
};

/** Due tasks in a pool no live worker runs; with the type registry, of a type no live worker handles. */
export const poolsCheck: Check = {
  id: 'pools',
  symptom: 'not-running',
  run({db, settings, handledTypes}: CheckContext): Finding[] {
    const {live} = splitWorkers(db.workers, settings.heartbeatMs);
    if (live.length === 0) return []; // workers.none says it
    const served = new Set(live.flatMap((w) => Object.keys(w.pools)));
    const unserved = db.duePools.filter((r) => !served.has(r.pool));
    const out: Finding[] = [];
    if (unserved.length > 0) {
      const pools = [...new Set(unserved.map((r) => r.pool))] as PoolName[];
      out.push(
        finding(
          'pools.unserved',
          'not-running',
          'problem',
          `tasks are due in the ${pools.join(' and ')} pool${pools.length > 1 ? 's' : ''}, which no live worker runs`,
          capped(unserved.map((r) => `${r.type}: ${r.due} due in pool ${r.pool}, the oldest for ${age(db.dbAt, r.oldestDueAt)}`)),
          pools.map((p) => `ax worker --handlers <module> --pools ${p}`),
        ),
      );
    }
    if (handledTypes) {
      const liveIds = new Set(live.map((w) => w.id));
      const handled = new Set(Object.entries(handledTypes).flatMap(([id, types]) => (liveIds.has(id) ? types : [])));
      // Due tasks, and the ones parked "no handler" (delayed until their recheck, dead after AX_UNHANDLED_DEAD_AFTER).
      const lines = new Map<string, string[]>();
      for (const r of db.duePools)
        if (!handled.has(r.type)) lines.set(r.type, [...(lines.get(r.type) ?? []), `${r.type}: ${r.due} due in pool ${r.pool}`]);
      for (const [type, kinds] of Object.entries(db.flow?.parked ?? {}))
        if (!handled.has(type) && kinds.unhandled)
          lines.set(type, [
            ...(lines.get(type) ?? []),
            `${type}: ${kinds.unhandled} parked waiting for a handler (dead after AX_UNHANDLED_DEAD_AFTER)`,
          ]);
      const types = [...lines.keys()].sort();
      if (types.length > 0)
        out.push(
          finding(
            'types.unhandled',
            'not-running',
            'problem',
            `no live worker has a handler for ${plural(types.length, 'waiting type')}`,
            capped(types.flatMap((t) => lines.get(t) ?? [])),
            [
              ...types.slice(0, 3).map((t) => `ax types show ${t}   (which workers handled it, its parked tasks)`),
              'deploy a worker whose handlers module defines these types: ax worker --handlers <module>',
            ],
          ),
        );
    }
    if (out.length === 0)
      out.push(
        finding(
          'pools.served',
          'not-running',
          'ok',
          'every pool with due tasks has a live worker',
          handledTypes
            ? []
            : ['per type: not known until workers report their handled types; a missing handler shows as failing.no-handler'],
        ),
      );
    return out;
  },
};

/** Claims handed back because the task's handler runs in another pool: submitted to the wrong pool. */
export const wrongPoolCheck: Check = {
  id: 'pools.wrong',
  symptom: 'not-running',
  run({db}: CheckContext): Finding[] {
    const moved = countByType(db.failures, (e) => /^released: this worker does not run the \w+ pool/.test(e));
    if (moved.length === 0) return [];
    return [
      finding(
        'pools.wrong',
        'not-running',
        'warn',
        `${plural(moved.length, 'type')} submitted to a pool their handler does not run in (each task is moved, one extra claim and ring)`,
        capped(moved.map((m) => `${m.type}: ${plural(m.count, 'task')} moved — "${m.sample.error ?? ''}"`)),
        ["submit them with the handler's pool (SDK: pool: 'cpu'; ax submit --pool cpu; ax cron add --pool cpu)"],
      ),
    ];
  },
};

/** Tasks not due yet: delayed, or backing off before a retry. Context, never wrong. */
export const notDueCheck: Check = {
  id: 'backlog.delayed',
  symptom: 'not-running',
  run({db}: CheckContext): Finding[] {
    const rows = db.backlog.rows.filter((r) => r.delayed > 0).sort((a, b) => b.delayed - a.delayed);
    if (rows.length === 0) return [];
    const total = rows.reduce((n, r) => n + r.delayed, 0);
    return [
      finding(
        'backlog.delayed',
        'not-running',
        'info',
        `${plural(total, 'task')} not due yet (a delay, or a retry backing off)`,
        capped(rows.map((r) => `${r.type}: ${r.delayed} delayed`)),
        rows.slice(0, 1).map((r) => `ax tasks list --type ${r.type} --state submitted (or --state failed for retries)`),
      ),
    ];
  },
};

/** Due tasks older than `lateAfterMs`: the workers do not keep up, or nobody consumes. */
export const lateCheck: Check = {
  id: 'backlog.late',
  symptom: 'not-running',
  run({db, broker, settings}: CheckContext): Finding[] {
    const late = db.backlog.rows
      .filter((r) => r.oldestDueAt !== null && db.dbAt.getTime() - r.oldestDueAt.getTime() > settings.lateAfterMs)
      .sort((a, b) => a.oldestDueAt!.getTime() - b.oldestDueAt!.getTime());
    if (late.length === 0) {
      const due = db.backlog.rows.reduce((n, r) => n + r.due, 0);
      return [
        finding('backlog.late', 'not-running', 'ok', `no due task waits longer than ${formatDuration(settings.lateAfterMs)} (${due} due)`),
      ];
    }
    const evidence = capped(
      late.map((r) => `${r.type}: ${r.due} due, the oldest for ${age(db.dbAt, r.oldestDueAt!)}, ${r.running} running`),
    );
    if (broker) evidence.push(`RabbitMQ ready messages: ${readyLine(broker)}`);
    return [
      finding(
        'backlog.late',
        'not-running',
        'problem',
        `${plural(late.length, 'type')} with due tasks waiting longer than ${formatDuration(settings.lateAfterMs)}`,
        evidence,
        [
          'if workers run and the queues hold messages: consumption is behind — add workers or raise --io-concurrency (see the slow findings)',
          "if the queues are empty: the tasks were never rung — see dispatch.unrung (tasks whose producer died between its commit and its publish count as rung until AX_REPUBLISH_AFTER has passed; the scheduler's reconciler then rings them)",
          `ax tasks list --type ${late[0]!.type} --state submitted`,
        ],
      ),
    ];
  },
};

/**
 * Due tasks that nobody rang (no scheduler; a producer that lost RabbitMQ) or whose doorbell nobody
 * claimed. A producer that died between its commit and its publish left its rows marked rung: they
 * show here only once the mark is older than republishAfter (the reconciler's own cut).
 */
export const unrungCheck: Check = {
  id: 'dispatch.unrung',
  symptom: 'not-running',
  run({db, settings}: CheckContext): Finding[] {
    const cut = db.dbAt.getTime() - settings.unrungAfterMs;
    const unrung = db.undispatched.filter((t) => t.runAt.getTime() < cut);
    if (unrung.length === 0) return [finding('dispatch.unrung', 'not-running', 'ok', 'every due task has been rung for')];
    return [
      finding(
        'dispatch.unrung',
        'not-running',
        'problem',
        `${unrung.length}${unrung.length === db.undispatched.length && unrung.length >= 100 ? '+' : ''} due tasks not rung for (or rung long ago and never claimed)`,
        capped(unrung.map((t) => `${t.id} ${t.type} (pool ${t.pool}, attempt ${t.attempt}): due for ${age(db.dbAt, t.runAt)}`)),
        [
          'ax scheduler must run (one per cell): it rings delayed tasks and retries and rescues expired leases',
          'ax reconcile rings them once now',
          `ax tasks show ${unrung[0]!.id}`,
        ],
      ),
    ];
  },
};

/** "ax.default.io.high 0, ax.default.io 12, …, ax.default.cpu 0": every pool queue, each level. */
export function readyLine(b: BrokerEvidence): string {
  return (b.poolQueues ?? [b.queues.io, b.queues.cpu]).map((q) => `${q} ${b.depths[q] ?? 0}`).join(', ');
}
