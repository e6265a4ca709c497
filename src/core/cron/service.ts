import {AxError, errorMessage, invalid} from '../errors.js';
import type {AxConfig} from '../config/config.js';
import type {Broker} from '../broker/types.js';
import type {Logger} from '../log.js';
import type {HeldForDispatch, HotPathStore, InspectStore, ScheduleRecord, ScheduleStore} from '../store/types.js';
import type {NewTask} from '../task/model.js';
import {contentHash} from '../task/validate.js';
import {idFromDedupKey} from '../task/id.js';
import type {Clock} from '../time.js';
import {nextFireTimes, parseSchedule} from './parse.js';
import {
  MISFIRE_TOLERANCE_MS,
  planOccurrences,
  shouldSkipForOverlap,
  validateCronInput,
  validateScheduleName,
  type CronInput,
} from './schedule.js';

/** What cron needs of the task database: schedules, occurrence inserts and rings, reads and cancels. */
export type CronStore = ScheduleStore &
  Pick<HotPathStore, 'tasksInsert' | 'doorbellsMark'> &
  Pick<InspectStore, 'tasksGet' | 'tasksCancel' | 'clockNow'>;

export interface CronServiceOptions {
  config: AxConfig;
  store: CronStore;
  /** Needed only by trigger() (it rings for the occurrence it creates). */
  broker?: Broker;
  clock: Clock;
  logger: Logger;
  actor: string;
}

/** A schedule as the CLI and SDK show it. */
export interface ScheduleView extends Omit<ScheduleRecord, 'payload'> {
  payload: unknown;
}

/** The dedup key, hence the id, of the occurrence of `name` at `fireAtMs`: (schedule, fire time) is unique. */
export function occurrenceKey(name: string, fireAtMs: number): string {
  return `cron:${name}@${new Date(fireAtMs).toISOString()}`;
}

/** An occurrence's fire time, from its dedup key (`cron:<name>@<ISO>`); its run_at otherwise. */
function fireTimeOf(t: HeldForDispatch): Date {
  const at = t.dedupKey?.startsWith(`cron:${t.scheduleName}@`) ? Date.parse(t.dedupKey.slice(`cron:${t.scheduleName}@`.length)) : NaN;
  return Number.isFinite(at) ? new Date(at) : t.runAt;
}

const view = (s: ScheduleRecord): ScheduleView => ({...s, payload: JSON.parse(s.payload) as unknown});

/**
 * Cron schedules over the ScheduleStore: add/list/show/pause/resume/remove/trigger for the CLI and
 * SDK, and `materialize()` for the scheduler, which creates each occurrence as a delayed task once
 * the previous one's fire time has passed (so a schedule's next run always exists as a row), with
 * the misfire policy for fire times missed while no scheduler ran. Every occurrence's id derives
 * from (schedule, fire time), so any number of schedulers create it at most once.
 */
export function createCronService(o: CronServiceOptions) {
  const cfg = o.config;
  const dbNowMs = async (): Promise<number> => (await o.store.clockNow()).getTime();

  async function get(name: string): Promise<ScheduleRecord> {
    validateScheduleName(name);
    const s = await o.store.schedulesGet({name});
    if (!s) throw new AxError('not_found', `schedule "${name}" does not exist`);
    return s;
  }

  function occurrence(s: ScheduleRecord, fireAtMs: number, nowMs: number): NewTask {
    const dedupKey = occurrenceKey(s.name, fireAtMs);
    return {
      id: idFromDedupKey(cfg.cell, dedupKey),
      type: s.type,
      payload: s.payload,
      pool: s.pool,
      maxRetries: s.maxRetries ?? cfg.maxRetries,
      timeoutMs: s.timeoutMs,
      dedupKey,
      runAtMs: fireAtMs,
      delayMs: 0,
      submittedAtMs: nowMs,
      contentHash: contentHash(s.type, s.payload),
      scheduleName: s.name,
    };
  }

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
    const tasks = p.fireAtMs.map((t) => occurrence(s, t, nowMs));
    const res = await o.store.tasksInsert({tasks, actor: o.actor});
    for (const c of res.conflicts)
      o.logger.error('cron: an occurrence exists with other content', {schedule: s.name, taskId: c.id, reason: c.reason});
    if (p.missed) o.logger.warn('cron: missed fire times', {schedule: s.name, missed: p.missed.count, policy: s.misfire});
    // next_fire_at: the pending (latest created) occurrence; last_fire_at: the latest one now due.
    const fired = tasks.filter((t) => (t.runAtMs as number) <= nowMs).at(-1);
    const previous = s.nextFireAt && s.nextFireAt.getTime() <= nowMs ? occurrence(s, s.nextFireAt.getTime(), nowMs) : undefined;
    const last = fired ?? previous;
    await o.store.schedulesAdvance({
      name: s.name,
      expectedNext: s.nextFireAt,
      next: new Date(p.nextFireMs),
      last: last ? {fireAt: new Date(last.runAtMs as number), taskId: last.id} : null,
    });
    return res.inserted.length;
  }

  /** The created occurrence at the schedule's next fire time, while it has not started. */
  async function pendingOf(s: ScheduleRecord): Promise<{taskId: string; fireAt: Date} | null> {
    if (!s.nextFireAt) return null;
    const t = await o.store.tasksGet({id: idFromDedupKey(cfg.cell, occurrenceKey(s.name, s.nextFireAt.getTime()))});
    return t && t.state === 'submitted' ? {taskId: t.id, fireAt: s.nextFireAt} : null;
  }

  /** Cancels the created-but-not-run occurrence of a schedule, if any. */
  async function cancelPending(s: ScheduleRecord, reason: string): Promise<string[]> {
    const pending = await pendingOf(s);
    if (!pending) return [];
    return (await o.store.tasksCancel({id: pending.taskId, actor: o.actor, reason})).cancelled ? [pending.taskId] : [];
  }

  return {
    /** Validates and stores a schedule; its first occurrence is created by the next scheduler load. */
    async add(input: CronInput): Promise<ScheduleView> {
      const nowMs = await dbNowMs();
      const v = validateCronInput(input, {payloadLimitBytes: cfg.payloadLimitBytes, nowMs});
      await o.store.schedulesAdd({
        schedule: {
          name: v.name,
          cron: v.cron,
          tz: v.tz,
          type: v.type,
          payload: v.payload,
          pool: v.pool,
          maxRetries: v.maxRetries,
          timeoutMs: v.timeoutMs,
          overlap: v.overlap,
          misfire: v.misfire,
          nextFireAt: null,
        },
      });
      return view(await get(v.name));
    },
    async list(): Promise<ScheduleView[]> {
      return (await o.store.schedulesList()).map(view);
    },
    /** A schedule and its next `n` fire times (1..100). */
    async show(name: string, n = 5): Promise<ScheduleView & {nextFireTimes: Date[]}> {
      if (!Number.isInteger(n) || n < 1 || n > 100)
        throw invalid(`the number of fire times to show (--next) must be a whole number from 1 to 100, got ${n}`);
      const s = await get(name);
      const times = nextFireTimes(parseSchedule(s.cron, s.tz), await dbNowMs(), n).map((t) => new Date(t));
      return {...view(s), nextFireTimes: times};
    },
    /**
     * Stops creating occurrences. The pending occurrence (already created) stays, and is skipped
     * (cancelled, with the reason) if the schedule is still paused when it falls due — so a resume
     * before then loses nothing. Returns the pending occurrence's id and fire time, if any.
     */
    async pause(name: string): Promise<ScheduleView & {pending: {taskId: string; fireAt: Date} | null}> {
      const s = await get(name);
      await o.store.schedulesSetPaused({name, paused: true});
      return {...view(await get(name)), pending: await pendingOf(s)};
    },
    /** Resumes from now: fire times that passed while paused are not "missed". */
    async resume(name: string): Promise<ScheduleView> {
      const s = await get(name);
      if (s.paused) {
        const nowMs = await dbNowMs();
        // A pending occurrence still ahead stays the next run; otherwise plan from now on.
        const keep = s.nextFireAt !== null && s.nextFireAt.getTime() > nowMs && (await pendingOf(s)) !== null;
        await o.store.schedulesSetPaused({name, paused: false, nextFireAt: keep ? s.nextFireAt : new Date(nowMs)});
      }
      return view(await get(name));
    },
    /** Deletes a schedule and cancels its occurrences that have not run yet. */
    async remove(name: string): Promise<{name: string; cancelled: string[]}> {
      const s = await get(name);
      await o.store.schedulesRemove({name});
      const cancelled = await cancelPending(s, `schedule ${name} removed`);
      return {name, cancelled};
    },
    /** Runs one occurrence now (fire time = the database's now), whatever the schedule says. */
    async trigger(name: string): Promise<{name: string; taskId: string; fireAt: Date}> {
      const s = await get(name);
      const nowMs = await dbNowMs();
      const task = occurrence(s, nowMs, nowMs);
      await o.store.tasksInsert({tasks: [task], actor: o.actor});
      if (o.broker) {
        try {
          await o.broker.publish([{id: task.id, type: task.type, pool: task.pool}]);
          await o.store.doorbellsMark({rung: [{id: task.id, fence: 0}]});
        } catch (e) {
          o.logger.warn('cron trigger: occurrence written but not rung; the scheduler will ring for it', {
            schedule: name,
            error: errorMessage(e),
          });
        }
      }
      return {name, taskId: task.id, fireAt: new Date(nowMs)};
    },
    /**
     * For the scheduler, every load: creates the occurrences due within the horizon for every
     * unpaused schedule whose pending occurrence has fired. Returns how many were created.
     */
    async materialize(horizonMs: number): Promise<number> {
      const nowMs = await dbNowMs();
      let created = 0;
      for (const s of await o.store.schedulesDue({horizonMs})) {
        try {
          created += await plan(s, nowMs);
        } catch (e) {
          o.logger.error('cron: could not plan a schedule', {schedule: s.name, error: errorMessage(e)});
        }
      }
      return created;
    },
    /**
     * At fire time: drops (and cancels, with the reason) occurrences of paused or removed schedules,
     * and first runs of occurrences of `skip` schedules whose previous occurrence has not finished.
     * A retry of an occurrence is that occurrence, not a new one: the overlap policy leaves it be.
     */
    async filterOverlaps(due: HeldForDispatch[]): Promise<HeldForDispatch[]> {
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
    },
    /**
     * For the reconciler: recreates the pending occurrence of every unpaused schedule whose row
     * is missing (deleted by hand, lost in a restore), so a schedule can never silently die.
     * Returns the names of the schedules repaired.
     */
    async repair(): Promise<string[]> {
      const nowMs = await dbNowMs();
      const repaired: string[] = [];
      for (const s of await o.store.schedulesList()) {
        if (s.paused || !s.nextFireAt) continue;
        const task = occurrence(s, s.nextFireAt.getTime(), nowMs);
        if (await o.store.tasksGet({id: task.id})) continue;
        await o.store.tasksInsert({tasks: [task], actor: o.actor});
        repaired.push(s.name);
        o.logger.warn('cron: recreated a missing occurrence', {schedule: s.name, fireAt: s.nextFireAt.toISOString()});
      }
      return repaired;
    },
    /**
     * The cron part of a reconcile pass run on its own (`ax reconcile`, with or without a scheduler):
     * first the scheduler's load (the misfire policy for stale occurrences) and the repair of missing
     * ones, then the fire-time check for every occurrence about to be rung again.
     */
    reconcileHooks() {
      return {
        repair: async (): Promise<string[]> => {
          await this.materialize(cfg.schedulerHorizonMs);
          return this.repair();
        },
        beforeRing: (due: HeldForDispatch[]) => this.filterOverlaps(due),
      };
    },
    /** The scheduler hooks: occurrences on every load, the overlap policy at fire time, the cron part of reconcile. */
    hooks() {
      return {
        onLoad: async () => {
          await this.materialize(cfg.schedulerHorizonMs);
        },
        beforeFire: (due: HeldForDispatch[]) => this.filterOverlaps(due),
        reconcileCron: this.reconcileHooks(),
      };
    },
  };
}

export type CronService = ReturnType<typeof createCronService>;
