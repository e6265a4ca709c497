/**
 * `ax errors` and client.errors(): which types fail now and why. Failed attempts of every task
 * (retried or dead) in a time window, per type × error signature, the largest groups first.
 * Inputs are validated here, before any query; the store does one grouped read.
 */
import {groupBySignature, type SignatureRow} from '../dlq/signature.js';
import {invalid} from '../errors.js';
import type {FailureFilter, InspectStore} from '../store/types.js';
import {validateTypeName} from '../task/validate.js';
import {parseTimeBound} from './inspect.js';

/** The window when none is given. */
export const DEFAULT_ERRORS_SINCE = '1h';
export const DEFAULT_ERRORS_LIMIT = 50;
export const MAX_ERRORS_LIMIT = 1000;

/** The `ax errors` selection as typed: every field optional. */
export interface FailureFilterInput {
  type?: string | undefined;
  /** A duration back from now (`15m`, `2d`) or an ISO-8601 time; DEFAULT_ERRORS_SINCE when absent. */
  since?: string | undefined;
  /** Same forms: failed before. */
  until?: string | undefined;
  /** Groups returned at most (the largest first), 1 to MAX_ERRORS_LIMIT. */
  limit?: number | undefined;
}

export interface FailureReport {
  /** The window read: from `since` to `until` (now when none was given). */
  since: Date;
  until: Date;
  /** Failed attempts counted in the window (all groups, also those past the limit). */
  total: number;
  /** Type × signature groups, the largest first, at most `limit`. */
  groups: SignatureRow[];
  /** Groups left off by the limit. */
  more: number;
}

/**
 * Validates the selection: a domain_action type, since/until as a duration or an ISO time with
 * since before until, a whole limit from 1 to MAX_ERRORS_LIMIT. Throws invalid_input naming the flag.
 */
export function parseFailureFilter(input: FailureFilterInput, nowMs: number): {filter: FailureFilter; limit: number} {
  const filter: FailureFilter = {since: parseTimeBound(input.since ?? DEFAULT_ERRORS_SINCE, 'since', nowMs)};
  if (input.until !== undefined) filter.until = parseTimeBound(input.until, 'until', nowMs);
  if (filter.until && filter.since >= filter.until)
    throw invalid(`since (${filter.since.toISOString()}) must be before until (${filter.until.toISOString()})`);
  if (input.type !== undefined) filter.type = validateTypeName(input.type);
  const limit = input.limit ?? DEFAULT_ERRORS_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_ERRORS_LIMIT)
    throw invalid(`limit must be a whole number from 1 to ${MAX_ERRORS_LIMIT}`);
  return {filter, limit};
}

/** Failed attempts per type × error signature in the window, the largest groups first. */
export async function failureReport(
  store: Pick<InspectStore, 'failureGroups'>,
  sel: {filter: FailureFilter; limit: number},
  nowMs: number,
): Promise<FailureReport> {
  const rows = groupBySignature(await store.failureGroups(sel.filter));
  return {
    since: sel.filter.since,
    until: sel.filter.until ?? new Date(nowMs),
    total: rows.reduce((n, r) => n + r.count, 0),
    groups: rows.slice(0, sel.limit),
    more: Math.max(0, rows.length - sel.limit),
  };
}
