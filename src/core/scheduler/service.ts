import type {AxConfig} from '../config/config.js';
import type {Broker} from '../broker/types.js';
import type {Logger} from '../log.js';
import type {AxEvents} from '../events.js';

import type {Clock, Random} from '../time.js';
import {Scheduler, type SchedulerOptions, type SchedulerStore} from './scheduler.js';

export interface SchedulerServiceOptions {
  config: AxConfig;
  store: SchedulerStore;
  broker: Broker;
  clock: Clock;
  random: Random;
  logger: Logger;
  id?: string;
  hooks?: Pick<SchedulerOptions, 'onLoad' | 'beforeFire' | 'reconcileCron'>;
  /** See SchedulerOptions.events. */
  events?: AxEvents;
  /** See SchedulerOptions.maintenance (default true: rescuer, reconciler and dead-letter scan inside). */
  maintenance?: boolean;
}

/** Builds a Scheduler from configuration (AX_SCHEDULER_*, AX_RESCUE_EVERY, AX_RECONCILE_*, AX_DLQ_SCAN_EVERY). */
export function createSchedulerService(o: SchedulerServiceOptions): Scheduler {
  const c = o.config;
  return new Scheduler({
    store: o.store,
    broker: o.broker,
    clock: o.clock,
    random: o.random,
    logger: o.logger,
    ...(o.id === undefined ? {} : {id: o.id}),
    ...(o.events === undefined ? {} : {events: o.events}),
    ...(o.maintenance === undefined ? {} : {maintenance: o.maintenance}),
    backoff: {baseMs: c.retryBaseMs, maxMs: c.retryMaxMs},
    tickMs: c.schedulerTickMs,
    horizonMs: c.schedulerHorizonMs,
    loadEveryMs: c.schedulerLoadEveryMs,
    holdMs: c.schedulerHoldMs,
    maxHeld: c.schedulerMaxHeld,
    rescueEveryMs: c.rescueEveryMs,
    reconcileEveryMs: c.reconcileEveryMs,
    dlqScanEveryMs: c.dlqScanEveryMs,
    reconcile: {limit: c.reconcileLimit, rate: c.reconcileRate, republishAfterMs: c.republishAfterMs},
    ...o.hooks,
  });
}
