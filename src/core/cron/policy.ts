import {errorMessage} from '../errors.js';
import type {HeldForDispatch, ScheduleRecord} from '../store/types.js';
import {idFromDedupKey} from '../task/id.js';
import {parseSchedule} from './parse.js';
import {type CronServiceOptions, dbNowMs, occurrence, occurrenceKey} from './occurrence.js';
import {MISFIRE_TOLERANCE_MS, planOccurrences, shouldSkipForOverlap} from './schedule.js';

/** An occurrence's fire time, from its dedup key (`cron:<name>@<ISO>`); its run_at otherwise. */
function fireTimeOf(t: HeldForDispatch): Date {
  const at = t.dedupKey?.startsWith(`cron:${t.scheduleName}@`) ? Date.parse(t.dedupKey.slice(`cron:${t.scheduleName}@`.length)) : NaN;
  return Number.isFinite(at) ? new Date(at) : t.runAt;
}

/** The cron part of a reconcile pass (ReconcileOptions.cron). */
export interface CronReconcileHooks {
  repair(): Promise<string[]>;
  beforeRing(due: HeldForDispatch[]): Promise<HeldForDispatch[]>;
}

/** The scheduler's cron policy: what it creates at each load and what it lets fire. */
export interface CronPolicy {
  /**
   * For the scheduler, every load: creates the occurrences due within the horizon for every
   * unpaused schedule whose pending occurrence has fired. Returns how many were created.
   */
  materialize(horizonMs: number): Promise<number>;
  /**
   * At fire time: drops (and cancels, with the reason) occurrences of paused or removed schedules,
   * and first runs of occurrences of `skip` schedules whose previous occurrence has not finished.
   * A retry of an occurrence is that occurrence, not a new one: the overlap policy leaves it be.
   */
  filterOverlaps(due: HeldForDispatch[]): Promise<HeldForDispatch[]>;
  /**
   * For the reconciler: recreates the pending occurrence of every unpaused schedule whose row
   * is missing (deleted by hand, lost in a restore), so a schedule can never silently die.
   * Returns the names of the schedules repaired.
   */
  repair(): Promise<string[]>;
  /**
   * The cron part of a reconcile pass run on its own (`ax reconcile`, with or without a scheduler):
   * first the scheduler's load (the misfire policy for stale occurrences) and the repair of missing
   * ones, then the fire-time check for every occurrence about to be rung again.
   */
  reconcileHooks(): CronReconcileHooks;
  /** The scheduler hooks: occurrences on every load, the overlap policy at fire time, the cron part of reconcile. */
  hooks(): {
    onLoad: () => Promise<void>;
    beforeFire: (due: HeldForDispatch[]) => Promise<HeldForDispatch[]>;
    reconcileCron: CronReconcileHooks;
  };
}

/**
 * The scheduler's side of cron over the ScheduleStore: it creates each occurrence as a delayed task
 * once the previous one's fire time has passed (so a schedule's next run always exists as a row),
 * with the misfire policy for fire times missed while no scheduler ran, and applies the overlap
 * policy at fire time. Every occurrence's id derives from (schedule, fire time), so any number of
 * schedulers create it at most once. A schedule that cannot be planned is logged and skipped.
 */
export function createCronPolicy(o: CronServiceOptions): CronPolicy {
  const cfg = o.config;

  /** Creates the occurrences a schedule needs now; returns how many were new. */
  async function plan(s: ScheduleRecord, nowMs: number): Promise<number> {
    const spec = parseSchedule(s.cron, s.tz);
    const p = planOccurrences({
      spec,
      lastFireMs: s.nextFireAt?.getTime() ?? null,
      createdMs: s.createdAt.getTime(),
      nowMs,
      misfire: s.misfire,
    });
    if (p.fireAtMs.length === 0) return 0;
    // The pending occurrence left over from before a downtime is a missed fire time too: with
    // `skip` it must not run late, and with `fire-once` the catch-up planned after it replaces it.
    if (s.nextFireAt && s.nextFireAt.getTime() < nowMs - MISFIRE_TOLERANCE_MS && (s.misfire === 'skip' || p.missed !== null)) {
      const stale = await o.store.tasksGet({id: idFromDedupKey(cfg.cell, occurrenceKey(s.name, s.nextFireAt.getTime()))});
      if (stale && stale.state === 'submitted' && stale.publishedAt === null) {
        await o.store.tasksCancel({
          id: stale.id,
          actor: o.actor,
          reason: `missed fire time (misfire=${s.misfire}): no scheduler ran at ${s.nextFireAt.toISOString()}`,
        });
      }
    }
    const tasks = p.fireAtMs.map((t) => occurrence(cfg, s, t, nowMs));
    const res = await o.store.tasksInsert({tasks, actor: o.actor});
    for (const c of res.conflicts)
      o.logger.error('cron: an occurrence exists with other content', {schedule: s.name, taskId: c.id, reason: c.reason});
    if (p.missed) o.logger.warn('cron: missed fire times', {schedule: s.name, missed: p.missed.count, policy: s.misfire});
    // next_fire_at: the pending (latest created) occurrence; last_fire_at: the latest one now due.
    const fired = tasks.filter((t) => (t.runAtMs as number) <= nowMs).at(-1);
    const previous = s.nextFireAt && s.nextFireAt.getTime() <= nowMs ? occurrence(cfg, s, s.nextFireAt.getTime(), nowMs) : undefined;
    const last = fired ?? previous;
    await o.store.schedulesAdvance({
      name: s.name,
      expectedNext: s.nextFireAt,
      next: new Date(p.nextFireMs),
      last: last ? {fireAt: new Date(last.runAtMs as number), taskId: last.id} : null,
    });
    return res.inserted.length;
  }

  async function materialize(horizonMs: number): Promise<number> {
    const nowMs = await dbNowMs(o);
    let created = 0;
    for (const s of await o.store.schedulesDue({horizonMs})) {
      try {
        created += await plan(s, nowMs);
      } catch (e) {
        o.logger.error('cron: could not plan a schedule', {schedule: s.name, error: errorMessage(e)});
      }
    }
    return created;
  }

  async function filterOverlaps(due: HeldForDispatch[]): Promise<HeldForDispatch[]> {
    const keep: HeldForDispatch[] = [];
    const schedules = new Map<string, ScheduleRecord | null>();
    for (const t of due) {
      if (t.scheduleName === null) {
        keep.push(t);
        continue;
      }
      if (!schedules.has(t.scheduleName)) schedules.set(t.scheduleName, await o.store.schedulesGet({name: t.scheduleName}));
      const s = schedules.get(t.scheduleName);
      if (!s || s.paused) {
        await o.store.tasksCancel({
          id: t.id,
          actor: o.actor,
          reason: `skipped: schedule ${t.scheduleName} is ${s ? 'paused' : 'removed'}`,
        });
        continue;
      }
      // "Previous" is by fire time (from the occurrence's key), not run_at: a released occurrence
      // is due again later than its fire time, after occurrences that come after it.
      const prev =
        s.overlap === 'skip' && t.attempt === 0
          ? await o.store.occurrencesPrevious({name: t.scheduleName, before: fireTimeOf(t), excludeId: t.id})
          : null;
      if (shouldSkipForOverlap(s.overlap, prev?.state)) {
        await o.store.tasksCancel({
          id: t.id,
          actor: o.actor,
          reason: `skipped: the previous occurrence ${prev?.id} is still ${prev?.state} (overlap=skip)`,
        });
        o.logger.info('cron: occurrence skipped for overlap', {schedule: s.name, taskId: t.id});
      } else keep.push(t);
    }
    return keep;
  }

  async function repair(): Promise<string[]> {
    const nowMs = await dbNowMs(o);
    const repaired: string[] = [];
    for (const s of await o.store.schedulesList()) {
      if (s.paused || !s.nextFireAt) continue;
      const task = occurrence(cfg, s, s.nextFireAt.getTime(), nowMs);
      if (await o.store.tasksGet({id: task.id})) continue;
      await o.store.tasksInsert({tasks: [task], actor: o.actor});
      repaired.push(s.name);
      o.logger.warn('cron: recreated a missing occurrence', {schedule: s.name, fireAt: s.nextFireAt.toISOString()});
    }
    return repaired;
  }

  const reconcileHooks = (): CronReconcileHooks => ({
    repair: async () => {
      await materialize(cfg.schedulerHorizonMs);
      return repair();
    },
    beforeRing: filterOverlaps,
  });

  return {
    materialize,
    filterOverlaps,
    repair,
    reconcileHooks,
    hooks: () => ({
      onLoad: async () => {
        await materialize(cfg.schedulerHorizonMs);
      },
      beforeFire: filterOverlaps,
      reconcileCron: reconcileHooks(),
    }),
  };
}
