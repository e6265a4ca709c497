/**
 * The parts of `ax scheduler`, each a Service of its own, and `--only`: which of them a process
 * runs. By default all; `--only rescuer,archiver` runs those alone (e.g. the maintenance on its own
 * replica, or the archiver where the archive target is reachable).
 */
import {invalid} from '../errors.js';

/** Every part, with what it does (the --help table); the order of `--help` and of parseSchedulerParts. */
export const SCHEDULER_PARTS = {
  dispatcher: 'fires delayed tasks, retries and cron occurrences on time',
  rescuer: 'rescues running tasks whose lease expired (AX_RESCUE_EVERY)',
  reconciler: 'rings tasks never published, repairs cron (AX_RECONCILE_EVERY)',
  'dlq-scan': 'reports the tasks that died since its last pass (AX_DLQ_SCAN_EVERY)',
  archiver: 'archives finished tasks older than AX_RETENTION (AX_ARCHIVE_EVERY)',
  'cell-metrics': "the cell's gauges on /metrics (needs --health-port or AX_METRICS_PORT)",
} as const;

export type SchedulerPart = keyof typeof SCHEDULER_PARTS;

export const SCHEDULER_PART_NAMES = Object.keys(SCHEDULER_PARTS) as SchedulerPart[];

/**
 * Parses `--only` (comma-separated part names, spaces and repeats allowed): the parts to run, in
 * the order of SCHEDULER_PARTS. Undefined: all of them. Throws invalid_input for an unknown name (saying which are
 * known) or an empty list.
 */
export function parseSchedulerParts(only: string | undefined): SchedulerPart[] {
  if (only === undefined) return [...SCHEDULER_PART_NAMES];
  const names = only
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (names.length === 0) throw invalid(`--only needs at least one part: ${SCHEDULER_PART_NAMES.join(', ')}`);
  const unknown = names.filter((n) => !(n in SCHEDULER_PARTS));
  if (unknown.length > 0)
    throw invalid(
      `--only: unknown part${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => `"${n}"`).join(', ')}; the parts are ${SCHEDULER_PART_NAMES.join(', ')}`,
    );
  return SCHEDULER_PART_NAMES.filter((p) => names.includes(p));
}
