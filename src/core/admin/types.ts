/**
 * Task types and their flow control in the admin service: the TypesAdmin of core/types over the
 * session's connections. The actions that release parked tasks (resume, set, breaker reset) open
 * RabbitMQ first (resume, breaker reset), so an unreachable broker stops them before anything
 * changes (unavailable); `set` rings only with a broker already open, else the scheduler rings.
 * A malformed type name is refused (invalid_input) before anything is opened.
 */
import {invalid} from '../errors.js';
import {validateTypeName} from '../task/validate.js';
import {createTypesAdmin, type TypesAdmin} from '../types/admin.js';
import type {AdminSession} from './session.js';

export type {TypesAdmin};

export function createTypesService(s: AdminSession): TypesAdmin {
  const {ctx} = s;
  const parts = {clock: ctx.clock, logger: ctx.logger, operator: ctx.operator, flowRefreshMs: ctx.config.flowRefreshMs};
  const readOnly = async (): Promise<TypesAdmin> => createTypesAdmin({...parts, store: await s.store()});
  const ringing = async (): Promise<TypesAdmin> => {
    const store = await s.store();
    return createTypesAdmin({...parts, store, broker: await s.broker()});
  };
  return {
    list: async () => (await readOnly()).list(),
    show: async (type) => {
      const name = validateTypeName(type);
      return (await readOnly()).show(name);
    },
    pause: async (type, reason) => {
      const name = validateTypeName(type);
      return (await readOnly()).pause(name, reason);
    },
    resume: async (type, o) => {
      const name = checked(type, o?.rate);
      return (await ringing()).resume(name, o);
    },
    // A changed limit's waiting tasks are rung when a broker is at hand (the SDK's), else by the scheduler.
    set: async (type, input) => {
      validateTypeName(type);
      const store = await s.store();
      const broker = await s.brokerIfOpen();
      return createTypesAdmin({...parts, store, ...(broker ? {broker} : {})}).set(type, input);
    },
    resetBreaker: async (type, reason, o) => {
      const name = checked(type, o?.rate);
      return (await ringing()).resetBreaker(name, reason, o);
    },
  };
}

/** The type name of a release (resume, breaker reset) once it and its rate are checked; throws invalid_input. */
function checked(type: string, rate: number | undefined): string {
  const name = validateTypeName(type);
  if (rate !== undefined && !(Number.isFinite(rate) && rate > 0)) throw invalid('rate must be a positive number of tasks per second');
  return name;
}
