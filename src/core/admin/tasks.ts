/**
 * Tasks in the admin service: show (with the archive's pointer for an archived id), trace, list, stats,
 * the failed attempts' report, and cancel — of one task, or of many as plan → (confirm) → run.
 * Input is validated before anything is opened (invalid_input). A cancel tells the workers through
 * the session's broker, opened only when a running task was cancelled.
 */
import {archivedAt, showArchived} from '../archive/admin.js';
import {invalid, isAxError} from '../errors.js';
import {checkTraceId, fromArchived, traceOf, type TaskTrace, unknownTask} from '../inspect/trace.js';
import {failureReport, type FailureFilterInput, type FailureReport, parseFailureFilter} from '../inspect/failures.js';
import {type CancelManyResult, type CancelManySelection, parseCancelMany, planCancelMany, runCancelMany} from '../inspect/cancel-many.js';
import {cancelTask, type CancelResult, checkCancelReason} from '../inspect/cancel.js';
import {type ListInput, listTasks, parseListFilter, showTask, type TaskDetail, type TaskPage} from '../inspect/inspect.js';
import {parseStatsSince, tasksStats, type TasksStatsReport} from '../inspect/stats.js';
import {isTaskId} from '../task/id.js';
import type {DlqAdmin} from './dlq.js';
import type {AdminSession} from './session.js';
import {type BulkRequest, createBulkPlanner, type PlannedBulk} from './tasks-bulk.js';

export type {BulkRequest, PlannedBulk} from './tasks-bulk.js';

/** A bulk cancel as asked for: every task of `type` in the comma-separated `state`s (see parseCancelMany). */
export interface CancelManyRequest {
  type?: string | undefined;
  state?: string | undefined;
  /** Recorded in each task's history and the audit rows. */
  reason?: string | null;
  /** The audit row's command: `tasks cancel --type`, … */
  command: string;
}

/** A checked and counted bulk cancel: nothing has changed yet. */
export interface PlannedCancel {
  readonly selection: CancelManySelection;
  /** Tasks per state the selection holds now (at least one). */
  readonly tasks: Record<string, number>;
  /**
   * Cancels the selection in audited batches (see runCancelMany): what it took may differ from the
   * plan's counts, as tasks move on meanwhile. Running attempts are announced to the workers; a
   * failed announcement is reported (`notified: false`), never thrown.
   */
  run(): Promise<CancelManyResult>;
}

export interface TasksAdmin {
  /**
   * A task and its timeline. Throws invalid_input for a malformed id (before connecting), not_found
   * for an unknown one — naming `ax archive show` when the archive holds it (`archive: false`: the
   * archive is not looked at, as the SDK's getTask).
   */
  show(id: string, o?: {archive?: boolean}): Promise<TaskDetail>;
  /**
   * A task's path through ax as one timeline with the trace context of its submit (see
   * core/inspect/trace.ts), from the live tables or, once archived, from the archive. Throws
   * invalid_input for a malformed id (before connecting), not_found for an id neither live nor archived.
   */
  trace(id: string): Promise<TaskTrace>;
  /**
   * One page of tasks matching a filter (see parseListFilter), newest first; `after` is the previous
   * page's `next` (see listTasks). Throws invalid_input for a bad filter, limit or malformed `after`
   * (nothing opened), not_found for an `after` that is no task.
   */
  list(input: ListInput): Promise<TaskPage>;
  /** Backlog per type and what finished since `since` (a duration like 1h or a time; default 1h). */
  stats(since?: string): Promise<TasksStatsReport>;
  /** Failed attempts per type × error signature (see `ax errors`). */
  errors(filter?: FailureFilterInput): Promise<FailureReport>;
  /**
   * Cancels a submitted, failed or running task as the operator (AX_OPERATOR), audited as `tasks
   * cancel` (see core/inspect/cancel.ts); a running one's worker is told through RabbitMQ, opened
   * then (`notified: false` when it cannot be: the cancel stands). Throws invalid_input for a
   * malformed id, a reason over MAX_CANCEL_REASON or a bad AX_OPERATOR (nothing opened), not_found
   * for an unknown id, conflict for a finished task, unavailable when MySQL cannot be reached.
   */
  cancel(id: string, o?: {reason?: string | null}): Promise<CancelResult>;
  /**
   * Checks a bulk cancel (type, states, reason, operator: invalid_input, nothing opened), then counts
   * what it selects: not_found when nothing. Nothing changes until the plan runs.
   */
  planCancel(req: CancelManyRequest): Promise<PlannedCancel>;
  /**
   * Checks a bulk cancel or replay of named tasks or of every task matching a filter (parseBulk:
   * invalid_input, nothing opened; also for a bad AX_OPERATOR), resolves it to at most MAX_BULK
   * tasks (invalid_input naming the limit when the filter matches more) and counts them per state
   * and how many the action applies to (a cancel: submitted, failed, running; a replay: dead). A
   * selection of nothing is a plan of zeros. Nothing changes until the plan runs: a cancel in
   * audited batches (running attempts stopped and their workers told), a replay through the
   * dead-letter replay by ids; both audited as `req.command` by the operator.
   */
  planBulk(req: BulkRequest): Promise<PlannedBulk>;
}

/** `dlq` replays for the bulk replays (the same session's dead-letter admin). */
export function createTasksAdmin(s: AdminSession, dlq: DlqAdmin): TasksAdmin {
  const {ctx} = s;
  return {
    async show(id, o = {}) {
      if (!isTaskId(id)) throw invalid(`"${id}" is not a task id (a lower-case UUID)`);
      const store = await s.store();
      if (o.archive === false) return showTask(store, id);
      const target = s.archiveTarget();
      return showTask(store, id, {archivedAt: (i) => archivedAt(target, ctx.config.cell, i)});
    },
    async trace(id) {
      checkTraceId(id);
      const store = await s.store();
      const task = await store.tasksGet({id});
      if (task) return traceOf(task, await store.historyList({taskId: id}), undefined, await store.taskLinks(id));
      let found;
      try {
        found = await showArchived(s.archiveTarget(), ctx.config.cell, id);
      } catch (e) {
        // Not archived either (or no archive here, as for the SDK): unknown.
        if (isAxError(e, 'not_found') || isAxError(e, 'unavailable')) throw unknownTask(id);
        throw e;
      }
      const {task: row, rows} = fromArchived(found.archived);
      return traceOf(row, rows, {at: new Date(found.part.createdAt), part: `${found.part.day}/${found.part.part}`});
    },
    async list(input) {
      const req = parseListFilter(input, ctx.clock.now());
      return listTasks(await s.store(), req);
    },
    async stats(since) {
      const from = parseStatsSince(since, ctx.clock.now());
      return tasksStats(await s.store(), from);
    },
    async errors(filter = {}) {
      const now = ctx.clock.now();
      const f = parseFailureFilter(filter, now);
      return failureReport(await s.store(), f, now);
    },
    async cancel(id, o = {}) {
      const reason = o.reason ?? null;
      if (!isTaskId(id)) throw invalid(`"${id}" is not a task id (a lower-case UUID)`);
      checkCancelReason(reason);
      const operator = ctx.operator();
      return cancelTask(await s.store(), id, ctx.actor, reason, operator, s.lazyBroker());
    },
    async planCancel(req) {
      const reason = req.reason ?? null;
      checkCancelReason(reason);
      const selection = parseCancelMany(req);
      const operator = ctx.operator();
      const store = await s.store();
      const tasks = await planCancelMany(store, selection);
      return {
        selection,
        tasks,
        run: () => runCancelMany(store, selection, {actor: ctx.actor, operator, reason, command: req.command, notifier: s.lazyBroker()}),
      };
    },
    planBulk: createBulkPlanner(s, dlq),
  };
}
