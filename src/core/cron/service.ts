/**
 * Cron over the ScheduleStore, in two parts: the admin API of the CLI and SDK (admin.ts) and the
 * scheduler's cron policy (policy.ts). `createCronService` gives both on one object, for tests and
 * tools that drive a schedule end to end; the CLI, SDK and scheduler take only the part they need.
 */
import {createCronAdmin, type CronAdmin} from './admin.js';
import type {CronServiceOptions} from './occurrence.js';
import {createCronPolicy, type CronPolicy} from './policy.js';

export {createCronAdmin, type CronAdmin, type ScheduleView} from './admin.js';
export {createCronPolicy, type CronPolicy, type CronReconcileHooks} from './policy.js';
export {occurrenceKey, type CronServiceOptions, type CronStore} from './occurrence.js';

export type CronService = CronAdmin & CronPolicy;

export function createCronService(o: CronServiceOptions): CronService {
  return {...createCronAdmin(o), ...createCronPolicy(o)};
}
