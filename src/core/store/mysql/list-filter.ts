/** The conditions of a task list's filter (ListFilter), shared by tasksListQuery (inspect.ts) and the id-range search (tasks-search.ts). */
import type {ListFilter} from '../types.js';
import type {TaskState} from '../../task/state.js';
import {PAYLOAD_TEXT_SQL} from './payloads.js';
import {LAST_ERROR_CONTAINS, Where, likeLiteral} from './where.js';

/** States whose rows pile up (kept for the retention period): idx_tasks_due finds them no faster. */
export const PILING_STATES: readonly (TaskState | undefined)[] = [undefined, 'succeeded', 'cancelled'];

/** The conditions of a list filter on `tasks` (unqualified columns), in tasksListQuery's order. */
export function listWhere(cell: string, f: ListFilter): Where {
  return (
    new Where()
      .and('cell = ?', cell)
      .if(Boolean(f.state), 'state = ?', f.state)
      .if(Boolean(f.type), 'type = ?', f.type)
      .if(Boolean(f.since), 'created_at >= ?', f.since)
      .if(Boolean(f.until), 'created_at < ?', f.until)
      .if(f.after !== undefined, 'created_at <= ? AND (created_at < ? OR id < ?)', f.after?.createdAt, f.after?.createdAt, f.after?.id)
      .if(f.dedupKey !== undefined, 'dedup_key = ?', f.dedupKey)
      .if(f.key !== undefined, 'task_key = ?', f.key)
      .if(f.errorContains !== undefined, LAST_ERROR_CONTAINS, likeLiteral(f.errorContains ?? ''))
      // Parsed per row: callers bound the scan with `since` (parseListFilter requires it).
      .if(f.payload !== undefined, `JSON_VALUE(${PAYLOAD_TEXT_SQL}, ?) = ?`, f.payload?.path, f.payload?.value)
  );
}
