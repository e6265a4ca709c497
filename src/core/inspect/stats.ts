/**
 * `ax tasks stats`: the live backlog per type (InspectStore.backlog, an index range over the small
 * states) and the terminal transitions of a bounded window (InspectStore.terminalCounts, a range of
 * the history's failure index). Neither counts the 30-day table of finished tasks.
 */
import {invalid} from '../errors.js';
import type {BacklogRow, InspectStore, TerminalCountRow} from '../store/types.js';
import {parseTimeBound} from './inspect.js';

export const DEFAULT_STATS_SINCE = '1h';
/** The widest window: its cost is one index entry and one row lookup per terminal transition. */
export const MAX_STATS_WINDOW_MS = 7 * 86_400_000;

export interface FinishedCounts {
  succeeded: number;
  /** Deaths in the window (ax dlq list shows them); `dead` on the row is the DLQ now. */
  dead: number;
  cancelled: number;
}

/** A type's backlog (BacklogRow: due, delayed, running, dead now, oldest due) and its window. */
export interface TypeStats extends BacklogRow {
  /** How long the oldest due task has waited (database clock), null when none is due. */
  oldestDueAgeMs: number | null;
  /** Terminal transitions since `since`. */
  finished: FinishedCounts;
}

export interface TasksStatsReport {
  /** The database clock when the backlog was read. */
  at: Date;
  /** Start of the window of `finished`. */
  since: Date;
  types: TypeStats[];
  totals: Omit<TypeStats, 'type' | 'oldestDueAt'> & {oldestDueAt: Date | null};
}

/** `--since`: a duration back from now or an ISO time, in the past and at most 7 days back. */
export function parseStatsSince(value: string | undefined, nowMs: number): Date {
  const since = parseTimeBound(value ?? DEFAULT_STATS_SINCE, 'since', nowMs);
  if (since.getTime() >= nowMs) throw invalid(`since (${since.toISOString()}) must be in the past`);
  if (nowMs - since.getTime() > MAX_STATS_WINDOW_MS)
    throw invalid(
      'since reaches back more than 7d: the window is read transition by transition; use ax dlq stats or ax audit for older history',
    );
  return since;
}

const zero = (): FinishedCounts => ({succeeded: 0, dead: 0, cancelled: 0});

/** Merges the backlog and the window's terminal counts per type, sorted by type, with totals. */
export async function tasksStats(store: Pick<InspectStore, 'backlog' | 'terminalCounts'>, since: Date): Promise<TasksStatsReport> {
  const [backlog, finished] = await Promise.all([store.backlog(), store.terminalCounts({since})]);
  const at = backlog.at;
  const byType = new Map<string, TypeStats>();
  const age = (d: Date | null) => (d === null ? null : Math.max(0, at.getTime() - d.getTime()));
  for (const b of backlog.rows) byType.set(b.type, {...b, oldestDueAgeMs: age(b.oldestDueAt), finished: zero()});
  for (const f of finished) {
    let t = byType.get(f.type);
    if (!t)
      byType.set(
        f.type,
        (t = {type: f.type, due: 0, delayed: 0, running: 0, dead: 0, oldestDueAt: null, oldestDueAgeMs: null, finished: zero()}),
      );
    t.finished[f.state satisfies TerminalCountRow['state']] += f.count;
  }
  const types = [...byType.values()].sort((a, b) => a.type.localeCompare(b.type));
  const totals = {
    due: 0,
    delayed: 0,
    running: 0,
    dead: 0,
    oldestDueAt: null as Date | null,
    oldestDueAgeMs: null as number | null,
    finished: zero(),
  };
  for (const t of types) {
    totals.due += t.due;
    totals.delayed += t.delayed;
    totals.running += t.running;
    totals.dead += t.dead;
    for (const k of ['succeeded', 'dead', 'cancelled'] as const) totals.finished[k] += t.finished[k];
    if (t.oldestDueAt && (!totals.oldestDueAt || t.oldestDueAt < totals.oldestDueAt)) totals.oldestDueAt = t.oldestDueAt;
  }
  totals.oldestDueAgeMs = age(totals.oldestDueAt);
  return {at, since, types, totals};
}
