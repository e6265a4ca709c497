/**
 * The attempts' starts as a derived table for tests' SQL: `FROM ${ATTEMPT_STARTS} s` has one row
 * (task_id, attempt, at, worker) per attempt started. Since schema version 18 a claim writes no
 * history row: an attempt's start is on its outcome row (started_at, with the worker it ran on), and
 * the attempt running now is on the task row. `attempt` is the claim's: a hand-back (a release to
 * failed, a park to submitted) records one less on its row.
 */
export const ATTEMPT_STARTS = `(
    SELECT h.task_id, h.attempt + (h.to_state = 'submitted' OR (h.to_state = 'failed' AND h.error LIKE 'released:%')) AS attempt,
           h.started_at AS at, h.worker
      FROM task_history h WHERE h.from_state = 'running' AND h.started_at IS NOT NULL
    UNION ALL
    SELECT t.id, t.attempt, t.started_at, t.worker FROM tasks t WHERE t.state = 'running' AND t.started_at IS NOT NULL
  )`;

/** The most intervals open at once; an interval ending at t is closed before one starting at t. */
export function maxConcurrent(spans: Array<{start: number; end: number}>): number {
  const points = spans.flatMap((s) => [
    [s.start, 1],
    [s.end, -1],
  ]);
  points.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
  let now = 0;
  let max = 0;
  for (const [, d] of points) max = Math.max(max, (now += d!));
  return max;
}
