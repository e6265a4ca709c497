/**
 * Cron schedules in the admin service. A schedule is kept in its type's cell (AX_CELLS), whose
 * schedulers fire it: `add` goes there whatever cell the service is on, unless `cell` pins one
 * (then a type of another cell is refused, invalid_input). The other calls act on this cell.
 */
import {cellOf, requireCellOfTypes} from '../cells/cells.js';
import {createCronAdmin, type CronAdmin, type ScheduleView} from '../cron/admin.js';
import type {CronInput} from '../cron/schedule.js';
import type {AdminSession} from './session.js';

export interface CronService extends Omit<CronAdmin, 'add'> {
  /**
   * Validates and stores a schedule in its type's cell; `pinned`: the caller named this cell
   * (`--cell`), so a type of another cell is refused instead of routed.
   */
  add(input: CronInput, o?: {pinned?: boolean}): Promise<ScheduleView>;
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
  return {
    async add(input, o = {}) {
      const type = input !== null && typeof input === 'object' && typeof input.type === 'string' ? input.type : undefined;
      if (type !== undefined && o.pinned) requireCellOfTypes(s.ctx.cells, here, [type]);
      const cell = type === undefined ? here : cellOf(s.ctx.cells, type);
      return (await adminOf(cell === here ? s : sessionOf(cell))).add(input);
    },
    list: async () => (await adminOf(s)).list(),
    show: async (name, n) => (await adminOf(s)).show(name, n),
    pause: async (name) => (await adminOf(s)).pause(name),
    resume: async (name) => (await adminOf(s)).resume(name),
    remove: async (name) => (await adminOf(s)).remove(name),
    trigger: async (name) => (await adminOf(s, {broker: true})).trigger(name),
  };
}
