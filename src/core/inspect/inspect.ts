import {AxError, invalid} from '../errors.js';
import {parseDuration} from '../duration.js';
import type {HotPathStore, InspectStore, ListFilter, TaskLinks} from '../store/types.js';
import {isTaskId} from '../task/id.js';
import type {HistoryEntry, TaskRecord} from '../task/model.js';
import {timeline} from './timeline.js';
import {TASK_STATES, isTaskState} from '../task/state.js';
import {MAX_DEDUP_KEY_LENGTH, parseIsoTime, validateTaskKey, validateTypeName} from '../task/validate.js';

export const MAX_LIST_LIMIT = 1000;
/** Longest `--error` substring and `--payload` value. */
export const MAX_SEARCH_TEXT = 1000;
/** A `--payload` field: a dotted path of up to 8 names (letters, digits, _; not starting with a digit). */
const PAYLOAD_PATH = /^[A-Za-z_][A-Za-z0-9_]{0,63}(?:\.[A-Za-z_][A-Za-z0-9_]{0,63}){0,7}$/;

/**
 * `field` (`orderId`, `customer.id`: names of letters, digits and _, dots for nested fields, at most
 * 8 deep) trimmed, as `--payload field=value` and `ax payload-index` take it; throws invalid_input.
 */
export function validatePayloadField(field: string): string {
  const f = typeof field === 'string' ? field.trim() : '';
  if (!PAYLOAD_PATH.test(f))
    throw invalid(`payload field "${String(field)}" is not a field name of letters, digits and _ (dots for nested fields, at most 8 deep)`);
  return f;
}

export interface ListInput {
  state?: string;
  type?: string;
  /** Created at or after: a duration back from now (`15m`, `2d`) or an ISO-8601 time. */
  since?: string;
  /** Created before: the same forms; after `since` when both are given. */
  until?: string;
  /** A substring of the last error. */
  error?: string;
  dedupKey?: string;
  /** The task key (TaskSpec.key, e.g. `tenant:42`), exactly. */
  key?: string;
  /** `field=value` (`orderId=42`, `customer.id=7`): the payload field's scalar equals the value as text. */
  payload?: string;
  limit?: number;
  /** A task id, the `next` of the previous page: the tasks after it in the newest-first order. */
  after?: string;
}

/** A checked list request: the store's filter, and the cursor still to be resolved (listTasksPage). */
export interface ListRequest {
  filter: ListFilter;
  /** The task the page starts after (an id, checked to be one). */
  after?: string;
}

/**
 * Validates list filters: known state, domain_action type, since and until as a duration or an ISO
 * time with since before until, limit 1..1000; a non-empty error substring and payload value of at
 * most MAX_SEARCH_TEXT characters, a dedup key and a key as submit takes them, `--payload field=value` with a
 * dotted field name and only with `since` (the field is read from each task created since then), an
 * `after` that is a task id. Throws invalid_input naming the flag.
 */
export function parseListFilter(input: ListInput, nowMs: number): ListRequest {
  const f: ListFilter = {limit: input.limit ?? 50};
  if (!Number.isInteger(f.limit) || f.limit < 1 || f.limit > MAX_LIST_LIMIT)
    throw invalid(`limit must be a whole number from 1 to ${MAX_LIST_LIMIT}`);
  if (input.state !== undefined) {
    if (!isTaskState(input.state)) throw invalid(`state "${input.state}" is not one of ${TASK_STATES.join(', ')}`);
    f.state = input.state;
  }
  if (input.type !== undefined) f.type = validateTypeName(input.type);
  if (input.since !== undefined) f.since = parseTimeBound(input.since, 'since', nowMs);
  if (input.until !== undefined) f.until = parseTimeBound(input.until, 'until', nowMs);
  if (f.since && f.until && f.since >= f.until)
    throw invalid(`since (${f.since.toISOString()}) must be before until (${f.until.toISOString()})`);
  if (input.error !== undefined) {
    if (input.error.trim() === '') throw invalid('error must not be empty');
    if (input.error.length > MAX_SEARCH_TEXT) throw invalid(`error is longer than ${MAX_SEARCH_TEXT} characters`);
    f.errorContains = input.error;
  }
  if (input.dedupKey !== undefined) {
    if (input.dedupKey.length === 0 || input.dedupKey.length > MAX_DEDUP_KEY_LENGTH)
      throw invalid(`dedup-key must be 1 to ${MAX_DEDUP_KEY_LENGTH} characters`);
    f.dedupKey = input.dedupKey;
  }
  if (input.key !== undefined) f.key = validateTaskKey(input.key);
  if (input.payload !== undefined) {
    const eq = input.payload.indexOf('=');
    const field = eq < 0 ? '' : input.payload.slice(0, eq).trim();
    const value = eq < 0 ? '' : input.payload.slice(eq + 1);
    if (!PAYLOAD_PATH.test(field))
      throw invalid(`payload "${input.payload}" is not field=value with a field name of letters, digits and _ (dots for nested fields)`);
    if (value === '' || value.length > MAX_SEARCH_TEXT) throw invalid(`payload value must be 1 to ${MAX_SEARCH_TEXT} characters`);
    if (f.since === undefined)
      throw invalid('payload needs since: it reads the payload of every task created since then (e.g. --since 1h)');
    f.payload = {path: `$.${field}`, value};
  }
  if (input.after === undefined) return {filter: f};
  if (!isTaskId(input.after)) throw invalid(`after "${input.after}" is not a task id (a lower-case UUID)`);
  return {filter: f, after: input.after};
}

/**
 * A `--since`/`--until` value: a duration back from `nowMs` (`15m`, `2d`) or an ISO-8601 time.
 * Throws invalid_input naming `name` for anything else.
 */
export function parseTimeBound(value: string, name: string, nowMs: number): Date {
  const s = value.trim();
  if (/^\d{4}-\d{2}-\d{2}/.test(s)) {
    const ms = parseIsoTime(s);
    if (!Number.isFinite(ms)) throw invalid(`${name} "${value}" is not a valid time`);
    return new Date(ms);
  }
  if (/^\d/.test(s)) return new Date(nowMs - parseDuration(s, name));
  throw invalid(`${name} "${value}" is neither a duration back from now (e.g. 1h, 2d) nor an ISO time (e.g. 2026-12-01T00:00:00Z)`);
}

/** One page of a task search, newest first. */
export interface TaskPage {
  tasks: TaskRecord[];
  /** The `after` of the next page: the last task's id when the page is full, else null (no more). */
  next: string | null;
}

/**
 * One page of tasks matching `req`, newest first: (created_at, id) descending, a keyset page when
 * `req.after` is given (the tasks after that one in this order, whatever was created since), so
 * consecutive pages never overlap or skip a task, equal creation times included. Throws not_found
 * when `after` is no task (any more: a cursor whose task was archived meanwhile; start again from
 * the first page).
 */
export async function listTasks(store: Pick<InspectStore, 'tasksList' | 'tasksGet'>, req: ListRequest): Promise<TaskPage> {
  let filter = req.filter;
  if (req.after !== undefined) {
    const at = await store.tasksGet({id: req.after});
    if (at === null) throw new AxError('not_found', `after: task ${req.after} does not exist (archived since?): start from the first page`);
    filter = {...filter, after: {createdAt: at.createdAt, id: at.id}};
  }
  const tasks = await store.tasksList(filter);
  const last = tasks.at(-1);
  return {tasks, next: tasks.length === filter.limit && last ? last.id : null};
}

export interface TaskDetail {
  task: TaskRecord;
  /** Its timeline, oldest first: the stored history rows and the events they imply (timeline.ts). */
  history: HistoryEntry[];
  /**
   * Its dependencies and batch (docs/workflows.md): parents, dependents, the parents still waited
   * for (a waiting task is `submitted` but not due), its batch's progress. Absent for a plain task.
   */
  links?: TaskLinks;
}

/** Where else a task may be: `archivedAt(id)` is where the archive holds it (`day/part`), or null. */
export interface ShowTaskOptions {
  archivedAt?: (id: string) => Promise<string | null>;
}

/**
 * A task and its complete timeline (timeline.ts: each attempt's start is on its outcome row, or on
 * the task row while it runs). Throws invalid_input for a malformed id, not_found for an unknown one;
 * with `opts.archivedAt`, the not_found of an id the archive holds says so and names `ax archive
 * show <id>` (details.archived: its day/part).
 */
export async function showTask(
  store: Pick<InspectStore, 'tasksGet' | 'historyList'> & Partial<Pick<HotPathStore, 'taskLinks'>>,
  id: string,
  opts: ShowTaskOptions = {},
): Promise<TaskDetail> {
  if (!isTaskId(id)) throw invalid(`"${id}" is not a task id (a lower-case UUID)`);
  const task = await store.tasksGet({id});
  if (!task) {
    const archived = (await opts.archivedAt?.(id)) ?? null;
    if (archived !== null)
      throw new AxError(
        'not_found',
        `task ${id} is no longer in the live tables: it was archived (${archived}); \`ax archive show ${id}\` shows it`,
        {details: {archived}},
      );
    throw new AxError('not_found', `task ${id} does not exist`);
  }
  const history = timeline(task, await store.historyList({taskId: id}));
  const links = await store.taskLinks?.(id);
  const linked = links && (links.parents.length > 0 || links.dependents.length > 0 || links.batch !== null);
  return linked ? {task, history, links} : {task, history};
}

/** Moved to cancel.ts (it also stops running tasks); re-exported for existing importers. */
export {cancelTask} from './cancel.js';
