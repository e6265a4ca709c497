/**
 * Flow control's cell gauges (issue 11), refreshed in the cell metrics' pass (CellMetricsOptions.extra)
 * from one registry read (FlowStore.typesReport: the registry rows, the parked counts):
 *
 * - `ax_type_paused{type}`: 1 while the type is paused (ax types pause), else 0.
 * - `ax_breaker_state{type,state}`: one series per state (closed, open, half_open), 1 for the
 *   breaker's current state and 0 for the others — the Prometheus convention for an enum, so
 *   `ax_breaker_state{state="open"} == 1` selects the open ones and no number stands for a state.
 * - `ax_parked_tasks{type,kind}`: waiting tasks parked unclaimed, by why (paused, breaker, unhandled, capped, rate).
 *
 * Every registered type has the first two; a parked count seen once reads 0 when drained, not absent.
 */
import type {FlowStore, ParkedKind, TypeRecord} from '../store/types.js';
import type {MetricsRegistry} from './registry.js';

export const BREAKER_STATES: ReadonlyArray<TypeRecord['breaker']['state']> = ['closed', 'open', 'half_open'];
/** The report's live-handlers window; these gauges do not use the handlers. */
const HANDLERS_LIVE_MS = 15_000;
const PARKED_KINDS: readonly ParkedKind[] = ['paused', 'breaker', 'unhandled', 'capped', 'rate', 'key-capped', 'key-rate'];

/** Registers the gauges and returns their reader for `CellMetricsOptions.extra`. */
export function flowGauges(metrics: MetricsRegistry, store: Pick<FlowStore, 'typesReport'>): () => Promise<void> {
  const paused = metrics.gauge('ax_type_paused', '1 while the task type is paused (ax types pause), else 0.', ['type']);
  const breaker = metrics.gauge(
    'ax_breaker_state',
    "The task type's circuit breaker: 1 for its current state (closed, open, half_open), 0 for the others.",
    ['type', 'state'],
  );
  const parked = metrics.gauge(
    'ax_parked_tasks',
    'Waiting tasks parked unclaimed, by type and why (paused, breaker, unhandled, capped, rate).',
    ['type', 'kind'],
  );
  const seenParked = new Set<string>();
  return async () => {
    const r = await store.typesReport({liveMs: HANDLERS_LIVE_MS});
    for (const t of r.all) {
      paused.set({type: t.type}, t.paused ? 1 : 0);
      for (const state of BREAKER_STATES) breaker.set({type: t.type, state}, t.breaker.state === state ? 1 : 0);
    }
    for (const type of seenParked) for (const kind of PARKED_KINDS) parked.set({type, kind}, 0);
    for (const [type, kinds] of Object.entries(r.parked)) {
      seenParked.add(type);
      for (const kind of PARKED_KINDS) parked.set({type, kind}, kinds[kind] ?? 0);
    }
  };
}
