/**
 * The rescuer: every AX_RESCUE_EVERY, running tasks whose worker stopped renewing its lease become
 * failed (with backoff) or dead (rescueExpired, core/reconcile). Emits lease:expired.
 */
import {errorMessage} from '../../errors.js';
import type {AxEvents} from '../../events.js';
import type {Logger} from '../../log.js';
import {rescueExpired, type RescueOptions} from '../../reconcile/reconcile.js';
import type {Clock} from '../../time.js';
import {PeriodicService} from './periodic-service.js';

export interface RescuerOptions extends Pick<RescueOptions, 'store' | 'random' | 'backoff' | 'limit' | 'actor'> {
  clock: Clock;
  logger: Logger;
  events: AxEvents;
  everyMs: number;
}

/** The rescuer as a Service; a failed pass is logged at warn ("rescue failed") and the next one tries again. */
export class Rescuer extends PeriodicService {
  constructor(o: RescuerOptions) {
    super({
      name: 'rescue',
      clock: o.clock,
      logger: o.logger,
      everyMs: o.everyMs,
      run: async () => {
        try {
          await rescueExpired({...o, events: o.events});
        } catch (e) {
          o.logger.warn('rescue failed', {error: errorMessage(e)});
        }
      },
    });
  }
}
