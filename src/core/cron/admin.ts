import {errorMessage, invalid} from '../errors.js';
import type {ScheduleRecord} from '../store/types.js';
import {nextFireTimes, parseSchedule} from './parse.js';
import {type CronServiceOptions, dbNowMs, getSchedule, occurrence, occurrenceKey} from './occurrence.js';
import {validateCronInput, type CronInput} from './schedule.js';
import {idFromDedupKey} from '../task/id.js';

/** A schedule as the CLI and SDK show it. */
export interface ScheduleView extends Omit<ScheduleRecord, 'payload'> {
  payload: unknown;
}

const view = (s: ScheduleRecord): ScheduleView => ({...s, payload: JSON.parse(s.payload) as unknown});

/** The cron admin API of the CLI and the SDK (`client.cron`): add, list, show, pause, resume, remove, trigger. */
export interface CronAdmin {
  /** Validates and stores a schedule; its first occurrence is created by the next scheduler load. */
  add(input: CronInput): Promise<ScheduleView>;
  list(): Promise<ScheduleView[]>;
  /** A schedule and its next `n` fire times (1..100). */
  show(name: string, n?: number): Promise<ScheduleView & {nextFireTimes: Date[]}>;
  /**
   * Stops creating occurrences. The pending occurrence (already created) stays, and is skipped
   * (cancelled, with the reason) if the schedule is still paused when it falls due — so a resume
   * before then loses nothing. Returns the pending occurrence's id and fire time, if any.
   */
  pause(name: string): Promise<ScheduleView & {pending: {taskId: string; fireAt: Date} | null}>;
  /** Resumes from now: fire times that passed while paused are not "missed". */
  resume(name: string): Promise<ScheduleView>;
  /** Deletes a schedule and cancels its occurrences that have not run yet. */
  remove(name: string): Promise<{name: string; cancelled: string[]}>;
  /** Runs one occurrence now (fire time = the database's now), whatever the schedule says. */
  trigger(name: string): Promise<{name: string; taskId: string; fireAt: Date}>;
}

/**
 * Cron schedules over the ScheduleStore, for operators. Every call validates its input first
 * (invalid_input), throws not_found for an unknown schedule and AxError('unavailable') when MySQL
 * is; the scheduler's side (creating occurrences, the misfire and overlap policies) is in policy.ts.
 */
export function createCronAdmin(o: CronServiceOptions): CronAdmin {
  const cfg = o.config;
  const get = (name: string): Promise<ScheduleRecord> => getSchedule(o, name);

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
    async add(input) {
      const nowMs = await dbNowMs(o);
      const v = validateCronInput(input, {payloadLimitBytes: cfg.payloadLimitBytes, nowMs});
      await o.store.schedulesAdd({
        schedule: {
          name: v.name,
          cron: v.cron,
          tz: v.tz,
          type: v.type,
          payload: v.payload,
          pool: v.pool,
          priority: v.priority,
          maxRetries: v.maxRetries,
          timeoutMs: v.timeoutMs,
          key: v.key,
          overlap: v.overlap,
          misfire: v.misfire,
          nextFireAt: null,
        },
      });
      return view(await get(v.name));
    },
    async list() {
      return (await o.store.schedulesList()).map(view);
    },
    async show(name, n = 5) {
      if (!Number.isInteger(n) || n < 1 || n > 100)
        throw invalid(`the number of fire times to show (--next) must be a whole number from 1 to 100, got ${n}`);
      const s = await get(name);
      const times = nextFireTimes(parseSchedule(s.cron, s.tz), await dbNowMs(o), n).map((t) => new Date(t));
      return {...view(s), nextFireTimes: times};
    },
    async pause(name) {
      const s = await get(name);
      await o.store.schedulesSetPaused({name, paused: true});
      return {...view(await get(name)), pending: await pendingOf(s)};
    },
    async resume(name) {
      const s = await get(name);
      if (s.paused) {
        const nowMs = await dbNowMs(o);
        // A pending occurrence still ahead stays the next run; otherwise plan from now on.
        const keep = s.nextFireAt !== null && s.nextFireAt.getTime() > nowMs && (await pendingOf(s)) !== null;
        await o.store.schedulesSetPaused({name, paused: false, nextFireAt: keep ? s.nextFireAt : new Date(nowMs)});
      }
      return view(await get(name));
    },
    async remove(name) {
      const s = await get(name);
      await o.store.schedulesRemove({name});
      const cancelled = await cancelPending(s, `schedule ${name} removed`);
      return {name, cancelled};
    },
    async trigger(name) {
      const s = await get(name);
      const nowMs = await dbNowMs(o);
      const task = occurrence(cfg, s, nowMs, nowMs);
      await o.store.tasksInsert({tasks: [task], actor: o.actor});
      if (o.broker) {
        try {
          await o.broker.publish([{id: task.id, type: task.type, pool: task.pool, priority: task.priority}]);
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
  };
}
