/**
 * `ax top`'s FlowControl over the type registry: the breaker and pause of every type from one
 * registry read (FlowStore.typesReport), and `p` through the same TypesAdmin pause/resume as
 * `ax types pause|resume` — audited as those commands, with the reason "ax top". A type with no
 * registry row is closed and not paused (it never was either).
 */
import {AxError} from '../errors.js';
import type {FlowState, FlowControl} from '../inspect/top.js';
import type {FlowStore, TypeRecord} from '../store/types.js';
import type {TypesAdmin} from './admin.js';

/** The reason recorded for a pause or resume from `ax top`. */
export const TOP_REASON = 'ax top';

export interface TopFlowOptions {
  /** The registry read (the store opened lazily by the caller). */
  report: () => Promise<Pick<Awaited<ReturnType<FlowStore['typesReport']>>, 'all'>>;
  /** Runs `fn` with a TypesAdmin acting as `operator` (and releasing what it opened afterwards). */
  withAdmin: <T>(operator: string, fn: (admin: TypesAdmin) => Promise<T>) => Promise<T>;
}

const breakerOf = (s: TypeRecord['breaker']['state']): FlowState['breaker'] => (s === 'half_open' ? 'half-open' : s);

/** Breaker and pause per registered type. */
export function flowStatesOf(all: readonly TypeRecord[]): Map<string, FlowState> {
  return new Map(all.map((t) => [t.type, {breaker: breakerOf(t.breaker.state), paused: t.paused}]));
}

export function topFlowControl(o: TopFlowOptions): FlowControl {
  return {
    async flowStates() {
      return flowStatesOf((await o.report()).all);
    },
    async setPaused({type, paused, operator}) {
      return o.withAdmin(operator, async (admin) => {
        if (paused) {
          const r = await admin.pause(type, TOP_REASON);
          return r.changed
            ? `paused ${type} (workers stop claiming it within AX_FLOW_REFRESH)`
            : `${type} was already paused by ${r.paused.by ?? '?'}`;
        }
        try {
          const r = await admin.resume(type, {reason: TOP_REASON});
          return `resumed ${type}: ${r.released} parked tasks released${r.unrung > 0 ? ` (${r.unrung} not rung yet: the scheduler rings them)` : ''}`;
        } catch (e) {
          if (e instanceof AxError && e.code === 'conflict') return e.message;
          throw e;
        }
      });
    },
  };
}
