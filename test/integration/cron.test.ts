/**
 * Cron schedules against the real servers, with in-process schedulers (their cron hooks), a worker
 * and cron services, as `ax scheduler` and `ax worker` run them: the first occurrence is created by
 * a scheduler's load and each occurrence runs at its fire time, then the next is created as a
 * delayed task; two schedulers create every occurrence once; misfire after downtime; overlap;
 * repair of a deleted occurrence; pause and resume.
 *
 * Driving time. Fire times have minute resolution, so waiting for real ones would take up to a
 * minute per step. Instead a schedule's pending occurrence is moved to a moment 1–2 s ahead: its
 * `next_fire_at` is set in SQL and the occurrence's task is created with the cron service's
 * repair(), which creates the task of the fire time in `next_fire_at` when it is missing.
 * (materialize() cannot do this: it treats `next_fire_at` as already created and only plans the
 * fire times after it, once it has passed.) The scheduler then fires that occurrence and plans the
 * next real fire time of the expression, exactly as after a regular one. Downtime is simulated by
 * moving `next_fire_at` hours back.
 */
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest';
import type {Broker} from '../../src/core/broker/types.js';
import {reconcile} from '../../src/core/reconcile/reconcile.js';
import {lastFireAtOrBefore, nextFireTimes, parseSchedule} from '../../src/core/cron/parse.js';
import type {CronInput} from '../../src/core/cron/schedule.js';
import {createCronService, occurrenceKey, type CronService} from '../../src/core/cron/service.js';
import type {Scheduler} from '../../src/core/scheduler/scheduler.js';
import {createSchedulerService} from '../../src/core/scheduler/service.js';
import {idFromDedupKey} from '../../src/core/task/id.js';
import {createWorkerService} from '../../src/core/worker/service.js';
import type {Worker} from '../../src/core/worker/worker.js';
import {createTestEnv, eventually, type TestEnv} from '../helpers/env.js';
import {ATTEMPT_STARTS} from '../helpers/history.js';

const HANDLERS = new URL('../fixtures/handlers.js', import.meta.url).href;
const SCHED = {schedulerHorizonMs: 2000, schedulerLoadEveryMs: 200, schedulerHoldMs: 1000, rescueEveryMs: 500};
const MINUTE = 60_000;
const HOUR = 3_600_000;

interface Occurrence {
  id: string;
  state: string;
  run_at: Date;
  dedup_key: string;
  created_at: Date;
  published_at: Date | null;
}

describe('cron schedules', () => {
  let env: TestEnv;
  let worker: Worker;
  let broker: Broker;
  const schedulers: Scheduler[] = [];

  /** A cron service on its own store connection, as each scheduler process has. */
  const cronService = async (actor: string, opts: {broker?: boolean} = {}): Promise<CronService> =>
    createCronService({...env.rt, actor, store: await env.store(), ...(opts.broker ? {broker} : {})});

  /** A scheduler with the cron hooks, as `ax scheduler` builds it. */
  const startScheduler = async (id: string, config = env.config): Promise<Scheduler> => {
    const store = await env.store();
    const cron = createCronService({...env.rt, config, store, actor: id});
    const s = createSchedulerService({...env.rt, config, store, broker: await env.broker({reconnect: true}), id, hooks: cron.hooks()});
    await s.start();
    schedulers.push(s);
    return s;
  };

  /** Every running scheduler does `n` full passes (load, fire, rescue, reconcile): no waiting for periods. */
  const passes = async (n = 2): Promise<void> => {
    for (let i = 0; i < n; i++) await Promise.all(schedulers.map((x) => x.runOnce()));
  };

  const add = (cron: CronService, input: Partial<CronInput> & {name: string}) =>
    cron.add({cron: '0 0 1 1 *', tz: 'UTC', type: 'test_noop', ...input});

  const occurrences = (name: string) =>
    env.sql<Occurrence>(
      'SELECT id, state, run_at, dedup_key, created_at, published_at FROM tasks WHERE schedule_name = ? ORDER BY run_at, id',
      [name],
    );

  const schedule = async (name: string) =>
    (
      await env.sql<{next_fire_at: Date | null; paused: number; last_task_id: string | null; last_fire_at: Date | null}>(
        'SELECT next_fire_at, paused, last_task_id, last_fire_at FROM cron_schedules WHERE name = ?',
        [name],
      )
    )[0]!;

  /** Moves a schedule's pending fire time to `deltaMs` from the database's now; returns it. */
  const setNextFire = async (name: string, deltaMs: number): Promise<number> => {
    await env.sql('UPDATE cron_schedules SET next_fire_at = NOW(3) + INTERVAL ? MICROSECOND WHERE name = ?', [deltaMs * 1000, name]);
    return (await schedule(name)).next_fire_at!.getTime();
  };

  /** Times (database clock) a task started running, in order. */
  const starts = async (id: string) =>
    (await env.sql<{at: Date}>(`SELECT at FROM ${ATTEMPT_STARTS} s WHERE task_id = ? ORDER BY attempt`, [id])).map((r) => r.at.getTime());

  const stateOf = async (id: string) => (await env.sql<{state: string}>('SELECT state FROM tasks WHERE id = ?', [id]))[0]?.state;

  const dbNow = async () => (await env.sql<{now: Date}>('SELECT NOW(3) AS now'))[0]!.now.getTime();

  /** Every 2 hours at a minute half an hour from now's: no fire time near now (the misfire tolerance). */
  const everyTwoHours = async (): Promise<string> => `${(new Date(await dbNow()).getUTCMinutes() + 30) % 60} */2 * * *`;

  beforeAll(async () => {
    env = await createTestEnv(SCHED);
    broker = await env.broker({reconnect: true});
    worker = await createWorkerService({
      ...env.rt,
      config: env.config,
      store: await env.store(),
      broker,
      handlersModule: HANDLERS,
      pools: ['io'],
    });
    await worker.start();
  });

  // Every test starts its own schedulers and schedules; none outlives it, even when it fails.
  afterEach(async () => {
    for (const s of schedulers.splice(0)) await s.stop();
    await env.sql('DELETE FROM cron_schedules');
  });

  afterAll(async () => {
    await worker?.stop({graceMs: 1000});
    await env?.dispose();
  });

  it('(a) a scheduler load creates the first occurrence; an occurrence runs at its fire time, then the next is created as a delayed task', async () => {
    const cron = await cronService('test-a');
    const first = await add(cron, {name: 'a-first', cron: '0 2 * * *', tz: 'Asia/Shanghai'});
    await add(cron, {name: 'a-minute', cron: '* * * * *', payload: {drive: true}});
    // The pending occurrence of a-minute, 1.5 s from now (see the top comment), before any load.
    const fireAt = await setNextFire('a-minute', 1500);
    expect(await cron.repair()).toEqual(['a-minute']);
    const [pending] = await occurrences('a-minute');
    expect(pending).toMatchObject({
      id: idFromDedupKey('default', occurrenceKey('a-minute', fireAt)),
      state: 'submitted',
      published_at: null,
    });

    await startScheduler('sched-a');

    // The scheduler's first load created a-first's first occurrence: its next fire time, as a delayed task.
    const expected = nextFireTimes(parseSchedule('0 2 * * *', 'Asia/Shanghai'), first.createdAt.getTime(), 1)[0]!;
    const [occ] = await occurrences('a-first');
    expect(occ).toMatchObject({state: 'submitted', dedup_key: occurrenceKey('a-first', expected), published_at: null});
    expect(occ!.run_at.getTime()).toBe(expected);
    expect(occ!.run_at.getTime()).toBeGreaterThan(occ!.created_at.getTime());
    expect((await schedule('a-first')).next_fire_at?.getTime()).toBe(expected);

    // a-minute's occurrence runs at its fire time, not before, and promptly.
    await eventually(async () => (await stateOf(pending!.id)) === 'succeeded', 10_000, 'the occurrence to run');
    const [started] = await starts(pending!.id);
    expect(started).toBeGreaterThanOrEqual(fireAt);
    expect(started! - fireAt).toBeLessThan(2000);

    // Then the next fire time of `* * * * *` after it is created as a delayed task.
    const next = Math.floor(fireAt / MINUTE) * MINUTE + MINUTE;
    const rows = await eventually(
      async () => {
        const r = await occurrences('a-minute');
        return r.length === 2 ? r : null;
      },
      5000,
      'the next occurrence',
    );
    expect(rows[1]).toMatchObject({
      id: idFromDedupKey('default', occurrenceKey('a-minute', next)),
      dedup_key: occurrenceKey('a-minute', next),
    });
    expect(rows[1]!.run_at.getTime()).toBe(next);
    expect(rows[1]!.created_at.getTime()).toBeGreaterThanOrEqual(fireAt);
    expect(rows[1]!.created_at.getTime()).toBeLessThan(next);
    // next_fire_at: the pending occurrence; last_*: the one that has fired. The schedule row is
    // advanced after its occurrence is written (a separate statement), so wait for it.
    const want = {next_fire_at: new Date(next), last_task_id: pending!.id, last_fire_at: new Date(fireAt)};
    await eventually(
      async () => {
        const s = await schedule('a-minute');
        return s.next_fire_at?.getTime() === next && s.last_task_id === pending!.id ? s : null;
      },
      5000,
      'the schedule to advance',
    );
    expect(await schedule('a-minute')).toMatchObject(want);
  });

  it('a schedule carries a priority: its occurrences (planned or triggered) are at that level and run from its queue', async () => {
    const cron = await cronService('test-prio', {broker: true});
    const added = await add(cron, {name: 'p-high', cron: await everyTwoHours(), priority: 'high'});
    expect(added.priority).toBe('high');
    await expect(add(cron, {name: 'p-bad', priority: 'urgent' as never})).rejects.toThrow(/priority "urgent" is not a level/);
    expect(await env.sql("SELECT name FROM cron_schedules WHERE name = 'p-bad'")).toEqual([]);
    // A scheduler's load plans the first occurrence.
    await startScheduler('sched-prio');
    await passes(1);
    await eventually(async () => (await occurrences('p-high')).length === 1, 5000, 'the planned occurrence');
    const {taskId} = await cron.trigger('p-high');
    const rows = await env.sql<{id: string; priority: string}>('SELECT id, priority FROM tasks WHERE schedule_name = ? ORDER BY id', [
      'p-high',
    ]);
    expect(rows.map((r) => r.priority)).toEqual(['high', 'high']);
    // The triggered one was rung on the high queue: the worker (every level) runs it.
    await eventually(async () => (await stateOf(taskId)) === 'succeeded', 10_000, 'the triggered occurrence to run');
  });

  it('(b) two schedulers create each occurrence exactly once', async () => {
    const [a, b] = [await cronService('sched-b1'), await cronService('sched-b2')];
    // Daily, at an hour far from now: no fire time within the misfire tolerance of now.
    const hour = (new Date(await dbNow()).getUTCHours() + 12) % 24;
    const expr = (i: number): string => `${i} ${hour} * * *`;
    const names: string[] = [];
    for (let i = 0; i < 4; i++) {
      names.push(`b-first-${i}`, `b-late-${i}`);
      await add(a, {name: `b-first-${i}`, cron: expr(i)});
      await add(a, {name: `b-late-${i}`, cron: expr(i), misfire: 'fire-once'});
      // Three days of downtime: a catch-up occurrence and the next one.
      await env.sql('UPDATE cron_schedules SET next_fire_at = NOW(3) - INTERVAL 3 DAY WHERE name = ?', [`b-late-${i}`]);
    }
    // Both at once, twice each: every schedule is planned by both concurrently.
    const created = await Promise.all([a.materialize(2000), b.materialize(2000), a.materialize(2000), b.materialize(2000)]);
    const rows = await env.sql<{schedule_name: string; dedup_key: string; n: number}>(
      'SELECT schedule_name, dedup_key, COUNT(*) AS n FROM tasks WHERE schedule_name IN (?) GROUP BY schedule_name, dedup_key',
      [names],
    );
    expect(rows.filter((r) => Number(r.n) !== 1)).toEqual([]);
    expect(created.reduce((x, y) => x + y, 0)).toBe(rows.length);
    const now = await dbNow();
    for (let i = 0; i < 4; i++) {
      const spec = parseSchedule(expr(i), 'UTC');
      const next = nextFireTimes(spec, now, 1)[0]!;
      expect(rows.filter((r) => r.schedule_name === `b-first-${i}`).map((r) => r.dedup_key)).toEqual([occurrenceKey(`b-first-${i}`, next)]);
      const catchUp = lastFireAtOrBefore(spec, now - MINUTE)!;
      expect(
        rows
          .filter((r) => r.schedule_name === `b-late-${i}`)
          .map((r) => r.dedup_key)
          .sort(),
      ).toEqual([occurrenceKey(`b-late-${i}`, catchUp), occurrenceKey(`b-late-${i}`, next)].sort());
    }

    // Two running schedulers: the occurrence fires once and its successor is created once.
    await add(a, {name: 'b-two', cron: '* * * * *'});
    const fireAt = await setNextFire('b-two', 1500);
    await a.repair();
    const [pending] = await occurrences('b-two');
    await Promise.all([startScheduler('sched-b1'), startScheduler('sched-b2')]);
    await eventually(
      async () => (await occurrences('b-two')).length === 2 && (await stateOf(pending!.id)) === 'succeeded',
      10_000,
      'the run and the next',
    );
    expect(await starts(pending!.id)).toHaveLength(1);
    const after = await occurrences('b-two');
    expect(after.map((r) => r.dedup_key)).toEqual([
      occurrenceKey('b-two', fireAt),
      occurrenceKey('b-two', Math.floor(fireAt / MINUTE) * MINUTE + MINUTE),
    ]);
  });

  it('(c) misfire after downtime: skip creates no catch-up run, fire-once exactly one, for the latest missed fire time', async () => {
    const cron = await cronService('test-c');
    const expr = await everyTwoHours(); // ~4 fire times missed in 9 hours
    await add(cron, {name: 'c-skip', cron: expr, misfire: 'skip'});
    await add(cron, {name: 'c-once', cron: expr, misfire: 'fire-once'});
    await env.sql("UPDATE cron_schedules SET next_fire_at = NOW(3) - INTERVAL 9 HOUR WHERE name IN ('c-skip', 'c-once')");
    const t0 = await dbNow();

    await startScheduler('sched-c');
    const spec = parseSchedule(expr, 'UTC');
    const next = nextFireTimes(spec, t0, 1)[0]!;
    const catchUp = lastFireAtOrBefore(spec, t0 - MINUTE)!;
    expect(t0 - catchUp).toBeGreaterThan(MINUTE);

    // skip: only the next fire time, in the future.
    const skip = await eventually(
      async () => ((await schedule('c-skip')).next_fire_at?.getTime() === next ? occurrences('c-skip') : null),
      5000,
      'c-skip planned',
    );
    expect(skip.map((r) => r.run_at.getTime())).toEqual([next]);

    // fire-once: one occurrence for the latest missed fire time, run at once, and the next one.
    const once = await eventually(
      async () => ((await schedule('c-once')).next_fire_at?.getTime() === next ? occurrences('c-once') : null),
      5000,
      'c-once planned',
    );
    expect(once.map((r) => r.run_at.getTime())).toEqual([catchUp, next]);
    expect(once[0]!.dedup_key).toBe(occurrenceKey('c-once', catchUp));
    await eventually(async () => (await stateOf(once[0]!.id)) === 'succeeded', 10_000, 'the catch-up run');
    expect(await starts(once[0]!.id)).toHaveLength(1);

    // Later loads change nothing.
    await passes();
    expect((await occurrences('c-skip')).length + (await occurrences('c-once')).length).toBe(3);
  });

  // In real downtime the schedule's pending occurrence already exists as a task (created before
  // the schedulers stopped): it is itself a missed fire time and must not run late on top of the
  // misfire policy.
  it('(c) misfire when the pending occurrence from before the downtime exists: still no late run (skip), one (fire-once)', async () => {
    const cron = await cronService('test-c2');
    const expr = await everyTwoHours();
    const t0 = await dbNow();
    const staleFire = lastFireAtOrBefore(parseSchedule(expr, 'UTC'), t0 - 9 * HOUR)!;
    for (const [name, misfire] of [
      ['c2-skip', 'skip'],
      ['c2-once', 'fire-once'],
    ] as const) {
      await add(cron, {name, cron: expr, misfire});
      // As a scheduler left it 9 hours ago: next_fire_at and its occurrence's task.
      await env.sql('UPDATE cron_schedules SET next_fire_at = ? WHERE name = ?', [new Date(staleFire), name]);
    }
    await cron.repair();
    await startScheduler('sched-c2');
    await eventually(
      async () => (await schedule('c2-once')).next_fire_at!.getTime() > t0 && (await schedule('c2-skip')).next_fire_at!.getTime() > t0,
      5000,
      'planned',
    );
    await passes();
    const ran = async (name: string) => (await occurrences(name)).filter((o) => o.run_at.getTime() < t0 && o.state !== 'cancelled');
    expect(await ran('c2-skip')).toEqual([]);
    expect(await ran('c2-once')).toHaveLength(1);
  });

  it('(d) overlap skip: the occurrence due while the previous one runs is cancelled, naming the overlap; allow runs both', async () => {
    const cron = await cronService('test-d', {broker: true});
    const sleep = {type: 'test_sleep', payload: {ms: 2000}};
    await add(cron, {name: 'd-skip', ...sleep, overlap: 'skip'});
    await add(cron, {name: 'd-allow', ...sleep, overlap: 'allow'});
    await startScheduler('sched-d');
    // The previous occurrences: one triggered now for each, running for 2 s.
    const prevSkip = (await cron.trigger('d-skip')).taskId;
    const prevAllow = (await cron.trigger('d-allow')).taskId;
    await eventually(
      async () => (await stateOf(prevSkip)) === 'running' && (await stateOf(prevAllow)) === 'running',
      5000,
      'both previous running',
    );
    // The next occurrences fall due in 1 s, while the previous ones still run.
    const due: Record<string, string> = {};
    for (const name of ['d-skip', 'd-allow']) due[name] = idFromDedupKey('default', occurrenceKey(name, await setNextFire(name, 1000)));
    expect((await cron.repair()).sort()).toEqual(['d-allow', 'd-skip']);

    const skipped = due['d-skip']!;
    await eventually(async () => (await stateOf(skipped)) === 'cancelled', 10_000, 'the overlapping d-skip occurrence to be cancelled');
    const [h] = await env.sql<{error: string}>("SELECT error FROM task_history WHERE task_id = ? AND to_state = 'cancelled'", [skipped]);
    expect(h?.error).toMatch(/overlap/);
    expect(h?.error).toContain(prevSkip);
    expect(await starts(skipped)).toEqual([]);

    const allowed = due['d-allow']!;
    await eventually(
      async () => (await stateOf(allowed)) === 'succeeded' && (await stateOf(prevAllow)) === 'succeeded',
      10_000,
      'both d-allow occurrences to run',
    );
    const [allowedStart] = await starts(allowed);
    const [prevEnd] = (
      await env.sql<{at: Date}>("SELECT at FROM task_history WHERE task_id = ? AND to_state = 'succeeded'", [prevAllow])
    ).map((r) => r.at.getTime());
    expect(allowedStart).toBeLessThan(prevEnd!); // they overlapped
    expect(await stateOf(prevSkip)).toBe('succeeded');

    // A retry of an occurrence is that occurrence, not a new one: skip never cancels it.
    await add(cron, {name: 'd-skip-retry', type: 'test_flaky', payload: {succeedOn: 2}, overlap: 'skip'});
    const flaky = (await cron.trigger('d-skip-retry')).taskId;
    await eventually(async () => (await stateOf(flaky)) === 'succeeded', 15_000, 'the failed occurrence to be retried and succeed');
    expect((await starts(flaky)).length).toBe(2);
  });

  it('(g) a reconcile pass (as `ax reconcile` runs it, no scheduler): repairs and reports; a paused schedule’s due occurrence is cancelled, not rung', async () => {
    const cron = await cronService('test-g', {broker: true});
    await add(cron, {name: 'g-repair'});
    await add(cron, {name: 'g-paused'});
    const pausedFire = await setNextFire('g-paused', 300);
    // g-paused's occurrence exists (unpublished) and falls due while the schedule is paused.
    expect(await cron.repair()).toContain('g-paused');
    // g-repair's pending occurrence is missing (as if deleted by hand).
    await setNextFire('g-repair', HOUR);
    const pausedTask = idFromDedupKey('default', occurrenceKey('g-paused', pausedFire));
    await cron.pause('g-paused');
    await eventually(async () => (await dbNow()) > pausedFire, 5000, 'the paused occurrence to fall due');
    const report = await reconcile({
      ...env.rt,
      store: await env.store(),
      broker,
      backoff: {baseMs: 1000, maxMs: 60_000},
      limit: 1000,
      rate: 10_000,
      republishAfterMs: 60_000,
      dryRun: false,
      actor: 'test-g',
      cron: cron.reconcileHooks(),
    });
    expect(report.cron.repaired).toContain('g-repair');
    expect(report.cron.repaired).not.toContain('g-paused');
    expect(report.cron.skipped).toBeGreaterThanOrEqual(1);
    expect((await occurrences('g-repair')).map((o) => o.state)).toEqual(['submitted']);
    expect(await stateOf(pausedTask)).toBe('cancelled');
    // Never rung: its only mark is the one the cancel writes on a row leaving the waiting states unrung.
    const [t] = await env.sql<{published_at: Date | null; finished_at: Date}>('SELECT published_at, finished_at FROM tasks WHERE id = ?', [
      pausedTask,
    ]);
    expect(t!.published_at).toEqual(t!.finished_at);
    expect(await starts(pausedTask)).toEqual([]);
  });

  it('(h) overlap skip compares fire times: an occurrence due again late (released) is not skipped for a later one', async () => {
    const cron = await cronService('test-h');
    await add(cron, {name: 'h-skip', overlap: 'skip'});
    const laterFire = await setNextFire('h-skip', MINUTE);
    await cron.repair(); // the later occurrence, submitted and pending
    const earlyFire = await setNextFire('h-skip', -5000);
    await cron.repair(); // the earlier one
    const early = idFromDedupKey('default', occurrenceKey('h-skip', earlyFire));
    expect(await stateOf(idFromDedupKey('default', occurrenceKey('h-skip', laterFire)))).toBe('submitted');
    // The earlier occurrence, handed back by a worker: due again now + 2 min, after the later one's fire time.
    const due = {
      id: early,
      type: 'test_noop',
      pool: 'io' as const,
      priority: 'normal' as const,
      runAt: new Date(laterFire + MINUTE),
      scheduleName: 'h-skip',
      attempt: 0,
      fence: 0,
      dedupKey: occurrenceKey('h-skip', earlyFire),
    };
    expect((await cron.filterOverlaps([due])).map((t) => t.id)).toEqual([early]);
    expect(await stateOf(early)).toBe('submitted');
  });

  it('(e) repair recreates a pending occurrence deleted by hand, as the reconciler does', async () => {
    const cron = await cronService('test-e');
    await add(cron, {name: 'e-repair', cron: '0 2 * * *', tz: 'Asia/Shanghai'});
    await cron.materialize(2000);
    const [pending] = await occurrences('e-repair');
    const fireAt = (await schedule('e-repair')).next_fire_at!.getTime();
    expect(pending!.run_at.getTime()).toBe(fireAt);

    const remove = async () => {
      await env.sql('DELETE FROM task_history WHERE task_id = ?', [pending!.id]);
      await env.sql('DELETE FROM tasks WHERE id = ?', [pending!.id]);
      expect(await occurrences('e-repair')).toEqual([]);
    };
    await remove();
    expect(await cron.repair()).toContain('e-repair');
    const [back] = await occurrences('e-repair');
    expect(back).toMatchObject({id: pending!.id, state: 'submitted', dedup_key: occurrenceKey('e-repair', fireAt)});
    expect(back!.run_at.getTime()).toBe(fireAt);
    expect(await cron.repair()).not.toContain('e-repair'); // nothing missing any more

    // The scheduler's reconcile loop runs the same repair.
    await remove();
    await startScheduler('sched-e', {...env.config, reconcileEveryMs: 1000});
    const again = await eventually(async () => (await occurrences('e-repair'))[0], 5000, 'the reconciler to recreate the occurrence');
    expect(again).toMatchObject({id: pending!.id, state: 'submitted'});
  });

  it('(f) pause: the pending occurrence is skipped at its fire time and none are created; resume plans from now without catch-up', async () => {
    const cron = await cronService('test-f');
    await add(cron, {name: 'f-pause', cron: '*/5 * * * *', misfire: 'fire-once'});
    const fireAt = await setNextFire('f-pause', 2000);
    await cron.repair();
    const [pending] = await occurrences('f-pause');
    await startScheduler('sched-f');

    const paused = await cron.pause('f-pause');
    expect(paused.paused).toBe(true);
    expect(paused.pending).toEqual({taskId: pending!.id, fireAt: new Date(fireAt)});
    // Still paused when it falls due: the scheduler skips it, with the reason.
    await eventually(async () => (await stateOf(pending!.id)) === 'cancelled', 10_000, 'the pending occurrence to be skipped');
    const [h] = await env.sql<{error: string}>("SELECT error FROM task_history WHERE task_id = ? AND to_state = 'cancelled'", [
      pending!.id,
    ]);
    expect(h?.error).toMatch(/paused/);

    // Its fire time passes, and hours more (next_fire_at moved back): nothing runs, nothing is created.
    await eventually(async () => (await dbNow()) > fireAt + 500, 5000, 'the fire time to pass');
    await env.sql('UPDATE cron_schedules SET next_fire_at = NOW(3) - INTERVAL 3 HOUR WHERE name = ?', ['f-pause']);
    await passes(); // several scheduler loads
    expect((await occurrences('f-pause')).map((o) => o.state)).toEqual(['cancelled']);
    expect(await starts(pending!.id)).toEqual([]);

    const resumedAt = await dbNow();
    await cron.resume('f-pause');
    const next = nextFireTimes(parseSchedule('*/5 * * * *', 'UTC'), resumedAt, 1)[0]!;
    const rows = await eventually(
      async () => {
        const r = await occurrences('f-pause');
        return r.length === 2 ? r : null;
      },
      5000,
      'the first occurrence after the resume',
    );
    // No catch-up for the 3 hours (despite fire-once): only the next fire time after the resume.
    expect(rows[1]).toMatchObject({state: 'submitted', dedup_key: occurrenceKey('f-pause', next)});
    expect(rows[1]!.run_at.getTime()).toBe(next);
    await passes();
    expect(await occurrences('f-pause')).toHaveLength(2);
  });

  // The occurrence id derives from (schedule, fire time): a pause must not cancel the pending
  // occurrence, or a resume before its fire time could never recreate it.
  it('(f) resume before the pending occurrence was due: that fire time still runs', async () => {
    const cron = await cronService('test-f2');
    await add(cron, {name: 'f2-quick', cron: '0 2 * * *', tz: 'Asia/Shanghai'});
    await cron.materialize(2000);
    const [pending] = await occurrences('f2-quick');
    await cron.pause('f2-quick');
    await cron.resume('f2-quick');
    await cron.materialize(2000);
    const live = (await occurrences('f2-quick')).filter((o) => o.state === 'submitted');
    expect(live.map((o) => o.run_at.getTime())).toEqual([pending!.run_at.getTime()]);
  });
});
