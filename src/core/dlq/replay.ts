/**
 * `ax dlq replay` / client.dlq.replay: dead tasks back to submitted, by ids or by filter, in
 * batches (one guarded transaction each, with its history and audit rows), then their doorbells
 * rung as the producer does (publish with confirms, then the fence-tied mark). Selecting is
 * validated first (`planReplay`), so bad input changes nothing.
 *
 * The retry budget: the store sets retry_base = attempt, and workers count the budget and the
 * backoff from it (attempt − retry_base), so the task has all of its retries again, the first
 * retry waits the first delay, and `attempt` keeps counting for a readable timeline.
 */
import type {Broker} from '../broker/types.js';
import {AxError, errorMessage, invalid} from '../errors.js';
import type {Logger} from '../log.js';
import type {DbClockStore, DeadFilter, DeadLetterStore, HotPathStore, InspectStore} from '../store/types.js';
import {isTaskId} from '../task/id.js';
import {mergePatch} from '../task/merge-patch.js';
import type {JsonObject} from '../task/model.js';
import {TRANSITIONS, type TaskState} from '../task/state.js';
import {validatePayload} from '../task/validate.js';
import {type Clock, sleep} from '../time.js';

/** Tasks per transaction (and per doorbell publish). */
export const REPLAY_BATCH = 500;
/** Most ids named at once. */
export const MAX_REPLAY_IDS = 1000;
/** Above this many tasks, a replay asks for confirmation (--yes when not on a terminal). */
export const CONFIRM_ABOVE = 1000;
const SAMPLE = 10;
/** The payload limit of patched payloads when the caller gives none (the config default). */
const DEFAULT_PAYLOAD_LIMIT = 65_536;

export type ReplaySelection = {ids: string[]} | {filter: DeadFilter; all?: boolean};

export type ReplayStore = Pick<DeadLetterStore, 'deadList' | 'deadReplay' | 'deadErrorGroups'> &
  Pick<InspectStore, 'tasksGet'> &
  Pick<HotPathStore, 'doorbellsMark'> &
  DbClockStore;

/** What a replay would do: the dry run's answer, and what the confirmation is about. */
export interface ReplayPlan {
  /** Dead tasks selected. */
  total: number;
  byType: Record<string, number>;
  /** A few of the ids. */
  sample: string[];
  /** Named ids that are not dead (running, submitted again, waiting for a retry): skipped. */
  skipped: Array<{id: string; state: TaskState; why: string}>;
  /** Whether an operator must confirm (more than CONFIRM_ABOVE tasks, or a filter without a type). */
  needsConfirmation: boolean;
  /** Dead tasks died before this (the database's time when planned): later deaths are not replayed. */
  asOf: Date;
  /** With a patch: the patched, validated payload text of each selected task, written by the replay. */
  payloads?: Record<string, string>;
}

export interface ReplayResult {
  replayed: number;
  /** The first replayed ids (all of them up to 1000). */
  ids: string[];
  skipped: Array<{id: string; state: TaskState | null; why: string}>;
  /** Replayed but their doorbell could not be rung: the reconciler rings for them later. */
  unrung: number;
}

const hasFilter = (f: DeadFilter): boolean =>
  f.type !== undefined || f.since !== undefined || f.until !== undefined || f.errorContains !== undefined;

/**
 * Checks a selection and counts what it selects; changes nothing. Throws invalid_input for
 * malformed or too many ids, an empty selection spec (neither ids, a filter nor `all`), or `all`
 * with a filter; not_found for unknown ids or a filter that selects nothing; conflict for a named
 * task that is succeeded or cancelled unless `opts.force` (then they are selected too; filters
 * still select dead tasks only); invalid_input for `force` without a reason.
 */
export async function planReplay(store: ReplayStore, sel: ReplaySelection, opts: ReplayOptions = {}): Promise<ReplayPlan> {
  checkForce(opts);
  const force = opts.force === true;
  if (opts.patch !== undefined && !('ids' in sel))
    throw invalid('--patch takes task ids, not a filter: list them first (ax dlq list --json), then name them');
  if (opts.patch !== undefined && (opts.patch === null || typeof opts.patch !== 'object' || Array.isArray(opts.patch)))
    throw invalid('--patch must be a JSON object (a JSON Merge Patch, RFC 7396)');
  const asOf = await store.clockNow();
  if ('ids' in sel) {
    const ids = [...new Set(sel.ids)];
    if (ids.length === 0) throw invalid('name the tasks to replay: ids, a filter (--type, --since, --until, --error) or --all');
    if (ids.length > MAX_REPLAY_IDS) throw invalid(`at most ${MAX_REPLAY_IDS} ids at once: use a filter for more`);
    const bad = ids.filter((id) => !isTaskId(id));
    if (bad.length > 0) throw invalid(`not task ids (lower-case UUIDs): ${bad.slice(0, 5).join(', ')}`);
    const rows = await Promise.all(ids.map(async (id) => [id, await store.tasksGet({id})] as const));
    const unknown = rows.filter(([, t]) => t === null).map(([id]) => id);
    if (unknown.length > 0)
      throw new AxError('not_found', `unknown tasks: ${unknown.slice(0, 5).join(', ')}${unknown.length > 5 ? ', …' : ''}`);
    const finished = rows.filter(([, t]) => t?.state === 'succeeded' || t?.state === 'cancelled');
    if (finished.length > 0 && !force) {
      const [id, t] = finished[0]!;
      throw new AxError(
        'conflict',
        `task ${id} is ${t?.state}: only dead tasks are replayed; add --force with --reason to run a finished task again${finished.length > 1 ? ` (${finished.length} such tasks)` : ''}`,
      );
    }
    const selectable: readonly TaskState[] = TRANSITIONS[force ? 'forceReplay' : 'replay'].from;
    const byType: Record<string, number> = {};
    const skipped: ReplayPlan['skipped'] = [];
    const dead: string[] = [];
    const picked: Array<{id: string; payload: JsonObject}> = [];
    for (const [id, t] of rows) {
      if (t === null) continue;
      if (selectable.includes(t.state)) {
        dead.push(id);
        picked.push({id, payload: t.payload});
        byType[t.type] = (byType[t.type] ?? 0) + 1;
      } else skipped.push({id, state: t.state, why: `is ${t.state}, not ${force ? 'finished' : 'dead'}`});
    }
    const plan: ReplayPlan = {
      total: dead.length,
      byType,
      sample: dead.slice(0, SAMPLE),
      skipped,
      needsConfirmation: dead.length > CONFIRM_ABOVE,
      asOf,
    };
    if (opts.patch !== undefined) plan.payloads = patchPayloads(picked, opts.patch, opts.payloadLimitBytes ?? DEFAULT_PAYLOAD_LIMIT);
    return plan;
  }
  const f = sel.filter;
  if (sel.all === true && hasFilter(f)) throw invalid('--all replays every dead task: it does not combine with a filter');
  if (sel.all !== true && !hasFilter(f))
    throw invalid('name the tasks to replay: ids, a filter (--type, --since, --until, --error) or --all');
  const groups = await store.deadErrorGroups({...f, until: bounded(f, asOf)});
  const byType: Record<string, number> = {};
  for (const g of groups) byType[g.type] = (byType[g.type] ?? 0) + g.count;
  const total = Object.values(byType).reduce((a, b) => a + b, 0);
  if (total === 0) throw new AxError('not_found', 'no dead task matches the filter: nothing to replay');
  const sample = (await store.deadList({...f, until: bounded(f, asOf), limit: SAMPLE})).map((t) => t.id);
  return {total, byType, sample, skipped: [], needsConfirmation: total > CONFIRM_ABOVE || f.type === undefined, asOf};
}

/** How a replay is applied. */
export interface ReplayOptions {
  /**
   * Also succeeded and cancelled tasks (named by id), skipping the idempotency check that keeps a
   * finished task from running again; the handler sees ctx.replay. Needs a reason.
   */
  force?: boolean;
  reason?: string | null;
  /**
   * A JSON Merge Patch (RFC 7396) applied to each selected payload; the results are validated as
   * submit validates payloads (object, depth, keys, at most `payloadLimitBytes`). Tasks named by id only.
   */
  patch?: JsonObject;
  /** The payload size limit for patched payloads (config payloadLimitBytes). */
  payloadLimitBytes?: number;
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
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw invalid('--patch must be a JSON object (a JSON Merge Patch, RFC 7396)');
  return v as JsonObject;
}

/** The patched payload text of each task, or invalid_input naming the first task whose result is not a valid payload. */
function patchPayloads(
  tasks: ReadonlyArray<{id: string; payload: JsonObject}>,
  patch: JsonObject,
  limitBytes: number,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const t of tasks) {
    try {
      out[t.id] = validatePayload(mergePatch(t.payload, patch), limitBytes);
    } catch (e) {
      throw invalid(`--patch makes the payload of task ${t.id} invalid: ${errorMessage(e)}; nothing replayed`);
    }
  }
  return out;
}

export interface ReplayRun {
  store: ReplayStore;
  broker: Pick<Broker, 'publish'>;
  clock: Clock;
  logger: Logger;
  /** host:pid, in history. */
  actor: string;
  operator: string;
  reason: string | null;
  /** The command line's selection, for the audit row. */
  command: string;
  /** Tasks per second at most (omitted: as fast as the batches go). */
  rate?: number;
  /** Called after each batch with the tasks done so far and the planned total. */
  onProgress?: (done: number, total: number) => void;
  /** A forced replay (see ReplayOptions.force); `reason` is then required. */
  force?: boolean;
}

/**
 * Replays what `plan` selected (see planReplay): by ids, or page after page of the filter (the
 * newest dead first, each page replayed before the next is read, deaths after `plan.asOf` left
 * alone; a page of the filter never repeats: replayed and skipped tasks are no longer dead). Tasks
 * another replay (or anything else) moved first are skipped and reported. A forced run
 * (`run.force`) also replays the succeeded and cancelled tasks the plan selected and stamps them
 * for ctx.replay; its audit command ends in ` --force`. Throws invalid_input for a rate that is
 * not a positive number, or `force` without a reason.
 */
export async function runReplay(run: ReplayRun, sel: ReplaySelection, plan: ReplayPlan): Promise<ReplayResult> {
  if (run.rate !== undefined && !(Number.isFinite(run.rate) && run.rate > 0))
    throw invalid('rate must be a positive number of tasks per second');
  checkForce(run);
  const batch = run.rate === undefined ? REPLAY_BATCH : Math.max(1, Math.min(REPLAY_BATCH, Math.floor(run.rate)));
  const out: ReplayResult = {replayed: 0, ids: [], skipped: [...plan.skipped], unrung: 0};
  const filter = 'ids' in sel ? {ids: [...new Set(sel.ids)]} : sel.filter;
  // A forced replay is its own audit action: `<command> --force`, and force: true in the filter.
  const audit = {
    operator: run.operator,
    command: run.force ? `${run.command} --force` : run.command,
    filter: run.force ? {...filterJson(filter), force: true} : filterJson(filter),
    reason: run.reason,
  };
  const started = run.clock.monotonic();
  const named = 'ids' in sel ? [...new Set(sel.ids)].filter((id) => !plan.skipped.some((s) => s.id === id)) : [];
  for (let i = 0; ; i += batch) {
    let ids: string[];
    if ('ids' in sel) ids = named.slice(i, i + batch);
    else ids = (await run.store.deadList({...sel.filter, until: bounded(sel.filter, plan.asOf), limit: batch})).map((t) => t.id);
    if (ids.length === 0) break;
    const payloads = plan.payloads === undefined ? undefined : Object.fromEntries(ids.map((id) => [id, plan.payloads![id]!]));
    const r = await run.store.deadReplay({
      ids,
      actor: run.actor,
      audit,
      ...(run.force ? {force: {at: new Date(run.clock.now())}} : {}),
      ...(payloads === undefined ? {} : {payloads}),
    });
    for (const k of r.skipped)
      out.skipped.push({...k, why: k.state === null ? 'no longer exists' : `was ${k.state} when replayed (moved by someone else)`});
    out.replayed += r.replayed.length;
    for (const t of r.replayed) if (out.ids.length < 1000) out.ids.push(t.id);
    if (r.replayed.length > 0) out.unrung += await ring(run, r.replayed);
    run.onProgress?.(out.replayed, plan.total);
    if (run.rate !== undefined) {
      const due = ((out.replayed + out.skipped.length) / run.rate) * 1000 - (run.clock.monotonic() - started);
      if (due > 0) await sleep(run.clock, due);
    }
  }
  return out;
}

/** The filter's `until`, or `asOf` when that is earlier (or there is none). */
function bounded(f: DeadFilter, asOf: Date): Date {
  return f.until !== undefined && f.until < asOf ? f.until : asOf;
}

function filterJson(f: DeadFilter | {ids: string[]}): Record<string, unknown> {
  if ('ids' in f) return {ids: f.ids.length > 100 ? [...f.ids.slice(0, 100), `… ${f.ids.length - 100} more`] : f.ids};
  const o: Record<string, unknown> = {};
  if (f.type !== undefined) o.type = f.type;
  if (f.since !== undefined) o.since = f.since.toISOString();
  if (f.until !== undefined) o.until = f.until.toISOString();
  if (f.errorContains !== undefined) o.error = f.errorContains;
  if (Object.keys(o).length === 0) o.all = true;
  return o;
}

/** Publishes doorbells for replayed tasks, then marks them at their fence; returns how many stay unrung. */
async function ring(run: ReplayRun, tasks: Array<{id: string; type: string; pool: 'io' | 'cpu'; fence: number}>): Promise<number> {
  try {
    await run.broker.publish(tasks.map(({id, type, pool}) => ({id, type, pool})));
  } catch (e) {
    run.logger.warn('replayed tasks not rung: the reconciler will ring for them', {tasks: tasks.length, error: errorMessage(e)});
    return tasks.length;
  }
  try {
    await run.store.doorbellsMark({rung: tasks.map(({id, fence}) => ({id, fence}))});
  } catch (e) {
    // Rung but not marked: a scheduler may ring once more (harmless: the claim decides).
    run.logger.warn('could not mark replayed tasks published', {tasks: tasks.length, error: errorMessage(e)});
  }
  return 0;
}
