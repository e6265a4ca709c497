import {describe, expect, it} from 'vitest';
import {doctorExitCode} from '../../src/cli/exit-codes.js';
import {diagnose} from '../../src/core/doctor/doctor.js';
import {type DoctorReadStore, gatherBroker, gatherDb} from '../../src/core/doctor/gather.js';
import {doctorSettings} from '../../src/core/doctor/settings.js';
import {AxError} from '../../src/core/errors.js';
import {fakeClock} from '../helpers/clock.js';
import {workerRow} from '../helpers/worker-row.js';
import {healthyEvidence} from '../helpers/doctor-evidence.js';
import type {BrokerEvidence, DbEvidence, DoctorData, Finding} from '../../src/core/doctor/types.js';
import type {BacklogRow, DeadErrorGroup, WorkerRow} from '../../src/core/store/types.js';
import type {QueueInfo} from '../../src/core/broker/types.js';
import type {Priority} from '../../src/core/task/model.js';
import {readyLine} from '../../src/core/doctor/checks-waiting.js';

const NOW = new Date('2026-12-01T12:00:00.000Z');
const ago = (ms: number): Date => new Date(NOW.getTime() - ms);
const settings = doctorSettings(
  {},
  {heartbeatMs: 5000, leaseMs: 30_000, poolQueueCapacity: 2000, schedulerHoldMs: 3000, schedulerLoadEveryMs: 1000},
  NOW.getTime(),
);

const worker = (over: Partial<WorkerRow> = {}): WorkerRow => workerRow(NOW, 2000, {host: 'h1', pid: 10, pools: {io: 100}, ...over});
const row = (over: Partial<BacklogRow>): BacklogRow => ({
  type: 'order_notify',
  due: 0,
  delayed: 0,
  running: 0,
  dead: 0,
  oldestDueAt: null,
  ...over,
});
const group = (error: string, count = 1, type = 'order_notify'): DeadErrorGroup => ({
  type,
  error,
  count,
  firstSeen: ago(60_000),
  lastSeen: ago(1000),
  sampleId: '00000000-0000-7000-8000-000000000001',
});

/** A healthy system: one live io worker, nothing due, nothing failed. */
const healthy = (over: Partial<DbEvidence> = {}): DbEvidence => healthyEvidence(NOW, [worker()], over);
const mq: BrokerEvidence = {
  depths: {'ax.default.io': 0, 'ax.default.cpu': 0, 'ax.default.poison': 0},
  queues: {io: 'ax.default.io', cpu: 'ax.default.cpu', poison: 'ax.default.poison'},
};

function run(db: DbEvidence, extra: Partial<DoctorData> = {}) {
  return diagnose({settings, db: {ok: true, value: db}, broker: {ok: true, value: mq}, ...extra});
}
const byId = (fs: Finding[], id: string): Finding | undefined => fs.find((f) => f.id === id);
const problems = (fs: Finding[]): string[] => fs.filter((f) => f.status === 'problem').map((f) => f.id);

describe('ax doctor checks', () => {
  it('a healthy system: no problem, no warning, exit 0', () => {
    const r = run(healthy());
    expect(r.verdict).toBe('ok');
    expect(r.counts.problem + r.counts.warn).toBe(0);
    expect(byId(r.findings, 'workers.live')?.title).toBe('1 live worker (pools io)');
    expect(doctorExitCode(r.verdict, false)).toBe(0);
  });

  describe('submitted but not running', () => {
    it('no live worker while tasks are due is a problem; the last heartbeat is the evidence', () => {
      const r = run(
        healthy({
          workers: [worker({stoppedAt: ago(60_000), heartbeatAt: ago(60_000)})],
          backlog: {at: NOW, rows: [row({due: 3, oldestDueAt: ago(5000)})]},
        }),
      );
      const f = byId(r.findings, 'workers.none');
      expect(f).toMatchObject({status: 'problem', title: 'no live worker, and 3 tasks are due'});
      expect(f?.evidence[0]).toBe('last heartbeat: w1 on h1, 1m ago');
      expect(f?.next[0]).toMatch(/^start a worker: ax worker --handlers/);
      expect(doctorExitCode(r.verdict, false)).toBe(8);
    });

    it('no worker and nothing due is only context', () => {
      expect(byId(run(healthy({workers: []})).findings, 'workers.none')?.status).toBe('info');
    });

    it('a worker that missed 3 heartbeats (AX_HEARTBEAT 5s) without stopping is stale (a warning)', () => {
      const w2 = worker({id: 'w2', heartbeatAt: ago(45_000), heartbeatAgeMs: 45_000, inFlight: 4});
      const r = run(healthy({workers: [worker(), worker({id: 'w3', heartbeatAt: ago(14_000), heartbeatAgeMs: 14_000}), w2]}));
      const f = byId(r.findings, 'workers.stale');
      expect(f?.status).toBe('warn');
      expect(f?.evidence).toEqual(['w2 on h1 pid 10: last heartbeat 45s ago, 4 in flight']);
      expect(r.verdict).toBe('warn');
      expect(doctorExitCode(r.verdict, false)).toBe(0);
      expect(doctorExitCode(r.verdict, true)).toBe(8);
    });

    it('due tasks in a pool no live worker runs: names the pool and the command to start one', () => {
      const r = run(healthy({duePools: [{type: 'image_resize', pool: 'cpu', due: 7, oldestDueAt: ago(90_000)}]}));
      const f = byId(r.findings, 'pools.unserved');
      expect(f?.status).toBe('problem');
      expect(f?.evidence).toEqual(['image_resize: 7 due in pool cpu, the oldest for 1m30s']);
      expect(f?.next).toEqual(['ax worker --handlers <module> --pools cpu']);
      expect(byId(r.findings, 'pools.served')).toBeUndefined();
    });

    it('with the type registry seam, a due type no live worker handles is a problem', () => {
      const db = healthy({duePools: [{type: 'image_resize', pool: 'io', due: 2, oldestDueAt: ago(1000)}]});
      expect(byId(run(db).findings, 'types.unhandled')).toBeUndefined();
      const r = run(db, {handledTypes: {w1: ['order_notify'], gone: ['image_resize']}});
      expect(byId(r.findings, 'types.unhandled')).toMatchObject({status: 'problem', evidence: ['image_resize: 2 due in pool io']});
      expect(byId(run(db, {handledTypes: {w1: ['image_resize']}}).findings, 'types.unhandled')).toBeUndefined();
    });

    it('tasks moved because their handler runs in the other pool: the wrong pool', () => {
      const r = run(
        healthy({failures: [group('released: this worker does not run the cpu pool; moved to its queue', 12, 'image_resize')]}),
      );
      const f = byId(r.findings, 'pools.wrong');
      expect(f?.status).toBe('warn');
      expect(f?.evidence[0]).toMatch(/^image_resize: 12 tasks moved/);
    });

    it('delayed tasks are not due yet: context, not a problem', () => {
      const r = run(healthy({backlog: {at: NOW, rows: [row({delayed: 40})]}}));
      expect(byId(r.findings, 'backlog.delayed')).toMatchObject({
        status: 'info',
        title: '40 tasks not due yet (a delay, or a retry backing off)',
      });
      expect(r.verdict).toBe('ok');
    });

    it('a due task older than --late is a problem, with the queue depths as evidence', () => {
      const late = run(healthy({backlog: {at: NOW, rows: [row({due: 5000, oldestDueAt: ago(180_000), running: 100})]}}), {
        broker: {ok: true, value: {...mq, depths: {...mq.depths, 'ax.default.io': 4000}}},
      });
      const f = byId(late.findings, 'backlog.late');
      expect(f?.status).toBe('problem');
      expect(f?.evidence).toEqual([
        'order_notify: 5000 due, the oldest for 3m, 100 running',
        'RabbitMQ ready messages: ax.default.io 4000, ax.default.cpu 0',
      ]);
      const fresh = run(healthy({backlog: {at: NOW, rows: [row({due: 10, oldestDueAt: ago(30_000)})]}}));
      expect(byId(fresh.findings, 'backlog.late')?.status).toBe('ok');
    });

    it('due tasks nobody rang past the grace: no scheduler, or the producer lost RabbitMQ', () => {
      const t = (id: string, ageMs: number) => ({
        id,
        type: 'order_notify',
        pool: 'io' as const,
        priority: 'normal' as const,
        runAt: ago(ageMs),
        scheduleName: null,
        attempt: 1,
        fence: 1,
        dedupKey: null,
      });
      const r = run(healthy({undispatched: [t('a', 60_000), t('b', 2000)]}));
      const f = byId(r.findings, 'dispatch.unrung');
      expect(f?.status).toBe('problem');
      expect(f?.evidence).toEqual(['a order_notify (pool io, attempt 1): due for 1m']);
      expect(f?.next.join('\n')).toMatch(/ax scheduler[\s\S]*ax reconcile/);
      expect(byId(run(healthy({undispatched: [t('b', 2000)]})).findings, 'dispatch.unrung')?.status).toBe('ok');
    });
  });

  describe('failing without retries', () => {
    it('tells no handler (problem), retries used up and unrecoverable (warnings) apart', () => {
      const deaths = [
        group('unknown task type "order_notify": no handler at worker w1', 4),
        group('smtp down (attempt 6 of 6, no retries left)', 9, 'mail_send'),
        group('lease expired: worker w9 stopped renewing it (attempt 6)', 1, 'mail_send'),
        group('order 7 does not exist', 2, 'order_ship'),
      ];
      const r = run(healthy({deaths, failures: [...deaths, group('smtp down', 30, 'mail_send')]}));
      expect(byId(r.findings, 'failing.no-handler')?.status).toBe('problem');
      expect(byId(r.findings, 'failing.retries-exhausted')?.evidence).toEqual([
        'mail_send: 10 tasks — "smtp down (attempt 6 of 6, no retries left)"',
      ]);
      expect(byId(r.findings, 'failing.unrecoverable')?.evidence).toEqual(['order_ship: 2 tasks — "order 7 does not exist"']);
      expect(byId(r.findings, 'failing.retrying')?.title).toMatch(/^30 failed attempts/);
      expect(byId(r.findings, 'failing.deaths')).toBeUndefined();
    });

    it('a type that never fails in under 2 ms over many attempts hints at swallowed errors (info only)', () => {
      const fast = {
        type: 'order_notify',
        attempts: 500,
        failed: 0,
        timeouts: 0,
        avgMs: 0,
        maxMs: 3,
        startLateAvgMs: null,
        startLateMaxMs: null,
      };
      const r = run(healthy({attempts: [fast, {...fast, type: 'mail_send', avgMs: 40}]}));
      const f = byId(r.findings, 'failing.swallowed');
      expect(f?.status).toBe('info');
      expect(f?.evidence).toEqual(['order_notify: 500 attempts, 0 failed, average 0 ms']);
      expect(r.verdict).toBe('ok');
    });
  });

  describe('consumption dropped', () => {
    it('claims handed back because a pool queue was full', () => {
      const r = run(healthy({failures: [group('released: io pool queue full', 250)]}));
      expect(byId(r.findings, 'workers.queue-full')?.title).toMatch(/^250 claims handed back .*AX_POOL_QUEUE=2000/);
    });

    it('a live worker with every slot busy is saturated', () => {
      const r = run(healthy({workers: [worker({inFlight: 100}), worker({id: 'w2', inFlight: 3})]}));
      expect(byId(r.findings, 'workers.saturated')?.title).toBe('1 live worker of 2 with every slot busy');
    });

    it('attempts hitting their timeout point at the downstream; otherwise the slowest types are shown', () => {
      const a = {
        type: 'order_notify',
        attempts: 400,
        failed: 12,
        timeouts: 12,
        avgMs: 2100,
        maxMs: 600_000,
        startLateAvgMs: 20,
        startLateMaxMs: 45,
      };
      const r = run(healthy({attempts: [a]}));
      expect(byId(r.findings, 'attempts.timeouts')?.evidence).toEqual([
        'order_notify: 400 attempts, 12 failed, 12 timed out; average 2.1s, longest 10m',
      ]);
      expect(byId(run(healthy({attempts: [{...a, timeouts: 0}]})).findings, 'attempts.durations')?.status).toBe('ok');
    });

    it('poison messages are a warning; breakers unknown (skipped) when the registry was not read', () => {
      const r = run(healthy(), {broker: {ok: true, value: {...mq, depths: {...mq.depths, 'ax.default.poison': 3}}}});
      expect(byId(r.findings, 'rabbitmq.poison')?.title).toMatch(/^3 messages in the poison queue ax.default.poison/);
      expect(byId(r.findings, 'breaker')?.status).toBe('skipped');
    });
  });

  describe('duplicates', () => {
    it('two successes without a forced replay are a problem; after one, context', () => {
      const r = run(
        healthy({
          repeats: [
            {taskId: 'x', type: 'order_notify', successes: 2, forced: false},
            {taskId: 'y', type: 'order_notify', successes: 2, forced: true},
          ],
        }),
      );
      expect(byId(r.findings, 'duplicates.succeeded-twice')).toMatchObject({
        status: 'problem',
        evidence: ['x order_notify: 2 successes'],
        next: ['ax tasks show x'],
      });
      expect(byId(r.findings, 'duplicates.forced')?.status).toBe('info');
    });

    it('expired leases mean a handler may have run twice', () => {
      const r = run(healthy({failures: [group('lease expired: worker w9 stopped renewing it (attempt 1)', 5)]}));
      expect(byId(r.findings, 'duplicates.lease-expired')?.title).toMatch(/^5 attempts lost their lease/);
      expect(byId(r.findings, 'duplicates.none')).toBeUndefined();
    });
  });

  describe('memory growing', () => {
    const MiB = 1024 * 1024;
    const mem = (rssSamplesMiB: number[], rssMiB = rssSamplesMiB.at(-1) ?? 100) => ({
      heartbeatMs: 5000,
      types: {},
      memory: {rssBytes: rssMiB * MiB, heapUsedBytes: 40 * MiB, sampleEveryMs: 60_000, rssSamples: rssSamplesMiB.map((x) => x * MiB)},
    });
    const steady = [120, 130, 118, 125, 131, 122, 127, 124];
    const rising = [100, 112, 125, 140, 151, 163, 178, 190];

    it('steady workers are ok and the largest is named; one whose RSS rose steadily is a warning with the evidence and next steps', () => {
      const ok = run(healthy({workers: [worker({stats: mem(steady)}), worker({id: 'w2', stats: mem([200, 210, 205, 199, 204])})]}));
      expect(byId(ok.findings, 'memory')).toMatchObject({
        status: 'ok',
        evidence: ['largest: w2 on h1 (pid 10): RSS 204.0 MiB, heap 40.0 MiB, 0 tasks held'],
      });
      const r = run(healthy({workers: [worker({stats: mem(steady)}), worker({id: 'w2', inFlight: 2100, stats: mem(rising)})]}));
      const f = byId(r.findings, 'memory.growing');
      expect(f).toMatchObject({status: 'warn', title: '1 live worker with resident memory growing steadily'});
      expect(f?.evidence).toEqual(['w2 on h1 (pid 10): RSS 100.0 MiB → 190.0 MiB over 7m (heap now 40.0 MiB), 2100 tasks held']);
      expect(f?.next.join('\n')).toMatch(/AX_POOL_QUEUE[\s\S]*--heapsnapshot-signal=SIGUSR2/);
      expect(byId(r.findings, 'memory')).toBeUndefined();
      expect(r.verdict).toBe('warn');
    });

    it('above 1 GiB is a problem whatever the trend; a young worker (few samples) is not judged on its trend', () => {
      const r = run(healthy({workers: [worker({stats: mem([1100, 1101, 1100, 1102, 1100], 1100)})]}));
      expect(byId(r.findings, 'memory.high')).toMatchObject({
        status: 'problem',
        evidence: ['w1 on h1 (pid 10): RSS 1100.0 MiB, heap 40.0 MiB, 0 tasks held'],
      });
      expect(problems(r.findings)).toEqual(['memory.high']);
      expect(byId(run(healthy({workers: [worker({stats: mem([100, 200, 300, 400])})]})).findings, 'memory')?.status).toBe('ok');
    });

    it('workers that report no memory (an older ax) or a malformed doc: not measured, said so; no live worker: skipped', () => {
      const old = run(healthy({workers: [worker({stats: {heartbeatMs: 5000, types: {}}})]}));
      expect(byId(old.findings, 'memory')).toMatchObject({
        status: 'info',
        title: expect.stringMatching(/^not measured: no live worker reports/),
      });
      const broken = {heartbeatMs: 5000, types: {}, memory: {rssBytes: 'x', rssSamples: [1]}} as never;
      expect(byId(run(healthy({workers: [worker({stats: broken})]})).findings, 'memory')?.status).toBe('info');
      expect(byId(run(healthy({workers: []})).findings, 'memory')).toMatchObject({status: 'skipped', title: 'not checked: no live worker'});
    });
  });

  describe('timing inaccurate', () => {
    it('a clock difference beyond --max-skew after the round trip is a problem, and says which way', () => {
      const behind = run(healthy({localAt: ago(2500), rttMs: 4}));
      expect(byId(behind.findings, 'timing.clock')).toMatchObject({
        status: 'problem',
        title: "this host's clock is 2.5s behind the database's",
      });
      const ahead = run(healthy({localAt: new Date(NOW.getTime() + 1500)}));
      expect(byId(ahead.findings, 'timing.clock')?.title).toBe("this host's clock is 1.5s ahead of the database's");
      // 1.5 s apart but measured over a 2 s round trip: within the uncertainty.
      expect(byId(run(healthy({localAt: ago(1500), rttMs: 2000})).findings, 'timing.clock')?.status).toBe('ok');
    });

    it("a live worker whose clock is off the database's beyond --max-skew (from its heartbeats) is a problem naming it and which way", () => {
      const clocked = (id: string, offsetMs: number, errorMs: number, over: Partial<WorkerRow> = {}): WorkerRow =>
        worker({id, stats: {heartbeatMs: 5000, types: {}, clock: {offsetMs, errorMs}}, ...over});
      const r = run(healthy({workers: [clocked('w1', 2, 1), clocked('w2', 30_000, 3), clocked('w3', -30_500, 2)]}));
      expect(byId(r.findings, 'timing.workers')).toMatchObject({
        status: 'problem',
        title: "2 live workers whose clock is off the database's by more than 1s",
        evidence: [
          "w3 on h1 (pid 10): 30.5s behind the database's ± 2ms",
          "w2 on h1 (pid 10): 30s ahead of the database's ± 3ms",
          expect.stringMatching(/^due times, leases, retries, cron and breakers use the database's clock: nothing runs early/),
        ],
        next: [expect.stringMatching(/^sync the clocks \(NTP\)/)],
      });
      expect(problems(r.findings)).toEqual(['timing.workers']);
      // Within the measurement's uncertainty, a stopped worker, a malformed doc: not a problem.
      const fine = run(
        healthy({
          workers: [
            clocked('w1', 1500, 600),
            clocked('w2', 60_000, 1, {stoppedAt: ago(60_000), heartbeatAt: ago(60_000)}),
            worker({id: 'w3', stats: {heartbeatMs: 5000, types: {}, clock: {offsetMs: 'x'}} as never}),
          ],
        }),
      );
      expect(byId(fine.findings, 'timing.workers')).toMatchObject({
        status: 'ok',
        title: "the clocks of 1 live worker agree with the database's (within 1s)",
        evidence: ["w1 on h1 (pid 10): 1.5s ahead of the database's ± 600ms"],
      });
      // No live worker reports its clock (an older ax): nothing to say.
      expect(byId(run(healthy()).findings, 'timing.workers')).toBeUndefined();
    });
  });

  it('timing: tasks that start late after due on average are a warning; on time is ok, unknown says nothing', () => {
    const a = {
      type: 'report_build',
      attempts: 10,
      failed: 0,
      timeouts: 0,
      avgMs: 50,
      maxMs: 90,
      startLateAvgMs: 4000,
      startLateMaxMs: 9000,
    };
    const f = byId(run(healthy({attempts: [a]})).findings, 'timing.start');
    expect(f).toMatchObject({status: 'warn', evidence: ['report_build: started on average 4s after due, at worst 9s']});
    expect(byId(run(healthy({attempts: [{...a, startLateAvgMs: 6, startLateMaxMs: 45}]})).findings, 'timing.start')?.status).toBe('ok');
    expect(byId(run(healthy({attempts: [{...a, startLateAvgMs: null, startLateMaxMs: null}]})).findings, 'timing.start')).toBeUndefined();
  });

  describe('servers down', () => {
    it('MySQL down: a problem, every database check skipped (memory too: it reads the heartbeats); exit 5', () => {
      const r = diagnose({
        settings,
        db: {
          ok: false,
          error: {code: 'unavailable', message: 'MySQL at … is unavailable', reason: 'unreachable', hint: 'Is the server running?'},
        },
        broker: {ok: true, value: mq},
      });
      expect(problems(r.findings)).toEqual(['mysql']);
      expect(byId(r.findings, 'mysql')).toMatchObject({evidence: ['reason: unreachable'], next: ['Is the server running?']});
      expect(byId(r.findings, 'workers')).toMatchObject({status: 'skipped', title: 'not checked: MySQL unavailable'});
      expect(byId(r.findings, 'memory')).toMatchObject({status: 'skipped', title: 'not checked: MySQL unavailable'});
      expect(r.verdict).toBe('unavailable');
      expect(doctorExitCode(r.verdict, false)).toBe(5);
    });

    it('RabbitMQ down: only the checks that need it are skipped', () => {
      const r = diagnose({
        settings,
        db: {ok: true, value: healthy()},
        broker: {ok: false, error: {code: 'unavailable', message: 'RabbitMQ at … is unavailable'}},
      });
      expect(problems(r.findings)).toEqual(['rabbitmq']);
      expect(byId(r.findings, 'rabbitmq.poison')?.status).toBe('skipped');
      expect(byId(r.findings, 'workers.live')?.status).toBe('ok');
      expect(r.verdict).toBe('unavailable');
    });
  });

  it('refuses bad thresholds as invalid input', () => {
    const cfg = {heartbeatMs: 5000, leaseMs: 30_000, poolQueueCapacity: 2000, schedulerHoldMs: 3000, schedulerLoadEveryMs: 1000};
    expect(() => doctorSettings({late: 'soon'}, cfg, NOW.getTime())).toThrow(/late/);
    expect(() => doctorSettings({since: 'yesterday'}, cfg, NOW.getTime())).toThrow(/since/);
    expect(() => doctorSettings({since: '2027-01-01T00:00:00Z'}, cfg, NOW.getTime())).toThrow(/future/);
  });
});

describe('gathering the evidence', () => {
  const empty = {at: NOW, rows: []};
  /** A store whose database clock answers after `rttMs` of the fake clock; `fail` makes one read throw. */
  function fakeStore(clock: ReturnType<typeof fakeClock>, rttMs: number, fail?: keyof DoctorReadStore): DoctorReadStore {
    const reads: DoctorReadStore = {
      clockNow: async () => {
        clock.advance(rttMs);
        return NOW;
      },
      backlog: async () => empty,
      duePerPool: async () => [],
      workersList: async () => [worker()],
      failureGroups: async () => [],
      tasksFindUndispatched: async () => [],
      successRepeats: async () => [],
      attemptTimes: async () => [],
      typesReport: async () => ({at: NOW, types: [], handlers: {}, all: [], parked: {}}),
      typeKeys: async () => ({backlog: 0, withBacklog: 0, running: 0, withRunning: 0, top: []}),
    };
    if (fail)
      reads[fail] = (async () => {
        throw new AxError('unavailable', 'MySQL went away', {details: {reason: 'unreachable'}});
      }) as never;
    return reads;
  }

  it('reads the database clock in the middle of its round trip, then everything else', async () => {
    const clock = fakeClock(NOW.getTime() - 3000);
    const db = await gatherDb(fakeStore(clock, 40), {clock, since: ago(900_000), republishAfterMs: 300_000, liveMs: 15_000});
    expect(db.ok).toBe(true);
    if (!db.ok) return;
    expect(db.value.rttMs).toBe(40);
    expect(db.value.localAt.getTime()).toBe(NOW.getTime() - 3000 + 20);
    expect(db.value.workers).toHaveLength(1);
    // 3 s apart, measured to ± 20 ms: a clock problem.
    expect(byId(run(db.value).findings, 'timing.clock')?.status).toBe('problem');
  });

  it('a read that fails makes the source an error (with the reason), never an exception', async () => {
    const clock = fakeClock(NOW.getTime());
    expect(await gatherDb(fakeStore(clock, 1, 'attemptTimes'), {clock, since: ago(1000), republishAfterMs: 1000, liveMs: 15_000})).toEqual({
      ok: false,
      error: {code: 'unavailable', message: 'MySQL went away', reason: 'unreachable'},
    });
    const opened = {code: 'unavailable', message: 'refused'};
    expect(await gatherDb(opened, {clock, since: ago(1000), republishAfterMs: 1000, liveMs: 15_000})).toEqual({ok: false, error: opened});
  });

  it('reads the queues by role without declaring them (a missing one has no depth); a broker that fails is an error', async () => {
    const q = (name: string, pool: 'io' | 'cpu' | null, messages: number | null, priority: Priority = 'normal'): QueueInfo => ({
      name,
      role: pool === null ? 'poison' : 'pool',
      pool,
      priority: pool === null ? null : priority,
      exists: messages !== null,
      messages,
      consumers: messages === null ? null : 0,
    });
    const b = await gatherBroker({
      inspectQueues: async () => [
        q('ax.eu.io.high', 'io', 2, 'high'),
        q('ax.eu.io', 'io', 3),
        q('ax.eu.cpu', 'cpu', null),
        q('ax.eu.poison', null, 1),
      ],
    });
    expect(b).toEqual({
      ok: true,
      value: {
        depths: {'ax.eu.io.high': 2, 'ax.eu.io': 3, 'ax.eu.poison': 1},
        // io and cpu name the normal-level queues; every level's depth is in the ready line.
        queues: {io: 'ax.eu.io', cpu: 'ax.eu.cpu', poison: 'ax.eu.poison'},
        poolQueues: ['ax.eu.io.high', 'ax.eu.io', 'ax.eu.cpu'],
      },
    });
    expect(readyLine((b as {value: BrokerEvidence}).value)).toBe('ax.eu.io.high 2, ax.eu.io 3, ax.eu.cpu 0');
    const down = await gatherBroker({
      inspectQueues: async () => {
        throw new AxError('unavailable', 'RabbitMQ connection is down');
      },
    });
    expect(down).toEqual({ok: false, error: {code: 'unavailable', message: 'RabbitMQ connection is down'}});
  });
});
