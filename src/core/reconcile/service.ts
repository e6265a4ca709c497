import type {AxConfig} from '../config/config.js';
import type {Broker} from '../broker/types.js';
import {createCronPolicy} from '../cron/policy.js';
import type {Logger} from '../log.js';
import type {ScheduleStore, TaskStore} from '../store/types.js';
import type {Clock, Random} from '../time.js';
import {reconcile, type ReconcileReport} from './reconcile.js';

export interface ReconcileServiceOptions {
  config: AxConfig;
  store: TaskStore & ScheduleStore;
  broker: Broker;
  clock: Clock;
  random: Random;
  logger: Logger;
  actor: string;
  dryRun: boolean;
  /** Most tasks handled per kind; default AX_RECONCILE_LIMIT. */
  limit?: number | undefined;
}

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
