/**
 * Bulk actions on tasks (the console's "select some, or all matching this filter → cancel or
 * replay"): the request checked before anything is opened, the selection resolved to at most
 * MAX_BULK tasks (named ids, or the keyset pages of the task search), counted per state, and for a
 * cancel the run in audited batches of CANCEL_BATCH, each one transaction (tasksCancelIds). A
 * replay runs through the dead-letter replay (core/admin/tasks-bulk.ts).
 */
import {invalid} from '../errors.js';
import type {InspectStore, StoppedAttempt, TaskRef} from '../store/types.js';
import {isTaskId} from '../task/id.js';
import {guardOf, type TaskState, TRANSITIONS} from '../task/state.js';
import {CANCEL_BATCH} from './cancel-many.js';
import {type CancelNotifier, MAX_CANCEL_REASON, tellWorkers} from './cancel.js';
import {type ListInput, MAX_LIST_LIMIT, parseListFilter} from './inspect.js';
import type {ListFilter} from '../store/types.js';

/** Most tasks one bulk action selects (named, or matching its filter). */
export const MAX_BULK = 10_000;

export type BulkAction = 'cancel' | 'replay';

/** The states each action applies to: a cancel's (cancel, cancelRunning) and a replay's (dead). */
export const BULK_ACTIONABLE: Readonly<Record<BulkAction, readonly TaskState[]>> = {
  cancel: [...guardOf('cancel').from, ...guardOf('cancelRunning').from],
  replay: TRANSITIONS.replay.from,
};

/** A bulk action as asked for: ids or a filter (exactly one). */
export interface BulkInput {
  action: BulkAction;
  ids?: readonly string[] | undefined;
  /** "Every task matching this filter": the task search's fields, without a limit or a cursor. */
  filter?: Omit<ListInput, 'limit' | 'after'> | undefined;
  /** Recorded in history and the audit rows (at most MAX_CANCEL_REASON characters). */
  reason?: string | null | undefined;
}

/** A checked bulk request. */
export type BulkSelection = {action: BulkAction; reason: string | null} & ({ids: string[]} | {filter: ListFilter; input: ListInput});

/**
 * Checks a bulk request. Throws invalid_input for: an unknown action, both or neither of ids and
 * filter, no ids, more than MAX_BULK ids (after removing repeats), malformed ids, a bad filter
 * (parseListFilter's refusals) or one with a limit or cursor, a reason over MAX_CANCEL_REASON.
 */
export function parseBulk(input: BulkInput, nowMs: number): BulkSelection {
  if (input.action !== 'cancel' && input.action !== 'replay')
    throw invalid(`action "${String(input.action)}" is not one of cancel, replay`);
  const reason = input.reason ?? null;
  if (reason !== null && reason.length > MAX_CANCEL_REASON) throw invalid(`reason is longer than ${MAX_CANCEL_REASON} characters`);
  if ((input.ids === undefined) === (input.filter === undefined))
    throw invalid('name the tasks (ids) or give a filter ("all matching"), one of the two');
  const base = {action: input.action, reason};
  if (input.ids !== undefined) {
    const ids = [...new Set(input.ids)];
    if (ids.length === 0) throw invalid('ids is empty: name at least one task');
    if (ids.length > MAX_BULK) throw invalid(`${ids.length} ids: at most ${MAX_BULK} tasks at once`);
    const bad = ids.filter((id) => typeof id !== 'string' || !isTaskId(id));
    if (bad.length > 0) throw invalid(`not task ids (lower-case UUIDs): ${bad.slice(0, 5).map(String).join(', ')}`);
    return {...base, ids};
  }
  const given = input.filter as ListInput;
  if (given.limit !== undefined || given.after !== undefined)
    throw invalid('a bulk filter takes no limit or after: it selects every task matching (at most 10,000)');
  const {filter} = parseListFilter({...given, limit: MAX_LIST_LIMIT}, nowMs);
  return {...base, filter, input: given};
}

/** The tasks a selection holds now: named ids that exist, or the filter's matches; `unknown`: named ids that are no task. */
export interface BulkTasks {
  tasks: TaskRef[];
  unknown: number;
}

/**
 * The tasks of a selection: the named ones read by primary key (tasksGetMany), or the filter's
 * keyset pages (tasksListRefs, MAX_LIST_LIMIT a page, newest first). Throws invalid_input when the
 * filter matches more than MAX_BULK tasks (nothing changed).
 */
export async function resolveBulk(store: Pick<InspectStore, 'tasksGetMany' | 'tasksListRefs'>, sel: BulkSelection): Promise<BulkTasks> {
  if ('ids' in sel) {
    const got = await store.tasksGetMany({ids: sel.ids});
    const tasks = got.map((t) => ({id: t.id, state: t.state, createdAt: t.createdAt}));
    return {tasks, unknown: sel.ids.length - tasks.length};
  }
  const tasks: TaskRef[] = [];
  for (;;) {
    const last = tasks.at(-1);
    const limit = Math.min(MAX_LIST_LIMIT, MAX_BULK + 1 - tasks.length);
    const page = await store.tasksListRefs({...sel.filter, limit, ...(last ? {after: {createdAt: last.createdAt, id: last.id}} : {})});
    tasks.push(...page);
    if (tasks.length > MAX_BULK)
      throw invalid(`the filter matches more than ${MAX_BULK} tasks: narrow it (a type, a state, a shorter time range)`, {
        limit: MAX_BULK,
      });
    if (page.length < limit) return {tasks, unknown: 0};
  }
}

/** What a bulk action would do, before it runs. */
export interface BulkCount {
  /** Tasks selected (that exist). */
  matched: number;
  /** Selected tasks per state now. */
  byState: Partial<Record<TaskState, number>>;
  /** Selected tasks the action applies to now (see BULK_ACTIONABLE). */
  actionable: number;
  /** Named ids that are no task (always 0 for a filter). */
  unknown: number;
}

/** Counts the resolved tasks for `action`, and the ids it would act on (oldest of the list last, as read). */
export function countBulk(action: BulkAction, t: BulkTasks): BulkCount & {ids: string[]} {
  const byState: Partial<Record<TaskState, number>> = {};
  const ids: string[] = [];
  for (const r of t.tasks) {
    byState[r.state] = (byState[r.state] ?? 0) + 1;
    if (BULK_ACTIONABLE[action].includes(r.state)) ids.push(r.id);
  }
  return {matched: t.tasks.length, byState, actionable: ids.length, unknown: t.unknown, ids};
}

/** What a bulk action did. */
export interface BulkResult {
  action: BulkAction;
  /** Tasks the action changed. */
  done: number;
  /** Selected tasks it left alone: not in a state it applies to (when planned, or by the time their batch ran), or gone. */
  skipped: number;
  /** A cancel: the tasks cancelled per state they were in. A replay: replayed per state (dead). */
  byState: Partial<Record<TaskState, number>>;
  /** A cancel that stopped running tasks: whether the workers were told (see CancelManyResult). */
  notified?: boolean;
  notifyError?: string;
  /** A replay: tasks replayed whose doorbell could not be rung (the reconciler rings for them). */
  unrung?: number;
}

/**
 * Cancels `ids` in batches of CANCEL_BATCH (tasksCancelIds: one transaction and one audit row per
 * batch, `audit(batch)` its filter), then tells the workers of each batch's running attempts
 * (never throws for that: `notified: false`). Tasks no longer submitted, failed or running are
 * skipped. `selected` is the plan's count (skipped = selected − done).
 */
export async function runBulkCancel(
  store: Pick<InspectStore, 'tasksCancelIds'>,
  ids: readonly string[],
  o: {
    selected: number;
    actor: string;
    operator: string;
    reason: string | null;
    command: string;
    filter: (batch: readonly string[]) => Record<string, unknown>;
    notifier?: CancelNotifier;
  },
): Promise<BulkResult> {
  const out: BulkResult = {action: 'cancel', done: 0, skipped: 0, byState: {}};
  for (let i = 0; i < ids.length; i += CANCEL_BATCH) {
    const batch = ids.slice(i, i + CANCEL_BATCH);
    const audit = {operator: o.operator, command: o.command, filter: o.filter(batch), reason: o.reason};
    const done = await store.tasksCancelIds({ids: batch, actor: o.actor, reason: o.reason, audit});
    const stopped: StoppedAttempt[] = [];
    for (const d of done) {
      out.byState[d.from] = (out.byState[d.from] ?? 0) + 1;
      if (d.stopped) stopped.push(d.stopped);
    }
    out.done += done.length;
    if (stopped.length > 0) {
      const sent = o.notifier
        ? await tellWorkers(o.notifier, stopped, o.operator, o.reason)
        : {notified: false, notifyError: 'no broker to tell the workers'};
      if (out.notified !== false) Object.assign(out, sent);
    }
  }
  out.skipped = o.selected - out.done;
  return out;
}
