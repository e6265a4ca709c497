import {AxError, invalid} from '../errors.js';
import {parseDuration} from '../duration.js';
import type {InspectStore, ListFilter} from '../store/types.js';
import {isTaskId} from '../task/id.js';
import type {HistoryEntry, TaskRecord} from '../task/model.js';
import {timeline} from './timeline.js';
import {TASK_STATES, isTaskState} from '../task/state.js';
import {MAX_DEDUP_KEY_LENGTH, parseIsoTime, validateTypeName} from '../task/validate.js';

export const MAX_LIST_LIMIT = 1000;
/** Longest `--error` substring and `--payload` value. */
export const MAX_SEARCH_TEXT = 1000;
/** A `--payload` field: a dotted path of up to 8 names (letters, digits, _; not starting with a digit). */
const PAYLOAD_PATH = /^[A-Za-z_][A-Za-z0-9_]{0,63}(?:\.[A-Za-z_][A-Za-z0-9_]{0,63}){0,7}$/;

export interface ListInput {
  state?: string;
  type?: string;
  /** A duration back from now (`15m`, `2d`) or an ISO-8601 time. */
  since?: string;
  /** A substring of the last error. */
  error?: string;
  dedupKey?: string;
  /** `field=value` (`orderId=42`, `customer.id=7`): the payload field's scalar equals the value as text. */
  payload?: string;
  limit?: number;
}

/**
 * Validates list filters: known state, domain_action type, since as duration or ISO time, 1..1000;
 * a non-empty error substring and payload value of at most MAX_SEARCH_TEXT characters, a dedup key
 * as submit takes it, `--payload field=value` with a dotted field name and only with `since` (the
 * field is read from each task created since then). Throws invalid_input naming the flag.
 */
export function parseListFilter(input: ListInput, nowMs: number): ListFilter {
  const f: ListFilter = {limit: input.limit ?? 50};
  if (!Number.isInteger(f.limit) || f.limit < 1 || f.limit > MAX_LIST_LIMIT)
    throw invalid(`limit must be a whole number from 1 to ${MAX_LIST_LIMIT}`);
  if (input.state !== undefined) {
    if (!isTaskState(input.state)) throw invalid(`state "${input.state}" is not one of ${TASK_STATES.join(', ')}`);
    f.state = input.state;
  }
  if (input.type !== undefined) f.type = validateTypeName(input.type);
  if (input.since !== undefined) f.since = parseTimeBound(input.since, 'since', nowMs);
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
  return f;
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

export function listTasks(store: Pick<InspectStore, 'tasksList'>, filter: ListFilter): Promise<TaskRecord[]> {
  return store.tasksList(filter);
}

export interface TaskDetail {
  task: TaskRecord;
  /** Its timeline, oldest first: the stored history rows and the events they imply (timeline.ts). */
  history: HistoryEntry[];
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
  store: Pick<InspectStore, 'tasksGet' | 'historyList'>,
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
  return {task, history: timeline(task, await store.historyList({taskId: id}))};
}

/** Moved to cancel.ts (it also stops running tasks); re-exported for existing importers. */
export {cancelTask} from './cancel.js';
