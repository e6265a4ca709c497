/**
 * Task types and their flow control in the admin service: the TypesAdmin of core/types over the
 * session's connections. The actions that release parked tasks (resume, set, breaker reset) open
 * RabbitMQ first (resume, breaker reset), so an unreachable broker stops them before anything
 * changes (unavailable); `set` rings only with a broker already open, else the scheduler rings.
 */
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
    show: async (type) => (await readOnly()).show(type),
    pause: async (type, reason) => (await readOnly()).pause(type, reason),
    resume: async (type, o) => (await ringing()).resume(type, o),
    // A changed limit's waiting tasks are rung when a broker is at hand (the SDK's), else by the scheduler.
    set: async (type, input) => {
      const store = await s.store();
      const broker = await s.brokerIfOpen();
      return createTypesAdmin({...parts, store, ...(broker ? {broker} : {})}).set(type, input);
    },
    resetBreaker: async (type, reason, o) => (await ringing()).resetBreaker(type, reason, o),
  };
}
