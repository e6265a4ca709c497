/**
 * The reconciler: every AX_RECONCILE_EVERY, one reconcile pass (core/reconcile): expired leases,
 * missing cron occurrences, due tasks never rung (rung again, rate-capped). Emits reconcile:done.
 */
import {errorMessage} from '../../errors.js';
import type {AxEvents} from '../../events.js';
import {reconcile, type ReconcileOptions} from '../../reconcile/reconcile.js';
import {PeriodicService} from './periodic-service.js';

export interface ReconcilerOptions extends Omit<ReconcileOptions, 'dryRun' | 'events' | 'cron'> {
  events: AxEvents;
  everyMs: number;
  /** The cron part of each pass (see ReconcileOptions.cron). */
  cron?: ReconcileOptions['cron'];
}

/** The reconciler as a Service; a failed pass is logged at warn ("reconcile failed"). */
export class Reconciler extends PeriodicService {
  constructor(o: ReconcilerOptions) {
    const {everyMs, cron, ...rest} = o;
    super({
      name: 'reconcile',
      clock: o.clock,
      logger: o.logger,
      everyMs,
      run: async () => {
        try {
          await reconcile({...rest, dryRun: false, ...(cron ? {cron} : {})});
        } catch (e) {
          o.logger.warn('reconcile failed', {error: errorMessage(e)});
        }
      },
    });
  }
}
