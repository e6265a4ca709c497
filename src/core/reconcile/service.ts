import type {AxConfig} from '../config/config.js';
import {createCronPolicy} from '../cron/policy.js';
import type {ScheduleStore, TaskStore} from '../store/types.js';
import {reconcile, type ReconcileOptions, type ReconcileReport} from './reconcile.js';

export type ReconcileServiceOptions = Pick<ReconcileOptions, 'broker' | 'clock' | 'random' | 'logger' | 'actor' | 'dryRun'> & {
  config: AxConfig;
  store: TaskStore & ScheduleStore;
  /** Most tasks handled per kind; default AX_RECONCILE_LIMIT. */
  limit?: number | undefined;
};

/**
 * One reconcile pass configured from AX_RETRY_*, AX_RECONCILE_* and AX_REPUBLISH_AFTER, with the
 * cron part (repair and the fire-time policy) — what `ax reconcile` runs. Fails as reconcile() does.
 */
export function reconcileOnce(o: ReconcileServiceOptions): Promise<ReconcileReport> {
  const c = o.config;
  return reconcile({
    cron: createCronPolicy({config: c, store: o.store, clock: o.clock, logger: o.logger, actor: o.actor}).reconcileHooks(),
    store: o.store,
    broker: o.broker,
    clock: o.clock,
    random: o.random,
    logger: o.logger,
    backoff: {baseMs: c.retryBaseMs, maxMs: c.retryMaxMs},
    limit: o.limit ?? c.reconcileLimit,
    rate: c.reconcileRate,
    republishAfterMs: c.republishAfterMs,
    dryRun: o.dryRun,
    actor: o.actor,
  });
}
