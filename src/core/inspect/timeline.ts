/**
 * A task's complete timeline from its row and its stored history rows.
 *
 * What is stored (schema version 18 on): a task's creation is its row (created_at, submitted_by),
 * every later transition is a history row, and an attempt is one history row written with its
 * outcome, carrying its start (started_at) and the worker it ran on; the attempt running now is on
 * the task row (started_at, worker). Rows written before version 18 are kept as they are: a
 * `submitted` row for the creation and a `running` row for each claim.
 *
 * The timeline adds what the rows imply, in the shape of the old rows: the creation (when no
 * creation row was stored), each attempt's start ("running", at its started_at, on its worker)
 * before its end, and the start of the attempt running now. Both generations of rows (and a task
 * with some of each) give the same timeline.
 */
import type {HistoryEntry, TaskRecord} from '../task/model.js';

/** The running event of an attempt: from the state before its claim, at its start, on its worker. */
function started(taskId: string, before: HistoryEntry | undefined, attempt: number, at: Date, worker: string | null): HistoryEntry {
  return {taskId, from: before?.to ?? 'submitted', to: 'running', attempt, worker, at, error: null, stack: null, startedAt: null};
}

/** See the module comment. `rows` are the task's stored history rows, oldest first. */
export function timeline(task: TaskRecord, rows: readonly HistoryEntry[]): HistoryEntry[] {
  const out: HistoryEntry[] = [];
  // The creation: the task row itself (a row inserted before version 18 has its own history row).
  if (rows[0]?.from !== null || rows[0]?.to !== 'submitted')
    out.push({
      taskId: task.id,
      from: null,
      to: 'submitted',
      attempt: 0,
      worker: task.submittedBy,
      at: task.createdAt,
      error: null,
      stack: null,
      startedAt: null,
    });
  for (const h of rows) {
    // A stored running row (before version 18, or a claim by an older ax) already says it.
    if (h.from === 'running' && h.startedAt !== null && out.at(-1)?.to !== 'running')
      // Every row records the task's attempt count after it (a hand-back's is one less: it gave
      // its attempt back), so the claim that began this attempt made it the previous one's + 1.
      out.push(started(task.id, out.at(-1), (out.at(-1)?.attempt ?? 0) + 1, h.startedAt, h.worker));
    out.push(h);
  }
  if (task.state === 'running' && task.startedAt !== null && out.at(-1)?.to !== 'running')
    out.push(started(task.id, out.at(-1), task.attempt, task.startedAt, task.worker));
  return out;
}

/** Where a task stands in its retry budget (see attemptBudget). */
export interface AttemptBudget {
  /** Attempts made in all (tasks.attempt: it keeps counting across replays). */
  attempt: number;
  /** Attempts its budget allows: 1 + max retries, counted from the latest replay when there was one. */
  allowed: number;
  /** Attempts made since the latest DLQ replay (attempt − tasks.retry_base); null when never replayed (retry_base 0). */
  sinceReplay: number | null;
}

/**
 * The task's attempts against its budget: a DLQ replay gives the task a whole budget again and the
 * store keeps the attempts made until then (tasks.retry_base), so after a replay "attempt 2 of 1"
 * reads as attempt 2, 1 of 1 since the replay.
 */
export function attemptBudget(task: Pick<TaskRecord, 'attempt' | 'maxRetries' | 'retryBase'>): AttemptBudget {
  return {attempt: task.attempt, allowed: task.maxRetries + 1, sinceReplay: task.retryBase > 0 ? task.attempt - task.retryBase : null};
}

/** The ATTEMPT cell of the lists: `2/6`, or after a replay `1/1 (2 in all)`. */
export function attemptCell(b: AttemptBudget): string {
  return b.sinceReplay === null ? `${b.attempt}/${b.allowed}` : `${b.sinceReplay}/${b.allowed} (${b.attempt} in all)`;
}

/** `attempt 2 of 6`, or after a replay `attempt 2 (1 of 1 since the replay)`. */
export function attemptText(b: AttemptBudget): string {
  return b.sinceReplay === null
    ? `attempt ${b.attempt} of ${b.allowed}`
    : `attempt ${b.attempt} (${b.sinceReplay} of ${b.allowed} since the replay)`;
}
