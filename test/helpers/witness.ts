/**
 * The witness checks every fault scenario ends with (issue 24), read from storage after the run:
 * - every acknowledged task is terminal (succeeded, dead or cancelled);
 * - no task succeeded twice (at most one `succeeded` row, and it is the task's last attempt);
 * - no attempt started before the task was first due (`dueAt`, as the test submitted it);
 * - no stale outcome was accepted: each attempt of a task ended at most once, and a finished task's
 *   outcome rows are attempts 1..attempt, each once (a fenced worker's late write would add one),
 *   and a success only on the last attempt.
 * The report lists offenders by id so a failing assertion says which task broke which rule.
 */
import type {TestEnv} from './env.js';
import {ATTEMPT_STARTS} from './history.js';

export interface WitnessReport {
  tasks: number;
  /** Acknowledged ids with no row at all: lost. */
  lost: string[];
  nonTerminal: Array<{id: string; state: string}>;
  doubleSuccess: string[];
  /** Attempts that started before the task's due time (from `dueAt`), with how early. */
  early: Array<{id: string; attempt: number; earlyMs: number}>;
  /** (task, attempt) pairs with more than one outcome row. */
  endedTwice: Array<{id: string; attempt: number; n: number}>;
  /** Finished tasks whose outcome rows are not exactly attempts 1..attempt, or that succeeded before their last. */
  gaps: string[];
}

const CHUNK = 2000;

async function inChunks<T>(ids: string[], q: (part: string[]) => Promise<T[]>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < ids.length; i += CHUNK) out.push(...(await q(ids.slice(i, i + CHUNK))));
  return out;
}

/**
 * Reads the witnesses for `ids` (the tasks the producers acknowledged). `dueAt` maps an id to the
 * earliest time it may run (the test's submit time plus its delay); ids without one are not checked
 * for early runs. `allowed` (default none) lists states other than succeeded/dead/cancelled that a
 * scenario accepts at the end (none do today).
 */
export async function readWitnesses(env: TestEnv, ids: string[], dueAt: Map<string, number> = new Map()): Promise<WitnessReport> {
  const marks = (n: number) => Array.from({length: n}, () => '?').join(',');
  const tasks = await inChunks(ids, (part) =>
    env.sql<{id: string; state: string; attempt: number}>(`SELECT id, state, attempt FROM tasks WHERE id IN (${marks(part.length)})`, part),
  );
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const outcomes = await inChunks(ids, (part) =>
    env.sql<{id: string; attempt: number; n: number; ok: number}>(
      `SELECT task_id AS id, attempt, COUNT(*) AS n, SUM(to_state = 'succeeded') AS ok FROM task_history
        WHERE task_id IN (${marks(part.length)}) AND from_state = 'running'
          AND NOT (to_state = 'submitted' OR (to_state = 'failed' AND COALESCE(error, '') LIKE 'released:%'))
        GROUP BY task_id, attempt`,
      part,
    ),
  );
  const starts = dueAt.size
    ? await inChunks(ids, (part) =>
        env.sql<{id: string; attempt: number; at: Date}>(
          `SELECT s.task_id AS id, s.attempt, s.at FROM ${ATTEMPT_STARTS} s WHERE s.task_id IN (${marks(part.length)})`,
          part,
        ),
      )
    : [];
  const perTask = new Map<string, Array<{attempt: number; n: number; ok: number}>>();
  for (const o of outcomes)
    perTask.set(o.id, [...(perTask.get(o.id) ?? []), {attempt: Number(o.attempt), n: Number(o.n), ok: Number(o.ok)}]);
  const terminal = new Set(['succeeded', 'dead', 'cancelled']);
  const report: WitnessReport = {tasks: ids.length, lost: [], nonTerminal: [], doubleSuccess: [], early: [], endedTwice: [], gaps: []};
  for (const id of ids) {
    const t = byId.get(id);
    if (!t) {
      report.lost.push(id);
      continue;
    }
    if (!terminal.has(t.state)) report.nonTerminal.push({id, state: t.state});
    const rows = perTask.get(id) ?? [];
    if (rows.reduce((a, r) => a + r.ok, 0) > 1) report.doubleSuccess.push(id);
    for (const r of rows) if (r.n > 1) report.endedTwice.push({id, attempt: r.attempt, n: r.n});
    if (t.state === 'succeeded' || t.state === 'dead') {
      const attempts = rows.map((r) => r.attempt).sort((a, b) => a - b);
      const want = Array.from({length: Number(t.attempt)}, (_, i) => i + 1);
      const okRow = rows.find((r) => r.ok > 0);
      if (attempts.join() !== want.join() || (t.state === 'succeeded' && okRow?.attempt !== Number(t.attempt))) report.gaps.push(id);
    }
  }
  for (const s of starts) {
    const due = dueAt.get(s.id);
    if (due !== undefined && s.at.getTime() < due) report.early.push({id: s.id, attempt: Number(s.attempt), earlyMs: due - s.at.getTime()});
  }
  return report;
}

/** The report with every offender list empty: what `expect(...).toEqual` compares a run against. */
export const cleanWitnesses = (tasks: number): WitnessReport => ({
  tasks,
  lost: [],
  nonTerminal: [],
  doubleSuccess: [],
  early: [],
  endedTwice: [],
  gaps: [],
});

/**
 * The same witnesses over every task of `env`'s database, in SQL (for runs too big to list ids:
 * the soak). `acked` is how many tasks the producers acknowledged (all of the database's tasks came
 * from them); a delayed task carries its due time as `payload.due` (ms). Offender lists hold at most
 * 20 ids each; `lost` is reported as a count of missing rows, as ids are not kept.
 */
export async function readAllWitnesses(env: TestEnv, acked: number): Promise<WitnessReport> {
  const OUTCOME = `from_state = 'running' AND NOT (to_state = 'submitted' OR (to_state = 'failed' AND COALESCE(error, '') LIKE 'released:%'))`;
  const [count] = await env.sql<{n: number}>('SELECT COUNT(*) AS n FROM tasks');
  const missing = acked - Number(count!.n);
  const nonTerminal = await env.sql<{id: string; state: string}>(
    "SELECT id, state FROM tasks WHERE state NOT IN ('succeeded', 'dead', 'cancelled') LIMIT 20",
  );
  const doubleSuccess = await env.sql<{id: string}>(
    "SELECT task_id AS id FROM task_history WHERE to_state = 'succeeded' GROUP BY task_id HAVING COUNT(*) > 1 LIMIT 20",
  );
  const endedTwice = await env.sql<{id: string; attempt: number; n: number}>(
    `SELECT task_id AS id, attempt, COUNT(*) AS n FROM task_history WHERE ${OUTCOME} GROUP BY task_id, attempt HAVING n > 1 LIMIT 20`,
  );
  const gaps = await env.sql<{id: string}>(
    `SELECT t.id FROM tasks t
       LEFT JOIN (SELECT task_id, COUNT(DISTINCT attempt) AS d, MAX(attempt) AS m, MIN(IF(to_state = 'succeeded', attempt, NULL)) AS ok
                    FROM task_history WHERE ${OUTCOME} GROUP BY task_id) o ON o.task_id = t.id
      WHERE t.state IN ('succeeded', 'dead')
        AND (COALESCE(o.d, 0) <> t.attempt OR COALESCE(o.m, 0) <> t.attempt OR (t.state = 'succeeded' AND COALESCE(o.ok, 0) <> t.attempt))
      LIMIT 20`,
  );
  const early = await env.sql<{id: string; attempt: number; earlyMs: number}>(
    `SELECT s.task_id AS id, s.attempt, JSON_VALUE(t.payload, '$.due') - UNIX_TIMESTAMP(s.at) * 1000 AS earlyMs
       FROM ${ATTEMPT_STARTS} s JOIN tasks t ON t.id = s.task_id
      WHERE JSON_VALUE(t.payload, '$.due') IS NOT NULL AND UNIX_TIMESTAMP(s.at) * 1000 < JSON_VALUE(t.payload, '$.due') LIMIT 20`,
  );
  return {
    tasks: acked,
    lost: missing > 0 ? [`${missing} acknowledged tasks have no row`] : [],
    nonTerminal: nonTerminal.map((r) => ({id: r.id, state: r.state})),
    doubleSuccess: doubleSuccess.map((r) => r.id),
    early: early.map((r) => ({id: r.id, attempt: Number(r.attempt), earlyMs: Number(r.earlyMs)})),
    endedTwice: endedTwice.map((r) => ({id: r.id, attempt: Number(r.attempt), n: Number(r.n)})),
    gaps: gaps.map((r) => r.id),
  };
}
