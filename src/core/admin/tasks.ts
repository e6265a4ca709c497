/**
 * Tasks in the admin service: show (with the archive's pointer for an archived id), list, stats and
 * the failed attempts' report. Input is validated before anything is opened (invalid_input).
 */
import {archivedAt} from '../archive/admin.js';
import {invalid} from '../errors.js';
import {failureReport, type FailureFilterInput, type FailureReport, parseFailureFilter} from '../inspect/failures.js';
import {type ListInput, listTasks, parseListFilter, showTask, type TaskDetail} from '../inspect/inspect.js';
import {parseStatsSince, tasksStats, type TasksStatsReport} from '../inspect/stats.js';
import {isTaskId} from '../task/id.js';
import type {TaskRecord} from '../task/model.js';
import type {AdminSession} from './session.js';

export interface TasksAdmin {
  /**
   * A task and its timeline. Throws invalid_input for a malformed id (before connecting), not_found
   * for an unknown one — naming `ax archive show` when the archive holds it (`archive: false`: the
   * archive is not looked at, as the SDK's getTask).
   */
  show(id: string, o?: {archive?: boolean}): Promise<TaskDetail>;
  /** Tasks matching a filter (see parseListFilter), newest first. */
  list(input: ListInput): Promise<TaskRecord[]>;
  /** Backlog per type and what finished since `since` (a duration like 1h or a time; default 1h). */
  stats(since?: string): Promise<TasksStatsReport>;
  /** Failed attempts per type × error signature (see `ax errors`). */
  errors(filter?: FailureFilterInput): Promise<FailureReport>;
}

export function createTasksAdmin(s: AdminSession): TasksAdmin {
  const {ctx} = s;
  return {
    async show(id, o = {}) {
      if (!isTaskId(id)) throw invalid(`"${id}" is not a task id (a lower-case UUID)`);
      const store = await s.store();
      if (o.archive === false) return showTask(store, id);
      const target = s.archiveTarget();
      return showTask(store, id, {archivedAt: (i) => archivedAt(target, ctx.config.cell, i)});
    },
    async list(input) {
      const filter = parseListFilter(input, ctx.clock.now());
      return listTasks(await s.store(), filter);
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
  };
}
