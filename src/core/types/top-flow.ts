/**
 * `ax top`'s FlowControl over the type registry: the breaker, pause and parked tasks of every type
 * from one registry read (FlowStore.typesReport: the same read `ax types list` shows them from), and `p` through the same TypesAdmin pause/resume as
 * `ax types pause|resume` — audited as those commands, with the reason "ax top". A type with no
 * registry row is closed and not paused (it never was either).
 */
import {AxError} from '../errors.js';
import type {FlowState, FlowControl} from '../inspect/top.js';
import type {FlowStore, ParkedKind, TypeRecord, TypesReport} from '../store/types.js';
import type {TypesAdmin} from './admin.js';

/** The reason recorded for a pause or resume from `ax top`. */
export const TOP_REASON = 'ax top';

export interface TopFlowOptions {
  /** The registry read (the store opened lazily by the caller). */
  report: () => Promise<Pick<Awaited<ReturnType<FlowStore['typesReport']>>, 'all' | 'parked'>>;
  /** Runs `fn` with a TypesAdmin acting as `operator` (and releasing what it opened afterwards). */
  withAdmin: <T>(operator: string, fn: (admin: TypesAdmin) => Promise<T>) => Promise<T>;
}

const breakerOf = (s: TypeRecord['breaker']['state']): FlowState['breaker'] => (s === 'half_open' ? 'half-open' : s);

/** All parked tasks of a type, every kind together (TypesReport.parked, as TypeView.parked holds it). */
const parkedTotal = (kinds: Partial<Record<ParkedKind, number>> | undefined): number =>
  Object.values(kinds ?? {}).reduce((n, k) => n + (k ?? 0), 0);

/**
 * Breaker, pause and parked count per type: the registered types, and the types with parked tasks
 * but no registry row (closed, not paused).
 */
export function flowStatesOf(all: readonly TypeRecord[], parked: TypesReport['parked'] = {}): Map<string, FlowState> {
  const m = new Map<string, FlowState>(
    all.map((t) => [t.type, {breaker: breakerOf(t.breaker.state), paused: t.paused, parked: parkedTotal(parked[t.type])}]),
  );
  for (const [type, kinds] of Object.entries(parked))
    if (!m.has(type)) m.set(type, {breaker: 'closed', paused: false, parked: parkedTotal(kinds)});
  return m;
}

export function topFlowControl(o: TopFlowOptions): FlowControl {
  return {
    async flowStates() {
      const r = await o.report();
      return flowStatesOf(r.all, r.parked);
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
