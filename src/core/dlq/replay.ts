/**
 * `ax dlq replay` / client.dlq.replay: dead tasks back to submitted, by ids or by filter, in
 * batches (one guarded transaction each, with its history and audit rows), then their doorbells
 * rung (publish with confirms; the replay's UPDATE marked them published in advance, and a failed
 * publish undoes that mark). The input is
 * checked first (replay-request.ts), the selection next (`planReplay`), so bad input changes nothing.
 *
 * The retry budget: the store sets retry_base = attempt, and workers count the budget and the
 * backoff from it (attempt − retry_base), so the task has all of its retries again, the first
 * retry waits the first delay, and `attempt` keeps counting for a readable timeline.
 *
 * --patch, and why it is validated before anything is written: a replay is many transactions
 * (REPLAY_BATCH tasks each, paced by --rate over minutes), so a patch found invalid for a task of
 * a late batch could not undo the batches already committed; and one transaction over 100k rows
 * held for the whole paced run would lock them all that long. So planReplay reads every selected
 * payload (pages of the same selection, read-only) and validates the merge result of each: one
 * invalid result refuses the replay with nothing changed. The replay then applies the same patch
 * again inside each guarded transaction, to the payload read under the row lock (the text written
 * is computed from the row as locked; no validated copies of 100k payloads are kept in memory).
 * The two agree: a dead task's payload changes only by a replay, which takes it out of the dead
 * state, and filter pages only take tasks dead since before the plan (`asOf`). Only a task named by
 * id that was replayed with another patch, ran and died again between the plan and its batch can
 * differ; its batch is then rolled back and the replay stops with invalid_input (batches before it
 * stay replayed, as the summary says).
 */
import type {Broker} from '../broker/types.js';
import {AxError, errorMessage, invalid} from '../errors.js';
import type {Logger} from '../log.js';
import type {DbClockStore, DeadFilter, DeadLetterStore, DispatchRef, HotPathStore, InspectStore} from '../store/types.js';
import {mergePatch} from '../task/merge-patch.js';
import type {JsonObject} from '../task/model.js';
import {TRANSITIONS, type TaskState} from '../task/state.js';
import {validatePayload} from '../task/validate.js';
import {type Clock, sleep} from '../time.js';
import {type ReplayOptions, type ReplaySelection, checkForce, checkPatch, checkRate, checkSelection} from './replay-request.js';

/** Tasks per transaction (and per doorbell publish) when not paced by a rate. */
export const REPLAY_BATCH = 2000;
/** Replay transactions at once when not paced by a rate (R1 in docs/benchmarks.md). */
export const UNPACED_IN_FLIGHT = 2;
/** Batches per second under --rate (the batch is rate / this, at least 1, at most REPLAY_BATCH): a steady flow, not bursts. */
export const PACED_BATCHES_PER_SECOND = 10;
/** Payloads read per page when a --patch over a filter is validated. */
export const PATCH_CHECK_PAGE = 1000;
/** Above this many tasks, a replay asks for confirmation (--yes when not on a terminal). */
export const CONFIRM_ABOVE = 1000;
const SAMPLE = 10;
/** The payload limit of patched payloads when the caller gives none (the config default). */
const DEFAULT_PAYLOAD_LIMIT = 65_536;
/**
 * Most bytes (UTF-8) of a --patch kept in the record of a replay: the audit row's filter (`patch`)
 * and each replayed task's history row. A longer patch is cut there (never inside a character) and
 * ends with PATCH_CLIPPED_MARKER and its whole size, so the record says it is not the whole patch.
 */
export const PATCH_RECORD_BYTES = 1024;
export const PATCH_CLIPPED_MARKER = '… [clipped]';

/**
 * The patch as recorded: its compact JSON, at most PATCH_RECORD_BYTES bytes of it, then (when cut)
 * PATCH_CLIPPED_MARKER and ` <n> bytes in all`.
 */
export function patchRecord(patch: JsonObject): string {
  const text = JSON.stringify(patch);
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= PATCH_RECORD_BYTES) return text;
  // A cut inside a multi-byte character decodes to U+FFFD at the end: drop it.
  const head = bytes
    .subarray(0, PATCH_RECORD_BYTES)
    .toString('utf8')
    .replace(/\uFFFD+$/, '');
  return `${head}${PATCH_CLIPPED_MARKER} ${bytes.length} bytes in all`;
}

export type {ReplayOptions, ReplaySelection} from './replay-request.js';

export type ReplayStore = Pick<DeadLetterStore, 'deadList' | 'deadPage' | 'deadReplay' | 'deadErrorGroups'> &
  Pick<InspectStore, 'tasksGetMany'> &
  Pick<HotPathStore, 'doorbellsForget'> &
  DbClockStore;

/** What a replay would do: the dry run's answer, and what the confirmation is about. */
export interface ReplayPlan {
  /** Tasks selected. */
  total: number;
  byType: Record<string, number>;
  /** Tasks selected per state: dead only, unless a forced replay names succeeded or cancelled ones. */
  byState: Partial<Record<TaskState, number>>;
  /** A few of the ids. */
  sample: string[];
  /** Named ids that are not dead (running, submitted again, waiting for a retry): skipped. */
  skipped: Array<{id: string; state: TaskState; why: string}>;
  /** Whether an operator must confirm (more than CONFIRM_ABOVE tasks, or a filter without a type). */
  needsConfirmation: boolean;
  /** Dead tasks died before this (the database's time when planned): later deaths are not replayed. */
  asOf: Date;
  /** With a patch: the patch, checked against every selected payload; the replay applies it. */
  patch?: {patch: JsonObject; limitBytes: number};
}

export interface ReplayResult {
  replayed: number;
  /** The first replayed ids (all of them up to 1000). */
  ids: string[];
  skipped: Array<{id: string; state: TaskState | null; why: string}>;
  /** Replayed but their doorbell could not be rung: the reconciler rings for them later. */
  unrung: number;
  /** How long the replay took (the clock's monotonic time), pauses of --rate included. */
  elapsedMs: number;
}

/**
 * Checks a selection and counts what it selects; changes nothing. Throws invalid_input for a
 * selection checkSelection refuses, a patch that is not an object, or `force` without a reason;
 * not_found for unknown ids or a filter that selects nothing; conflict for a named task that is
 * succeeded or cancelled unless `opts.force` (then they are selected too; filters still select
 * dead tasks only); invalid_input naming the first task whose payload `opts.patch` makes invalid
 * (every selected payload is checked: by ids from the rows read, by filter page after page).
 */
export async function planReplay(store: ReplayStore, sel: ReplaySelection, opts: ReplayOptions = {}): Promise<ReplayPlan> {
  checkForce(opts);
  checkSelection(sel);
  const force = opts.force === true;
  const patch =
    opts.patch === undefined ? undefined : {patch: checkPatch(opts.patch), limitBytes: opts.payloadLimitBytes ?? DEFAULT_PAYLOAD_LIMIT};
  const asOf = await store.clockNow();
  if ('ids' in sel) {
    const ids = [...new Set(sel.ids)];
    const got = new Map((await store.tasksGetMany({ids})).map((t) => [t.id, t]));
    const rows = ids.map((id) => [id, got.get(id) ?? null] as const);
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
    const byState: ReplayPlan['byState'] = {};
    const skipped: ReplayPlan['skipped'] = [];
    const dead: string[] = [];
    for (const [id, t] of rows) {
      if (t === null) continue;
      if (selectable.includes(t.state)) {
        if (patch) patched(t.payload, id, patch);
        dead.push(id);
        byType[t.type] = (byType[t.type] ?? 0) + 1;
        byState[t.state] = (byState[t.state] ?? 0) + 1;
      } else skipped.push({id, state: t.state, why: `is ${t.state}, not ${force ? 'finished' : 'dead'}`});
    }
    return {
      total: dead.length,
      byType,
      byState,
      sample: dead.slice(0, SAMPLE),
      skipped,
      needsConfirmation: dead.length > CONFIRM_ABOVE,
      asOf,
      ...(patch ? {patch} : {}),
    };
  }
  const f = {...sel.filter, until: bounded(sel.filter, asOf)};
  const groups = await store.deadErrorGroups(f);
  const byType: Record<string, number> = {};
  for (const g of groups) byType[g.type] = (byType[g.type] ?? 0) + g.count;
  const total = Object.values(byType).reduce((a, b) => a + b, 0);
  if (total === 0) throw new AxError('not_found', 'no dead task matches the filter: nothing to replay');
  if (patch) {
    let afterId: string | undefined;
    for (;;) {
      const page = await store.deadPage({...f, limit: PATCH_CHECK_PAGE, withPayload: true, ...(afterId ? {afterId} : {})});
      for (const t of page) patched(t.payload ?? {}, t.id, patch);
      if (page.length < PATCH_CHECK_PAGE) break;
      afterId = page.at(-1)!.id;
    }
  }
  const sample = (await store.deadList({...f, limit: SAMPLE})).map((t) => t.id);
  return {
    total,
    byType,
    byState: {dead: total},
    sample,
    skipped: [],
    needsConfirmation: total > CONFIRM_ABOVE || f.type === undefined,
    asOf,
    ...(patch ? {patch} : {}),
  };
}

/** The text of `payload` with the plan's patch applied, or invalid_input naming the task (then `after`). */
function patched(payload: JsonObject, id: string, p: NonNullable<ReplayPlan['patch']>, after = () => 'nothing replayed'): string {
  try {
    return validatePayload(mergePatch(payload, p.patch), p.limitBytes);
  } catch (e) {
    throw invalid(`--patch makes the payload of task ${id} invalid: ${errorMessage(e)}; ${after()}`);
  }
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
 * Replays what `plan` selected (see planReplay): by ids, or page after page of the filter (in id
 * order, each page replayed before the next is read, deaths after `plan.asOf` left alone; the
 * pages follow a keyset on id, so no task is read twice). With `plan.patch`, each batch rewrites
 * the payloads it replays, under its row locks (see the module comment). Tasks
 * another replay (or anything else) moved first are skipped and reported. A forced run
 * (`run.force`) also replays the succeeded and cancelled tasks the plan selected and stamps them
 * for ctx.replay; its audit command ends in ` --force`. A patch is recorded (patchRecord: at most
 * PATCH_RECORD_BYTES) in the audit row's filter and in each replayed task's history. Throws invalid_input for a rate that is
 * not a positive number, or `force` without a reason.
 */
export async function runReplay(run: ReplayRun, sel: ReplaySelection, plan: ReplayPlan): Promise<ReplayResult> {
  if (run.rate !== undefined) checkRate(run.rate);
  checkForce(run);
  const batch =
    run.rate === undefined ? REPLAY_BATCH : Math.max(1, Math.min(REPLAY_BATCH, Math.floor(run.rate / PACED_BATCHES_PER_SECOND)));
  const out: ReplayResult = {replayed: 0, ids: [], skipped: [...plan.skipped], unrung: 0, elapsedMs: 0};
  const filter = 'ids' in sel ? {ids: [...new Set(sel.ids)]} : sel.filter;
  // The patch is part of what was done: recorded (bounded) in the audit row and each task's history.
  const patchText = plan.patch === undefined ? undefined : patchRecord(plan.patch.patch);
  // A forced replay is its own audit action: `<command> --force`, and force: true in the filter.
  const audit = {
    operator: run.operator,
    command: run.force ? `${run.command} --force` : run.command,
    filter: {
      ...filterJson(filter),
      ...(run.force ? {force: true} : {}),
      ...(patchText === undefined ? {} : {patch: patchText}),
    },
    reason: run.reason,
  };
  const started = run.clock.monotonic();
  const skip = new Set(plan.skipped.map((s) => s.id));
  const named = 'ids' in sel ? [...new Set(sel.ids)].filter((id) => !skip.has(id)) : [];
  const p = plan.patch;
  // Changed since the plan checked it (see the module comment): this batch rolls back, the replay stops.
  const changed = () => `its payload changed since the plan: its batch was rolled back, ${out.replayed} tasks replayed before it`;
  const rewrite = p === undefined ? undefined : (payload: JsonObject, id: string) => patched(payload, id, p, changed);
  let afterId: string | undefined;
  // Unpaced, UNPACED_IN_FLIGHT replay transactions run at once (on disjoint ids: pages follow the
  // keyset, named ids are sliced), so the database works on one batch while the next is sent.
  // The doorbells of each batch are rung (published) in order, at most one publish in flight,
  // while the next batches are replayed; all awaited before returning.
  const window = run.rate === undefined ? UNPACED_IN_FLIGHT : 1;
  const inFlight: Array<Promise<void>> = [];
  let ringing: Promise<void> = Promise.resolve();
  for (let i = 0; ; i += batch) {
    let ids: string[];
    if ('ids' in sel) ids = named.slice(i, i + batch);
    else {
      const f = {...sel.filter, until: bounded(sel.filter, plan.asOf), limit: batch, ...(afterId ? {afterId} : {})};
      ids = (await run.store.deadPage(f)).map((t) => t.id);
      afterId = ids.at(-1);
    }
    if (ids.length === 0) break;
    const job = run.store
      .deadReplay({
        ids,
        actor: run.actor,
        audit,
        ...(run.force ? {force: {at: new Date(run.clock.now())}} : {}),
        ...(rewrite === undefined || patchText === undefined ? {} : {rewrite, patch: patchText}),
      })
      .then((r) => {
        for (const k of r.skipped)
          out.skipped.push({...k, why: k.state === null ? 'no longer exists' : `was ${k.state} when replayed (moved by someone else)`});
        out.replayed += r.replayed.length;
        for (const t of r.replayed) if (out.ids.length < 1000) out.ids.push(t.id);
        if (r.replayed.length > 0) ringing = ringing.then(() => ring(run, r.replayed)).then((unrung) => void (out.unrung += unrung));
        run.onProgress?.(out.replayed, plan.total);
      });
    // Awaited below; the no-op handler only keeps a failure of a batch not yet awaited from being unhandled.
    job.catch(() => undefined);
    inFlight.push(job);
    if (inFlight.length >= window) await inFlight.shift();
    if (run.rate !== undefined) {
      // Until the tasks so far are within the rate. Timers fire on a whole-millisecond clock and
      // may come a fraction of a millisecond early: wait whole milliseconds, and check again.
      for (;;) {
        const due = ((out.replayed + out.skipped.length) / run.rate) * 1000 - (run.clock.monotonic() - started);
        if (due <= 0) break;
        await sleep(run.clock, Math.ceil(due));
      }
    }
  }
  try {
    for (const job of inFlight) await job;
  } finally {
    await ringing;
  }
  out.elapsedMs = run.clock.monotonic() - started;
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

/**
 * Publishes the doorbells of replayed tasks (marked published by the replay itself); returns how
 * many stay unrung. For a failed publish the marks are undone (doorbellsForget), so the scheduler
 * rings them at once; if even that fails, the reconciler rings them after AX_REPUBLISH_AFTER.
 */
async function ring(run: ReplayRun, tasks: Array<DispatchRef & {fence: number}>): Promise<number> {
  try {
    await run.broker.publish(tasks.map(({id, type, pool, priority}) => ({id, type, pool, priority})));
    return 0;
  } catch (e) {
    run.logger.warn('replayed tasks not rung: the scheduler will ring for them', {tasks: tasks.length, error: errorMessage(e)});
  }
  try {
    await run.store.doorbellsForget({rung: tasks.map(({id, fence}) => ({id, fence}))});
  } catch (e) {
    run.logger.warn('could not undo the published mark of unrung replayed tasks: the reconciler rings them after AX_REPUBLISH_AFTER', {
      tasks: tasks.length,
      error: errorMessage(e),
    });
  }
  return tasks.length;
}
