import type {WorkerRow} from '../../src/core/store/types.js';

/**
 * A registry row as the store returns it, for the pure tests of liveness, ax workers/top, ax
 * doctor and the cell gauges: a live io worker whose last heartbeat was `ageMs` before `at`
 * (`heartbeatAt` and `heartbeatAgeMs` agree), no counters; `over` replaces any field.
 */
export function workerRow(at: Date, ageMs: number, over: Partial<WorkerRow> = {}): WorkerRow {
  return {
    id: 'w1',
    host: 'h',
    pid: 1,
    pools: {io: 8},
    inFlight: 0,
    startedAt: new Date(at.getTime() - 3_600_000),
    heartbeatAt: new Date(at.getTime() - ageMs),
    heartbeatAgeMs: ageMs,
    stoppedAt: null,
    stats: null,
    prev: null,
    ...over,
  };
}
