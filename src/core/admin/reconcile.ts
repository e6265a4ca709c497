/** One reconcile pass in the admin service (`ax reconcile`): what the scheduler runs periodically. */
import {invalid} from '../errors.js';
import type {ReconcileReport} from '../reconcile/reconcile.js';
import {reconcileOnce} from '../reconcile/service.js';
import type {AdminSession} from './session.js';

export interface ReconcileAdmin {
  /**
   * Expired leases, missing cron occurrences and unrung due tasks, repaired once (see
   * reconcileOnce); `dryRun` changes nothing, `limit` caps the tasks per kind (default
   * AX_RECONCILE_LIMIT). Throws invalid_input for a limit that is not a positive integer (nothing
   * opened), unavailable when MySQL or RabbitMQ cannot be reached (both are opened, MySQL first,
   * before anything changes).
   */
  once(o?: {dryRun?: boolean; limit?: number}): Promise<ReconcileReport>;
}

export function createReconcileAdmin(s: AdminSession): ReconcileAdmin {
  const {ctx} = s;
  return {
    async once(o = {}) {
      if (o.limit !== undefined && !(Number.isInteger(o.limit) && o.limit >= 1))
        throw invalid(`limit must be a positive integer, got ${o.limit}`);
      const store = await s.store();
      const broker = await s.broker();
      return reconcileOnce({
        config: ctx.config,
        store,
        broker,
        clock: ctx.clock,
        random: ctx.random,
        logger: ctx.logger,
        actor: ctx.actor,
        dryRun: o.dryRun === true,
        limit: o.limit,
      });
    },
  };
}
