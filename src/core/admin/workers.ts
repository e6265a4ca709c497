/** Workers in the admin service: the registry of the cell, classified (see core/inspect/workers). */
import {invalid} from '../errors.js';
import {listWorkers, parseWorkersSince, type WorkersReport} from '../inspect/workers.js';
import type {AdminSession} from './session.js';

export interface WorkersAdmin {
  /**
   * Live workers always; stale and stopped ones seen within `since` (a duration, default 1h), or
   * every worker ever registered with `all`. Throws invalid_input for a bad `since` or both given
   * (nothing opened), unavailable when MySQL is.
   */
  list(o?: {since?: string; all?: boolean}): Promise<WorkersReport>;
}

export function createWorkersAdmin(s: AdminSession): WorkersAdmin {
  return {
    async list(o = {}) {
      if (o.all && o.since !== undefined) throw invalid('give either since or all, not both');
      const sinceMs = o.all ? undefined : parseWorkersSince(o.since);
      return listWorkers(await s.store(), sinceMs, s.ctx.config.heartbeatMs);
    },
  };
}
