/**
 * What `ax cron list` and `ax cron rm` show beyond the schedule rows: each schedule's next fire
 * time and latest fired occurrence, and the fire times of cancelled occurrences. Reads only.
 */
import type {InspectStore, ScheduleStore} from '../store/types.js';
import type {TaskState} from '../task/state.js';
import type {ScheduleView} from './admin.js';
import {nextFireTimes, parseSchedule} from './parse.js';

/** The latest occurrence whose fire time has come (scheduled or triggered), with its state now. */
export interface LastOccurrence {
  taskId: string;
  fireAt: Date;
  state: TaskState;
}

/** A schedule with its next fire time after now (null when paused) and its latest fired occurrence. */
export interface ScheduleOverview extends ScheduleView {
  nextOccurrence: Date | null;
  lastOccurrence: LastOccurrence | null;
}

/** An occurrence cancelled with its schedule, and its fire time (its run_at; null if the row vanished meanwhile). */
export interface CancelledOccurrence {
  taskId: string;
  fireAt: Date | null;
}

type Store = Pick<ScheduleStore, 'occurrencesPrevious'> & Pick<InspectStore, 'tasksGet'>;

/** `s` with its next and last occurrence at `nowMs` (the database's now). */
export async function scheduleOverview(store: Store, s: ScheduleView, nowMs: number): Promise<ScheduleOverview> {
  let next: number | undefined;
  if (!s.paused) {
    try {
      next = nextFireTimes(parseSchedule(s.cron, s.tz), nowMs, 1)[0];
    } catch {
      next = undefined; // a stored schedule that no longer parses (a zone dropped from the tz database)
    }
  }
  const prev = await store.occurrencesPrevious({name: s.name, before: new Date(nowMs + 1)});
  const task = prev ? await store.tasksGet({id: prev.id}) : null;
  return {
    ...s,
    nextOccurrence: next === undefined ? null : new Date(next),
    lastOccurrence: task ? {taskId: task.id, fireAt: task.runAt, state: task.state} : null,
  };
}

/** The fire times (run_at) of cancelled occurrences. */
export async function cancelledOccurrences(store: Pick<InspectStore, 'tasksGet'>, ids: string[]): Promise<CancelledOccurrence[]> {
  return Promise.all(ids.map(async (id) => ({taskId: id, fireAt: (await store.tasksGet({id}))?.runAt ?? null})));
}
