/**
 * Cron schedules in the admin service. A schedule is kept in its type's cell (AX_CELLS), whose
 * schedulers fire it: `add` goes there whatever cell the service is on, unless `cell` pins one
 * (then a type of another cell is refused, invalid_input). The other calls act on this cell.
 * Every call validates its input (names, the schedule, the number of fire times) before opening
 * anything: invalid_input then, even with the servers down.
 */
import {cellOf, requireCellOfTypes} from '../cells/cells.js';
import {createCronAdmin, type CronAdmin, type ScheduleView} from '../cron/admin.js';
import {type CancelledOccurrence, cancelledOccurrences, scheduleOverview, type ScheduleOverview} from '../cron/overview.js';
import {type CronInput, validateCronInput, validateScheduleName} from '../cron/schedule.js';
import {invalid} from '../errors.js';
import type {AdminSession} from './session.js';

export type {CancelledOccurrence, LastOccurrence, ScheduleOverview} from '../cron/overview.js';

export interface CronService extends Omit<CronAdmin, 'add' | 'remove'> {
  /**
   * Validates and stores a schedule in its type's cell; `pinned`: the caller named this cell
   * (`--cell`), so a type of another cell is refused instead of routed.
   */
  add(input: CronInput, o?: {pinned?: boolean}): Promise<ScheduleView>;
  /** add, then the stored schedule and its next `next` fire times (1..100), read in the cell it went to. */
  addAndShow(input: CronInput, o: {pinned?: boolean; next: number}): Promise<ScheduleView & {nextFireTimes: Date[]}>;
  /** Every schedule of this cell by name, with its next fire time after now and its latest fired occurrence. */
  overview(): Promise<ScheduleOverview[]>;
  /**
   * Deletes a schedule and cancels its occurrence that has not run yet: `cancelled` its ids,
   * `cancelledOccurrences` with their fire times. Throws not_found for an unknown schedule.
   */
  remove(name: string): Promise<{name: string; cancelled: string[]; cancelledOccurrences: CancelledOccurrence[]}>;
}

export function createCronService(s: AdminSession, sessionOf: (cell: string) => AdminSession): CronService {
  const adminOf = async (x: AdminSession, o: {broker?: boolean} = {}): Promise<CronAdmin> => {
    const {ctx} = x;
    const store = await x.store();
    const broker = o.broker ? await x.broker() : await x.brokerIfOpen();
    return createCronAdmin({
      config: ctx.config,
      store,
      ...(broker ? {broker} : {}),
      clock: ctx.clock,
      logger: ctx.logger,
      actor: ctx.actor,
    });
  };
  const here = s.ctx.config.cell;
  /** The session of the cell `input` goes to, after checking `input` (nothing opened yet). */
  const routed = (input: CronInput, o: {pinned?: boolean}): AdminSession => {
    const type = input !== null && typeof input === 'object' && typeof input.type === 'string' ? input.type : undefined;
    if (type !== undefined && o.pinned) requireCellOfTypes(s.ctx.cells, here, [type]);
    const cell = type === undefined ? here : cellOf(s.ctx.cells, type);
    const x = cell === here ? s : sessionOf(cell);
    validateCronInput(input, {payloadLimitBytes: x.ctx.config.payloadLimitBytes, nowMs: x.ctx.clock.now()});
    return x;
  };
  const named = (name: string): string => validateScheduleName(name);
  return {
    add: async (input, o = {}) => (await adminOf(routed(input, o))).add(input),
    async addAndShow(input, o) {
      if (!Number.isInteger(o.next) || o.next < 1 || o.next > 100)
        throw invalid(`the number of fire times to show must be a whole number from 1 to 100, got ${o.next}`);
      const cron = await adminOf(routed(input, o));
      await cron.add(input);
      return cron.show(input.name, o.next);
    },
    list: async () => (await adminOf(s)).list(),
    async overview() {
      const store = await s.store();
      const schedules = await (await adminOf(s)).list();
      const nowMs = (await store.clockNow()).getTime();
      return Promise.all(schedules.map((x) => scheduleOverview(store, x, nowMs)));
    },
    show: async (name, n) => {
      named(name);
      if (n !== undefined && (!Number.isInteger(n) || n < 1 || n > 100))
        throw invalid(`the number of fire times to show (--next) must be a whole number from 1 to 100, got ${n}`);
      return (await adminOf(s)).show(name, n);
    },
    pause: async (name) => {
      named(name);
      return (await adminOf(s)).pause(name);
    },
    resume: async (name) => {
      named(name);
      return (await adminOf(s)).resume(name);
    },
    async remove(name) {
      named(name);
      const r = await (await adminOf(s)).remove(name);
      return {...r, cancelledOccurrences: await cancelledOccurrences(await s.store(), r.cancelled)};
    },
    trigger: async (name) => {
      named(name);
      return (await adminOf(s, {broker: true})).trigger(name);
    },
  };
}
