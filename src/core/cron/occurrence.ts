/** What the cron admin API and the scheduler's cron policy share: options, occurrences, lookups. */
import {AxError} from '../errors.js';
import type {AxConfig} from '../config/config.js';
import type {Broker} from '../broker/types.js';
import type {Logger} from '../log.js';
import type {HotPathStore, InspectStore, ScheduleRecord, ScheduleStore} from '../store/types.js';
import type {NewTask} from '../task/model.js';
import {contentHash} from '../task/validate.js';
import {idFromDedupKey} from '../task/id.js';
import type {Clock} from '../time.js';
import {validateScheduleName} from './schedule.js';

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

/** The dedup key, hence the id, of the occurrence of `name` at `fireAtMs`: (schedule, fire time) is unique. */
export function occurrenceKey(name: string, fireAtMs: number): string {
  return `cron:${name}@${new Date(fireAtMs).toISOString()}`;
}

/** The database's now, in ms: cron decisions use the database clock. */
export const dbNowMs = async (o: CronServiceOptions): Promise<number> => (await o.store.clockNow()).getTime();

/** The schedule `name`; throws invalid_input for a malformed name and not_found for an unknown one. */
export async function getSchedule(o: CronServiceOptions, name: string): Promise<ScheduleRecord> {
  validateScheduleName(name);
  const s = await o.store.schedulesGet({name});
  if (!s) throw new AxError('not_found', `schedule "${name}" does not exist`);
  return s;
}

/** The task of the occurrence of `s` at `fireAtMs`: its id derives from (schedule, fire time). */
export function occurrence(cfg: AxConfig, s: ScheduleRecord, fireAtMs: number, nowMs: number): NewTask {
  const dedupKey = occurrenceKey(s.name, fireAtMs);
  return {
    id: idFromDedupKey(cfg.cell, dedupKey),
    type: s.type,
    payload: s.payload,
    pool: s.pool,
    priority: s.priority,
    maxRetries: s.maxRetries ?? cfg.maxRetries,
    timeoutMs: s.timeoutMs,
    dedupKey,
    key: s.key,
    runAtMs: fireAtMs,
    delayMs: 0,
    submittedAtMs: nowMs,
    contentHash: contentHash(s.type, s.payload),
    scheduleName: s.name,
  };
}
