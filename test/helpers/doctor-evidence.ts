import type {DbEvidence} from '../../src/core/doctor/types.js';
import type {WorkerRow} from '../../src/core/store/types.js';

/**
 * The database evidence of a healthy cell for ax doctor's pure tests, read at `now`: the given
 * live workers, nothing due, failed, dead or undispatched, no flow-control state (absent unless
 * `over` gives it); `over` replaces any field.
 */
export function healthyEvidence(now: Date, workers: WorkerRow[], over: Partial<DbEvidence> = {}): DbEvidence {
  return {
    dbAt: now,
    localAt: now,
    rttMs: 2,
    backlog: {at: now, rows: []},
    duePools: [],
    workers,
    failures: [],
    deaths: [],
    undispatched: [],
    repeats: [],
    attempts: [],
    ...over,
  };
}
