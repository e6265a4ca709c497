import type {TypeRecord} from '../../src/core/store/types.js';

/**
 * A type registry row as the store returns it, for the pure tests of the flow gauges, ax top's flow
 * control and ax doctor's flow checks: not paused, no settings, breaker closed, created and updated
 * at `at`; `over` replaces any field.
 */
export function typeRecord(type: string, at: Date, over: Partial<TypeRecord> = {}): TypeRecord {
  return {
    type,
    paused: false,
    pausedBy: null,
    pausedReason: null,
    pausedAt: null,
    settings: {},
    breaker: {state: 'closed', until: null, openings: 0, changedAt: null},
    createdAt: at,
    updatedAt: at,
    ...over,
  };
}
