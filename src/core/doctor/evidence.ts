/** Small pure helpers the checks share: live and stale workers, ages, counting error groups, lines. */
import {formatDuration} from '../duration.js';
import {workerStatus} from '../liveness.js';
import type {DeadErrorGroup, WorkerRow} from '../store/types.js';
import type {Finding, Status, Symptom} from './types.js';

/** The most evidence lines one finding prints per list (the rest is summed up in one line). */
export const MAX_LINES = 5;

/** The live and stale workers (stopped ones left out), by core/liveness.ts; `heartbeatMs` is AX_HEARTBEAT. */
export function splitWorkers(workers: readonly WorkerRow[], heartbeatMs: number): {live: WorkerRow[]; stale: WorkerRow[]} {
  const live: WorkerRow[] = [];
  const stale: WorkerRow[] = [];
  for (const w of workers) {
    const status = workerStatus(w, heartbeatMs);
    if (status !== 'stopped') (status === 'live' ? live : stale).push(w);
  }
  return {live, stale};
}

/** "3m12s" from `then` to `now` (never negative). */
export const age = (now: Date, then: Date): string => formatDuration(Math.max(0, now.getTime() - then.getTime()));

/** "3 tasks", "1 task". */
export const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The first MAX_LINES lines, and "… and N more" when there are more. */
export function capped(lines: string[]): string[] {
  return lines.length <= MAX_LINES ? lines : [...lines.slice(0, MAX_LINES), `… and ${lines.length - MAX_LINES} more`];
}

/** The error groups whose error matches, summed per type, largest first. */
export function countByType(
  groups: readonly DeadErrorGroup[],
  match: (error: string) => boolean,
): Array<{type: string; count: number; sample: DeadErrorGroup}> {
  const by = new Map<string, {type: string; count: number; sample: DeadErrorGroup}>();
  for (const g of groups) {
    if (g.error === null || !match(g.error)) continue;
    const e = by.get(g.type) ?? {type: g.type, count: 0, sample: g};
    e.count += g.count;
    if (g.count > e.sample.count) e.sample = g;
    by.set(g.type, e);
  }
  return [...by.values()].sort((a, b) => b.count - a.count || a.type.localeCompare(b.type));
}

/** The first line of an error, at most 120 characters. */
export function short(error: string | null): string {
  const line = (error ?? '').split('\n')[0] ?? '';
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

/** A finding; `evidence` and `next` default to none. */
export function finding(
  id: string,
  symptom: Symptom,
  status: Status,
  title: string,
  evidence: string[] = [],
  next: string[] = [],
): Finding {
  return {id, symptom, status, title, evidence, next};
}
