/** What the `ax types` commands share: the JSON shape, the table and the parsing of --rate. */
import {iso, printable, table, when} from './render.js';
import type {TypeLimits, TypeView} from '../core/types/admin.js';
import {rateText} from '../core/flow/limits.js';
import {invalid} from '../core/errors.js';

/** A release's --rate (`ax types resume`, `ax types breaker --reset`): tasks per second, "N" or "N/s". */
export function parseReleaseRate(text: string): number {
  const rate = Number(text.replace(/\/s$/, ''));
  if (!(Number.isFinite(rate) && rate > 0)) throw invalid(`--rate must be a positive number of tasks per second, got "${text}"`);
  return rate;
}

/** A type for --json: dates as ISO strings. */
export interface TypeJson extends Omit<TypeView, 'oldestDueAt' | 'paused' | 'breaker'> {
  oldestDueAt: string | null;
  paused: {by: string | null; reason: string | null; since: string | null} | null;
  breaker: {state: string; until: string | null; openings: number; changedAt: string | null};
}

export function typeJson(t: TypeView): TypeJson {
  return {
    ...t,
    oldestDueAt: iso(t.oldestDueAt),
    paused: t.paused && {...t.paused, since: iso(t.paused.since)},
    breaker: {...t.breaker, until: iso(t.breaker.until), changedAt: iso(t.breaker.changedAt)},
  };
}

const parkedText = (t: TypeView): string => {
  const parts = Object.entries(t.parked).map(([k, n]) => `${n} ${k}`);
  return parts.length === 0 ? '0' : parts.join(', ');
};

const limitsText = (t: TypeView): string => {
  const parts = [
    ...(t.limits.maxRunning === null ? [] : [`max-running=${t.limits.maxRunning}`]),
    ...(t.limits.rate === null ? [] : [`rate=${rateText(t.limits.rate)}`]),
    ...(t.limits.maxRunningPerKey === null ? [] : [`max-running-per-key=${t.limits.maxRunningPerKey}`]),
    ...(t.limits.ratePerKey === null ? [] : [`rate-per-key=${rateText(t.limits.ratePerKey)}`]),
    ...(t.limits.fair ? ['fair'] : []),
  ];
  return parts.length === 0 ? '-' : parts.join(' ');
};

/** A type's limits in a sentence (`ax types set`, `ax types show`). */
export function limitsLine(l: TypeLimits): string {
  const cap = l.maxRunning === null ? 'no max running' : `at most ${l.maxRunning} running across all workers`;
  const rate = l.rate === null ? 'no rate limit' : `at most ${rateText(l.rate)} across all workers`;
  const perKey = [
    ...(l.maxRunningPerKey === null ? [] : [`at most ${l.maxRunningPerKey} running per key`]),
    ...(l.ratePerKey === null ? [] : [`at most ${rateText(l.ratePerKey)} per key`]),
  ];
  const weights = Object.entries(l.keyWeights).map(([k, w]) => `${printable(k)}=${w}`);
  const fair = l.fair ? `fair across keys${weights.length > 0 ? ` (weights ${weights.join(', ')})` : ''}` : 'first in, first out';
  return [cap, rate, ...perKey, fair].join('; ');
}

/** The `ax types list` table. */
export function typesTable(types: TypeView[]): string[] {
  return table(
    ['TYPE', 'HANDLERS', 'DUE', 'DELAYED', 'RUNNING', 'PARKED', 'FAIL%1M', 'BREAKER', 'PAUSED', 'LIMITS'],
    types.map((t) => [
      t.type,
      t.noHandler ? 'no handler' : `${t.workers.length} worker${t.workers.length === 1 ? '' : 's'}`,
      String(t.due),
      t.waiting > 0 ? `${t.delayed} (${t.waiting} waiting)` : String(t.delayed),
      String(t.running),
      parkedText(t),
      t.failureRate1m === null ? '-' : `${Math.round(t.failureRate1m * 100)}%`,
      t.breaker.state,
      t.paused ? `by ${t.paused.by ?? '?'} since ${when(t.paused.since, {seconds: true})}` : 'no',
      limitsText(t),
    ]),
    {right: [2, 3, 4], keep: [0]}, // the type name: what `ax types show|pause|set` take
  );
}
