/** The doctor's thresholds from its flags and the configuration; bad values are invalid_input. */
import type {AxConfig} from '../config/config.js';
import {parseDuration} from '../duration.js';
import {invalid} from '../errors.js';
import {parseTimeBound} from '../inspect/inspect.js';
import type {DoctorSettings} from './types.js';

export const DEFAULT_SINCE = '15m';
export const DEFAULT_LATE = '1m';
export const DEFAULT_MAX_SKEW = '1s';

export interface DoctorInput {
  /** Start of the history window: a duration back from now or an ISO time. */
  since?: string;
  /** A due task waiting longer than this is late. */
  late?: string;
  /** Largest clock difference tolerated. */
  maxSkew?: string;
}

type Cfg = Pick<AxConfig, 'heartbeatMs' | 'leaseMs' | 'poolQueueCapacity' | 'schedulerHoldMs' | 'schedulerLoadEveryMs'>;

export function doctorSettings(input: DoctorInput, config: Cfg, nowMs: number): DoctorSettings {
  const since = parseTimeBound(input.since ?? DEFAULT_SINCE, 'since', nowMs);
  if (since.getTime() > nowMs) throw invalid('since must not be in the future');
  const lateAfterMs = parseDuration(input.late ?? DEFAULT_LATE, 'late');
  const maxSkewMs = parseDuration(input.maxSkew ?? DEFAULT_MAX_SKEW, 'max-skew');
  return {
    since,
    lateAfterMs,
    maxSkewMs,
    heartbeatMs: config.heartbeatMs,
    // A delayed task is rung by the scheduler when due; a dead scheduler's are taken over after
    // its hold. Past that (and a few loads), nobody is ringing.
    unrungAfterMs: Math.max(10_000, config.schedulerHoldMs + 2 * config.schedulerLoadEveryMs + 5000),
    leaseMs: config.leaseMs,
    poolQueueCapacity: config.poolQueueCapacity,
  };
}
