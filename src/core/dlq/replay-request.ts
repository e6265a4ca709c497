/**
 * The input of a replay as typed (`ax dlq replay` flags, client.dlq.replay arguments), checked in
 * one place before anything is read: the selection (ids or a filter, not both), --rate, --force
 * with its --reason, --patch. Pure code; every refusal is invalid_input with the flag named, so
 * bad input changes nothing. What needs the store (unknown ids, an empty selection, a patch that
 * makes some payload invalid) is planReplay's.
 */
import {errorMessage, invalid} from '../errors.js';
import {isTaskId} from '../task/id.js';
import type {JsonObject} from '../task/model.js';
import {type DeadFilterInput, parseDeadFilter} from './dlq.js';
import type {DeadFilter} from '../store/types.js';

/** Which dead tasks a replay takes: ids, or a filter (`all`: every dead task). */
export type ReplaySelection = {ids: string[]} | {filter: DeadFilter; all?: boolean};

/** How a replay is applied. */
export interface ReplayOptions {
  /**
   * Also succeeded and cancelled tasks (named by id), skipping the idempotency check that keeps a
   * finished task from running again; the handler sees ctx.replay. Needs a reason.
   */
  force?: boolean;
  reason?: string | null;
  /**
   * A JSON Merge Patch (RFC 7396) applied to each selected payload (by ids or by filter); the
   * results are validated as submit validates payloads (object, depth, keys, at most
   * `payloadLimitBytes`), all of them before anything is written (see the module comment of replay.ts).
   */
  patch?: JsonObject;
  /** The payload size limit for patched payloads (config payloadLimitBytes). */
  payloadLimitBytes?: number;
}

/** Most ids named at once. */
export const MAX_REPLAY_IDS = 1000;
/** Longest --reason. */
export const MAX_REASON = 1000;

/** A replay as asked for. */
export interface ReplayRequestInput {
  /** Task ids; or a filter, or `all`. */
  ids?: readonly string[];
  filter?: DeadFilterInput;
  /** Every dead task (no filter). */
  all?: boolean;
  force?: boolean;
  reason?: string | null;
  /** A JSON Merge Patch: JSON text (the command line) or an object (the SDK). */
  patch?: string | JsonObject;
  /** Tasks per second at most. */
  rate?: number;
  /** The payload size limit of patched payloads (config payloadLimitBytes). */
  payloadLimitBytes: number;
}

/** A checked request: what planReplay and runReplay take. */
export interface ReplayRequest {
  sel: ReplaySelection;
  opts: ReplayOptions;
  rate?: number;
}

const SELECT = 'name the tasks to replay: ids, a filter (--type, --since, --until, --error) or --all';

/**
 * Checks a replay request (see the module comment). Throws invalid_input for: ids mixed with a
 * filter or --all, no selection, --all with a filter, malformed or too many ids, a bad filter
 * (parseDeadFilter), a rate that is not a positive number, --force without --reason, a reason over
 * MAX_REASON characters, a --patch that is not JSON or not an object.
 */
export function parseReplayRequest(input: ReplayRequestInput, nowMs: number): ReplayRequest {
  const ids = input.ids ?? [];
  const filter = parseDeadFilter(input.filter ?? {}, nowMs);
  const filtered = Object.keys(filter).length > 0;
  if (ids.length > 0 && (filtered || input.all === true))
    throw invalid('give either ids or a filter (--type, --since, --until, --error, --all), not both');
  const sel: ReplaySelection = ids.length > 0 ? {ids: [...ids]} : {filter, ...(input.all === undefined ? {} : {all: input.all})};
  checkSelection(sel);
  if (input.rate !== undefined) checkRate(input.rate);
  if (input.reason != null && input.reason.length > MAX_REASON) throw invalid(`--reason is longer than ${MAX_REASON} characters`);
  const opts: ReplayOptions = {
    force: input.force === true,
    reason: input.reason ?? null,
    payloadLimitBytes: input.payloadLimitBytes,
  };
  checkForce(opts);
  if (input.patch !== undefined) opts.patch = typeof input.patch === 'string' ? parsePatch(input.patch) : checkPatch(input.patch);
  return {sel, opts, ...(input.rate === undefined ? {} : {rate: input.rate})};
}

/**
 * Throws invalid_input for a selection that names nothing, `all` with a filter, or ids that are
 * malformed or more than MAX_REPLAY_IDS (after removing repeats).
 */
export function checkSelection(sel: ReplaySelection): void {
  if ('ids' in sel) {
    const ids = [...new Set(sel.ids)];
    if (ids.length === 0) throw invalid(SELECT);
    if (ids.length > MAX_REPLAY_IDS) throw invalid(`at most ${MAX_REPLAY_IDS} ids at once: use a filter for more`);
    const bad = ids.filter((id) => !isTaskId(id));
    if (bad.length > 0) throw invalid(`not task ids (lower-case UUIDs): ${bad.slice(0, 5).join(', ')}`);
    return;
  }
  const f = sel.filter;
  const filtered = f.type !== undefined || f.since !== undefined || f.until !== undefined || f.errorContains !== undefined;
  if (sel.all === true && filtered) throw invalid('--all replays every dead task: it does not combine with a filter');
  if (sel.all !== true && !filtered) throw invalid(SELECT);
}

/** Throws invalid_input unless `rate` is a positive, finite number of tasks per second. */
export function checkRate(rate: number): void {
  if (!(Number.isFinite(rate) && rate > 0)) throw invalid(`--rate must be a positive number of tasks per second (got ${rate})`);
}

/** Throws invalid_input for a forced replay without a (non-blank) reason. */
export function checkForce(opts: Pick<ReplayOptions, 'force' | 'reason'>): void {
  if (opts.force === true && (opts.reason ?? '').trim() === '')
    throw invalid('--force needs --reason: say why finished tasks are run again (it is kept in history, the audit trail and ctx.replay)');
}

/** Parses `--patch` text: a JSON object (a merge patch that is not an object would replace the whole payload). */
export function parsePatch(text: string): JsonObject {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw invalid(`--patch is not valid JSON: ${errorMessage(e)}`);
  }
  return checkPatch(v);
}

/** Returns `v` when it is a JSON object, else throws invalid_input. */
export function checkPatch(v: unknown): JsonObject {
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw invalid('--patch must be a JSON object (a JSON Merge Patch, RFC 7396)');
  return v as JsonObject;
}
