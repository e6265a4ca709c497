/**
 * The dead-letter queue as an operator sees it: list, show and stats of dead tasks (replay comes
 * with its own module). Inputs are validated here, before any query; the store does the reading.
 */
import {AxError, invalid} from '../errors.js';
import {parseTimeBound, showTask, type ShowTaskOptions, type TaskDetail} from '../inspect/inspect.js';
import type {DeadFilter, DeadLetterStore, DeadTaskRow, InspectStore} from '../store/types.js';
import {isTaskId} from '../task/id.js';
import type {HistoryEntry} from '../task/model.js';
import {validateTypeName} from '../task/validate.js';
import {groupBySignature, type SignatureRow} from './signature.js';

export const MAX_DLQ_LIMIT = 1000;
/** Longest `--error` substring. */
export const MAX_ERROR_FILTER = 1000;

/** A dead-task filter as typed: every field optional. */
export interface DeadFilterInput {
  type?: string | undefined;
  /** A duration back from now (`15m`, `2d`) or an ISO-8601 time: died at or after. */
  since?: string | undefined;
  /** Same forms: died before. */
  until?: string | undefined;
  /** A substring of the last error. */
  error?: string | undefined;
}

/**
 * Validates a dead-task filter: a domain_action type, since/until as a duration or an ISO time with
 * since before until, a non-empty error substring of at most MAX_ERROR_FILTER characters. Throws
 * invalid_input naming the flag.
 */
export function parseDeadFilter(input: DeadFilterInput, nowMs: number): DeadFilter {
  const f: DeadFilter = {};
  if (input.type !== undefined) f.type = validateTypeName(input.type);
  if (input.since !== undefined) f.since = parseTimeBound(input.since, 'since', nowMs);
  if (input.until !== undefined) f.until = parseTimeBound(input.until, 'until', nowMs);
  if (f.since && f.until && f.since >= f.until)
    throw invalid(`since (${f.since.toISOString()}) must be before until (${f.until.toISOString()})`);
  if (input.error !== undefined) {
    if (input.error.trim() === '') throw invalid('error must not be empty');
    if (input.error.length > MAX_ERROR_FILTER) throw invalid(`error is longer than ${MAX_ERROR_FILTER} characters`);
    f.errorContains = input.error;
  }
  return f;
}

export interface DeadPage {
  tasks: DeadTaskRow[];
  /** The id to pass as `after` for the next page; null when this page is the last. */
  next: string | null;
}

/**
 * One page of dead tasks, newest death first. `after` is the `next` of the previous page. Throws
 * invalid_input for a bad limit or a malformed cursor, not_found for a cursor that is no task.
 */
export async function listDead(
  store: Pick<DeadLetterStore, 'deadList'> & Pick<InspectStore, 'tasksGet'>,
  filter: DeadFilter,
  page: {limit: number; after?: string | undefined},
): Promise<DeadPage> {
  if (!Number.isInteger(page.limit) || page.limit < 1 || page.limit > MAX_DLQ_LIMIT)
    throw invalid(`limit must be a whole number from 1 to ${MAX_DLQ_LIMIT}`);
  if (page.after !== undefined) {
    if (!isTaskId(page.after)) throw invalid(`after "${page.after}" is not a task id (a lower-case UUID)`);
    const at = await store.tasksGet({id: page.after});
    if (at === null) throw new AxError('not_found', `after: task ${page.after} does not exist`);
    if (at.finishedAt === null) throw invalid(`after: task ${page.after} is ${at.state}, not a finished task of a previous page`);
  }
  const tasks = await store.deadList({...filter, limit: page.limit, ...(page.after === undefined ? {} : {after: page.after})});
  const last = tasks.at(-1);
  return {tasks, next: tasks.length === page.limit && last ? last.id : null};
}

/** The end of one failed attempt: the transition that recorded its error, and the stack. */
export interface AttemptFailure {
  attempt: number;
  /** When it started (its claim); null when its start was never recorded. */
  startedAt: Date | null;
  /** When it ended. */
  at: Date;
  /** failed (retried) or dead. */
  to: HistoryEntry['to'];
  worker: string | null;
  error: string | null;
  stack: string | null;
}

export interface DeadDetail extends TaskDetail {
  /** Each failed attempt, oldest first, with its error and stack. */
  attempts: AttemptFailure[];
}

/**
 * A dead task, each attempt's error and stack, and its timeline. Throws invalid_input for a
 * malformed id, not_found for an unknown one (with `opts.archivedAt`, one the archive holds is
 * named as archived, as showTask does), conflict (naming `ax tasks show`) when it is not dead.
 */
export async function showDead(
  store: Pick<InspectStore, 'tasksGet' | 'historyList'>,
  id: string,
  opts: ShowTaskOptions = {},
): Promise<DeadDetail> {
  const detail = await showTask(store, id, opts);
  if (detail.task.state !== 'dead')
    throw new AxError('conflict', `task ${id} is ${detail.task.state}, not dead: \`ax tasks show ${id}\` shows any task`);
  const attempts: AttemptFailure[] = [];
  let claimed = -1;
  let startedAt: Date | null = null;
  // The timeline has each attempt's running event (stored, or implied by its outcome row).
  for (const h of detail.history) {
    if (h.to === 'running') [claimed, startedAt] = [h.attempt, h.at];
    // A release (pool full, shutdown) gives its attempt back: its row's attempt is one less than the claim's.
    else if (h.from === 'running' && (h.to === 'failed' || h.to === 'dead') && h.attempt === claimed)
      attempts.push({attempt: h.attempt, startedAt, at: h.at, to: h.to, worker: h.worker, error: h.error, stack: h.stack});
  }
  return {...detail, attempts};
}

/** Dead tasks per type × error signature, the largest groups first. */
export async function deadStats(store: Pick<DeadLetterStore, 'deadErrorGroups'>, filter: DeadFilter): Promise<SignatureRow[]> {
  return groupBySignature(await store.deadErrorGroups(filter));
}
