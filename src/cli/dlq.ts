/** Flags and JSON shapes shared by the `ax dlq` commands. */
import {Flags} from '@oclif/core';
import {MAX_ERROR_FILTER} from '../core/dlq/dlq.js';
import {oneLine, table, when} from './render.js';
import type {ReplayPlan} from '../core/dlq/replay.js';
import type {SignatureRow} from '../core/dlq/signature.js';
import type {DeadTaskRow} from '../core/store/types.js';

const WHEN = 'a duration back from now (15m, 2h, 7d) or an ISO-8601 time';

/** The dead-task filter: --type, --since, --until, --error (checked by parseDeadFilter). */
export const deadFilterFlags = {
  type: Flags.string({char: 't', description: 'only tasks of this type (domain_action)'}),
  since: Flags.string({description: `only tasks that died since: ${WHEN}`}),
  until: Flags.string({description: `only tasks that died before: ${WHEN}`}),
  error: Flags.string({
    char: 'e',
    description: `only tasks whose last error contains this text (literally: % and _ are not wildcards; at most ${MAX_ERROR_FILTER} characters)`,
  }),
};

/** A dead task in --json output: dates as ISO strings. */
export type DeadTaskJson = Omit<DeadTaskRow, 'createdAt' | 'finishedAt'> & {createdAt: string; finishedAt: string};

export function deadTaskJson(t: DeadTaskRow): DeadTaskJson {
  return {...t, createdAt: t.createdAt.toISOString(), finishedAt: t.finishedAt.toISOString()};
}

/** Type × signature rows as a table: `counted` heads the count column (DEAD, FAILED). */
export function signatureTable(rows: readonly SignatureRow[], counted: string): string[] {
  const cells = rows.map((r) => [
    r.type,
    String(r.count),
    when(r.firstSeen, {seconds: true}),
    when(r.lastSeen, {seconds: true}),
    r.sampleId,
    oneLine(r.signature),
  ]);
  return table(['TYPE', counted, 'FIRST (UTC)', 'LAST (UTC)', 'SAMPLE', 'SIGNATURE'], cells, {right: [1]});
}

/** A type × signature row in --json output: dates as ISO strings. */
export type SignatureJson = Omit<SignatureRow, 'firstSeen' | 'lastSeen'> & {firstSeen: string; lastSeen: string};

export function signatureJson(r: SignatureRow): SignatureJson {
  return {...r, firstSeen: r.firstSeen.toISOString(), lastSeen: r.lastSeen.toISOString()};
}

/**
 * `2 dead tasks` when only dead tasks are selected; with succeeded or cancelled ones (a forced
 * replay by ids) the states are named: `1 task (1 succeeded)`, `3 tasks (2 dead, 1 cancelled)`.
 */
export function replayCount(plan: Pick<ReplayPlan, 'total' | 'byState'>): string {
  const tasks = `task${plan.total === 1 ? '' : 's'}`;
  const states = Object.entries(plan.byState).filter(([, n]) => (n ?? 0) > 0);
  if (states.every(([s]) => s === 'dead')) return `${plan.total} dead ${tasks}`;
  return `${plan.total} ${tasks} (${states.map(([s, n]) => `${n} ${s}`).join(', ')})`;
}
