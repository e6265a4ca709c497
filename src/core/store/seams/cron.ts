/** Cron schedules, stored beside the tasks (ScheduleStore; on MySQL: mysql/cron.ts). */

import type {PoolName, Priority} from '../../task/model.js';
import type {TaskState} from '../../task/state.js';

/** A cron schedule as stored. */
export interface ScheduleRecord {
  name: string;
  cron: string;
  tz: string;
  type: string;
  payload: string;
  pool: PoolName;
  /** The level of every occurrence (and of the doorbells rung for it). */
  priority: Priority;
  maxRetries: number | null;
  timeoutMs: number | null;
  /** The key of every occurrence (TaskSpec.key), or null. */
  key: string | null;
  overlap: 'allow' | 'skip';
  misfire: 'skip' | 'fire-once';
  paused: boolean;
  /** Fire time of the pending occurrence: the latest one created (null before the first). */
  nextFireAt: Date | null;
  lastFireAt: Date | null;
  lastTaskId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export type NewSchedule = Omit<ScheduleRecord, 'paused' | 'lastFireAt' | 'lastTaskId' | 'createdAt' | 'updatedAt'>;

export interface SchedulesAddParams {
  schedule: NewSchedule;
}

export interface ScheduleNameParams {
  name: string;
}

export interface SchedulesSetPausedParams {
  name: string;
  paused: boolean;
  /** When given, the next fire time is set too. */
  nextFireAt?: Date | null;
}

export interface SchedulesDueParams {
  horizonMs: number;
}

export interface SchedulesAdvanceParams {
  name: string;
  expectedNext: Date | null;
  next: Date | null;
  last: {fireAt: Date; taskId: string} | null;
}

export interface OccurrencesPreviousParams {
  name: string;
  before: Date;
  excludeId?: string;
}

/**
 * Storage of cron schedules (same database, same cell as the tasks). Occurrences are ordinary
 * tasks with `scheduleName` set and the dedup key `cron:<name>@<fire time ISO>`, so each
 * (schedule, fire time) exists at most once however many schedulers create it.
 */
export interface ScheduleStore {
  /** Throws AxError('conflict') when the name exists. */
  schedulesAdd(p: SchedulesAddParams): Promise<void>;
  schedulesGet(p: ScheduleNameParams): Promise<ScheduleRecord | null>;
  schedulesList(): Promise<ScheduleRecord[]>;
  /** Returns false when the name does not exist. */
  schedulesSetPaused(p: SchedulesSetPausedParams): Promise<boolean>;
  /** Deletes the schedule; returns false when it did not exist. */
  schedulesRemove(p: ScheduleNameParams): Promise<boolean>;
  /** Unpaused schedules whose next occurrence is due within `horizonMs` (or unknown). */
  schedulesDue(p: SchedulesDueParams): Promise<ScheduleRecord[]>;
  /**
   * Moves a schedule on after its occurrences were created, only if its next fire time is still
   * `expectedNext` (another scheduler may have done it first). Returns whether it moved.
   */
  schedulesAdvance(p: SchedulesAdvanceParams): Promise<boolean>;
  /** The latest occurrence of a schedule due before `before`, other than `excludeId` (for the overlap policy). */
  occurrencesPrevious(p: OccurrencesPreviousParams): Promise<{id: string; state: TaskState} | null>;
}
