/**
 * Releasing parked tasks (resume, a breaker that closes or is reset or turned off, a changed limit,
 * a handler that registers): the type's tasks parked as `kinds` are made due now, in batches, and
 * rung. One loop for every caller, so they page, ring and pace alike.
 */
import {errorMessage} from '../errors.js';
import type {Logger} from '../log.js';
import type {Broker} from '../broker/types.js';
import type {FlowStore, HotPathStore, ParkedKind} from '../store/types.js';
import {type Clock, sleep} from '../time.js';

/** Parked tasks released per statement. */
export const RELEASE_BATCH = 500;

export interface ReleaseDeps {
  store: Pick<FlowStore, 'parkedRelease'> & Pick<HotPathStore, 'doorbellsMark'>;
  /** Rings each batch; without one the scheduler rings them (they are due and unpublished). */
  broker?: Broker | undefined;
  clock: Clock;
  logger: Logger;
}

export interface ReleaseResult {
  type: string;
  /** Parked tasks made due again. */
  released: number;
  /** Released but not rung (no broker, or RabbitMQ refused): the scheduler rings them. */
  unrung: number;
}

/**
 * Releases the type's tasks parked as `kinds`, at most `rate` per second when given (batches of a
 * tenth of a second's worth), calling `onProgress` with the running total after each batch. A
 * batch that cannot be rung stays released (counted in `unrung`, logged) and the loop goes on.
 * Throws when the store does (what was released before stays released).
 */
export async function releaseParked(
  d: ReleaseDeps,
  type: string,
  kinds: ParkedKind[],
  o: {rate?: number | undefined; onProgress?: ((released: number) => void) | undefined} = {},
): Promise<ReleaseResult> {
  const out: ReleaseResult = {type, released: 0, unrung: 0};
  const {rate} = o;
  const batch = rate === undefined ? RELEASE_BATCH : Math.max(1, Math.min(RELEASE_BATCH, Math.floor(rate / 10) || 1));
  const started = d.clock.monotonic();
  for (;;) {
    const refs = await d.store.parkedRelease({type, kinds, limit: batch});
    if (refs.length === 0) break;
    out.released += refs.length;
    try {
      if (!d.broker) out.unrung += refs.length;
      else {
        await d.broker.publish(refs.map(({id, type: t, pool, priority}) => ({id, type: t, pool, priority})));
        await d.store.doorbellsMark({rung: refs.map(({id, fence}) => ({id, fence}))});
      }
    } catch (e) {
      out.unrung += refs.length;
      d.logger.warn('released tasks not rung: the scheduler rings them', {type, tasks: refs.length, error: errorMessage(e)});
    }
    o.onProgress?.(out.released);
    if (refs.length < batch) break;
    if (rate !== undefined) {
      const due = (out.released / rate) * 1000 - (d.clock.monotonic() - started);
      if (due > 0) await sleep(d.clock, due);
    }
  }
  return out;
}
