/**
 * The outcomes of attempts (see HotPathStore.outcomesApply): the transition each kind makes, its
 * guarded UPDATE, its one history row per attempt, and the breaker counts of the batch. Two paths:
 * a worker's batch is written without a read (applyFast); anything else, or a batch in which a row
 * moved, goes through a locking read first (applyCareful).
 */
import {TRANSITIONS, guardOf, type TaskState, type TransitionName} from '../../task/state.js';
import type {DueTask, Outcome, OutcomeKind, OutcomeResult} from '../types.js';
import {AxError} from '../../errors.js';
import {type Db, type PoolConnection, exec, marks, select, tx} from './db.js';
import {GuardMismatch, expectAffected, guardedWhere, txGuarded} from './guards.js';
import {caseById, clipError, clipStack, historyInsert, type HistoryRow} from './rows.js';
import {type EndedTask, LINK_DEPENDENTS, resolveEnded} from './links.js';

/** The transition each outcome kind makes: the same names as the table. */
const TRANSITION_OF: Record<OutcomeKind, TransitionName> = {
  complete: 'complete',
  fail: 'fail',
  deadLetter: 'deadLetter',
  release: 'release',
  rescue: 'rescue',
  rescueDeadLetter: 'rescueDeadLetter',
  park: 'park',
};

/** The error an outcome records against the task (last_error) and in history, and its stack. */
function errorOf(o: Outcome): {error: string | null; stack: string | null} {
  switch (o.kind) {
    case 'complete':
      return {error: null, stack: null};
    case 'release':
    case 'park':
      return {error: o.reason, stack: null};
    case 'fail':
    case 'deadLetter':
      return {error: o.error, stack: o.stack ?? null};
    case 'rescue':
    case 'rescueDeadLetter':
      return {error: o.error, stack: null};
  }
}

/**
 * The SET clause of each transition an outcome makes, over its group of outcomes. The target
 * state comes from the table; the guard is added by guardedWhere.
 */
function setClause(t: TransitionName, group: Outcome[]): {sql: string; params: unknown[]} {
  const to = TRANSITIONS[t].to;
  const err = () =>
    caseById(
      group.map((o) => [o.id, clipError(errorOf(o).error)]),
      'last_error',
    );
  const delay = () =>
    caseById(
      group.map((o) => [o.id, Math.max(0, Math.round('retryDelayMs' in o ? o.retryDelayMs : 'delayMs' in o ? o.delayMs : 0)) * 1000]),
      '0',
    );
  switch (t) {
    case 'complete': {
      const sql = `state = '${to}', lease_until = NULL, finished_at = NOW(3), updated_at = NOW(3), last_error = NULL`;
      // Results ride in the same UPDATE; a group without one writes exactly what it always did.
      const results = group.flatMap((o) =>
        o.kind === 'complete' && o.result !== undefined ? [[o.id, o.result] as [string, unknown]] : [],
      );
      if (results.length === 0) return {sql, params: []};
      const r = caseById(results, 'result_json');
      return {sql: `${sql}, result_json = ${r.sql}`, params: r.params};
    }
    case 'fail':
    case 'rescue': {
      const d = delay();
      const e = err();
      return {
        sql: `state = '${to}', lease_until = NULL, published_at = NULL, updated_at = NOW(3), run_at = NOW(3) + INTERVAL ${d.sql} MICROSECOND, last_error = ${e.sql}`,
        params: [...d.params, ...e.params],
      };
    }
    case 'release': {
      // No attempt used, no error recorded against the task; due at once, perhaps on another pool.
      const pool = caseById(
        group.flatMap((o) => (o.kind === 'release' && o.pool !== undefined ? [[o.id, o.pool] as [string, unknown]] : [])),
        'pool',
      );
      return {
        sql: `state = '${to}', lease_until = NULL, published_at = NULL, updated_at = NOW(3), run_at = NOW(3), attempt = attempt - 1, pool = ${pool.sql}`,
        params: pool.params,
      };
    }
    case 'park': {
      // No attempt used, no error against the task; due after the admission step's delay, marked
      // with why it waits (parked_at before parked: SET sees the new values left to right).
      const d = delay();
      const kind = caseById(
        group.map((o) => [o.id, o.kind === 'park' ? o.parked : null]),
        'NULL',
      );
      const kind2 = caseById(
        group.map((o) => [o.id, o.kind === 'park' ? o.parked : null]),
        'NULL',
      );
      return {
        sql: `state = '${to}', lease_until = NULL, published_at = NULL, updated_at = NOW(3), run_at = NOW(3) + INTERVAL ${d.sql} MICROSECOND, attempt = attempt - 1, parked_at = IF(${kind.sql} IS NULL, NULL, NOW(3)), parked = ${kind2.sql}`,
        params: [...d.params, ...kind.params, ...kind2.params],
      };
    }
    case 'deadLetter':
    case 'rescueDeadLetter': {
      const e = err();
      return {
        sql: `state = '${to}', lease_until = NULL, finished_at = NOW(3), updated_at = NOW(3), last_error = ${e.sql}`,
        params: e.params,
      };
    }
    default:
      throw new AxError('internal', `transition ${t} is not an outcome`);
  }
}

/** The states an outcome ends a task in: dependents and batches are updated for those (links.ts). */
const ENDING: ReadonlySet<TransitionName> = new Set(['complete', 'deadLetter', 'rescueDeadLetter']);

/**
 * One outcome transition's UPDATE over `group` (non-empty), guarded from the table. Exported for
 * tests. `claimedLinks` (the fast path, which has not read the rows): an ending transition also
 * requires the rows whose claim saw no dependents to have none still — a dependent submitted since
 * the claim flagged its parent, and the mismatch sends the batch to the careful path, which reads.
 */
export function outcomeUpdateSql(t: TransitionName, group: Outcome[], claimedLinks = false): {sql: string; params: unknown[]} {
  const set = setClause(t, group);
  const progress = progressClause(group);
  const where = guardedWhere(t, group);
  let links = '';
  const params: unknown[] = [];
  if (claimedLinks && ENDING.has(t)) {
    const flagged = group.filter((o) => ((o.links ?? 0) & LINK_DEPENDENTS) !== 0).map((o) => o.id);
    links =
      flagged.length === 0
        ? ` AND (links & ${LINK_DEPENDENTS}) = 0`
        : flagged.length === group.length
          ? ''
          : ` AND ((links & ${LINK_DEPENDENTS}) = 0 OR id IN (${marks(flagged.length)}))`;
    if (flagged.length < group.length) params.push(...flagged);
  }
  return {
    sql: `UPDATE tasks SET ${set.sql}${progress.sql} WHERE ${where.sql}${links}`,
    params: [...set.params, ...progress.params, ...where.params, ...params],
  };
}

/** The attempts' last unwritten progress reports (Outcome.progress), if any: nothing otherwise. */
function progressClause(group: readonly Outcome[]): {sql: string; params: unknown[]} {
  const reported = group.filter((o) => o.progress !== undefined);
  if (reported.length === 0) return {sql: '', params: []};
  const percent = caseById(
    reported.map((o) => [o.id, o.progress!.percent]),
    'progress',
  );
  const note = caseById(
    reported.map((o) => [o.id, o.progress!.note]),
    'progress_note',
  );
  const at = caseById(
    reported.map((o) => [o.id, 1]),
    '0',
  );
  return {
    sql: `, progress = ${percent.sql}, progress_note = ${note.sql}, progress_at = IF(${at.sql} = 1, NOW(3), progress_at)`,
    params: [...percent.params, ...note.params, ...at.params],
  };
}

/** The tasks `groups` end that have link flags (`linksOf` each: the claim's, or the locking read's). */
function endedOf(
  groups: ReadonlyMap<TransitionName, Outcome[]>,
  linksOf: (o: Outcome) => {links: number; batchId: string | null},
): EndedTask[] {
  const out: EndedTask[] = [];
  for (const [t, group] of groups) {
    if (!ENDING.has(t)) continue;
    const to = TRANSITIONS[t].to as EndedTask['to'];
    for (const o of group) {
      const l = linksOf(o);
      if (l.links !== 0) out.push({id: o.id, to, ...l});
    }
  }
  return out;
}

/**
 * Applies outcomes (see HotPathStore.outcomesApply). A worker's batch (outcomes from running, fenced,
 * no lease condition, each counted for the breaker carrying its type) takes the fast path first
 * (applyFast): no read, the guarded UPDATEs decide. Otherwise, or when the fast path finds a row
 * that moved, the careful path (applyCareful) reads the rows first.
 */
export async function outcomesApply(db: Db, cell: string, outcomes: Outcome[], actor: string): Promise<OutcomeResult> {
  if (outcomes.length === 0) return {applied: [], stale: []};
  const latest = [...new Map(outcomes.map((o) => [o.id, o])).values()];
  if (latest.every(fastEligible)) {
    const fast = await applyFast(db, cell, latest, actor);
    if (fast) return fast;
  }
  return applyCareful(db, cell, latest, actor);
}

/** Outcomes by the transition they make, each group in id order (the order the rows are locked in). */
function byTransition(outcomes: readonly Outcome[]): Map<TransitionName, Outcome[]> {
  const groups = new Map<TransitionName, Outcome[]>();
  for (const o of [...outcomes].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    const t = TRANSITION_OF[o.kind];
    const group = groups.get(t);
    if (group) group.push(o);
    else groups.set(t, [o]);
  }
  return groups;
}

/**
 * The writes both paths share, in the outcome's transaction: one guarded UPDATE per transition,
 * each of which must change its whole group (GuardMismatch otherwise: the transaction rolls back),
 * then the history rows (`history`), then the breaker counts of the outcomes that carry one, by
 * `typeOf` each. Returns the ids applied, in group order.
 */
async function writeOutcomes(
  db: Db,
  c: PoolConnection,
  cell: string,
  actor: string,
  groups: ReadonlyMap<TransitionName, Outcome[]>,
  history: {sql: string; params: unknown[]} | null,
  typeOf: (o: Outcome) => string,
  linksOf: ((o: Outcome) => {links: number; batchId: string | null}) | null,
): Promise<{applied: string[]; due: DueTask[]}> {
  for (const [t, group] of groups) {
    const q = outcomeUpdateSql(t, group, linksOf === null);
    expectAffected(await exec(db, c, q.sql, q.params), group.length, `outcomes (${t})`);
  }
  if (history) await exec(db, c, history.sql, history.params);
  const counts = new Map<string, {ok: number; failed: number}>();
  for (const group of groups.values())
    for (const o of group) {
      if (o.breaker === undefined) continue;
      const type = typeOf(o);
      const n = counts.get(type) ?? {ok: 0, failed: 0};
      n[o.breaker]++;
      counts.set(type, n);
    }
  if (counts.size > 0) {
    const q = outcomeCountsUpsert(cell, actor, counts);
    await exec(db, c, q.sql, q.params);
  }
  const ended = endedOf(groups, linksOf ?? ((o) => ({links: o.links ?? 0, batchId: o.batchId ?? null})));
  const due = ended.length === 0 ? [] : await resolveEnded(db, c, cell, ended, actor);
  return {applied: [...groups.values()].flat().map((o) => o.id), due};
}

/** An OutcomeResult, with `due` only when the outcomes made any task due. */
const resultOf = (w: {applied: string[]; due: DueTask[]}, stale: string[]): OutcomeResult =>
  w.due.length === 0 ? {applied: w.applied, stale} : {applied: w.applied, stale, due: w.due};

/**
 * The careful path: in one transaction, a locking read decides which outcomes are current (and the
 * attempt each history row records, with the attempt's start and worker from the row), then
 * writeOutcomes with one history INSERT (one row per attempt: the claim wrote none). Each UPDATE
 * must change exactly the rows the read decided on (so history is written only for rows updated);
 * otherwise the transaction rolls back and re-reads (AxError('conflict') after 5 tries).
 */
async function applyCareful(db: Db, cell: string, outcomes: readonly Outcome[], actor: string): Promise<OutcomeResult> {
  const ids = outcomes.map((o) => o.id).sort();
  const byId = new Map(outcomes.map((o) => [o.id, o]));
  return txGuarded(db, 'outcomes', async (c) => {
    const rows = await select(
      db,
      c,
      `SELECT id, type, state, fence, attempt, worker, started_at, lease_until < NOW(3) AS expired, links, batch_id FROM tasks WHERE id IN (${marks(ids.length)}) FOR UPDATE`,
      ids,
    );
    const current = new Map(rows.map((r) => [r.id as string, r]));
    const applicable: Outcome[] = [];
    const stale: string[] = [];
    const history: HistoryRow[] = [];
    for (const id of ids) {
      const o = byId.get(id) as Outcome;
      const t = TRANSITION_OF[o.kind];
      const g = guardOf(t);
      const r = current.get(id);
      const ok =
        r &&
        g.from.includes(r.state as TaskState) &&
        (!g.fenced || Number(r.fence) === o.fence) &&
        (!g.leaseExpired || Number(r.expired) === 1);
      if (!ok) {
        stale.push(id);
        continue;
      }
      applicable.push(o);
      const attempt = Number(r.attempt) - (o.kind === 'release' || o.kind === 'park' ? 1 : 0);
      const e = errorOf(o);
      // The attempt's one history row: its start and worker (from the claim, on the row) with its
      // end. A rescue's worker is the one that stopped renewing the lease, not the rescuer.
      const ranOn = (r.worker as string | null) ?? actor;
      const startedAt = (r.started_at as Date | null) ?? null;
      history.push([id, r.state as TaskState, TRANSITIONS[t].to, attempt, ranOn, clipError(e.error), clipStack(e.stack), startedAt]);
    }
    const typeOf = (o: Outcome) => current.get(o.id)!.type as string;
    const linksOf = (o: Outcome) => {
      const r = current.get(o.id)!;
      return {links: Number(r.links), batchId: (r.batch_id as string | null) ?? null};
    };
    const w = await writeOutcomes(
      db,
      c,
      cell,
      actor,
      byTransition(applicable),
      history.length > 0 ? historyInsert(history) : null,
      typeOf,
      linksOf,
    );
    return resultOf(w, stale);
  });
}

/** Outcomes the fast path may write: a worker's, from running, fenced, without a lease condition. */
function fastEligible(o: Outcome): boolean {
  const g = guardOf(TRANSITION_OF[o.kind]);
  return g.fenced && !g.leaseExpired && g.from.length === 1 && g.from[0] === 'running' && (o.breaker === undefined || o.type !== undefined);
}

/**
 * The fast path, one transaction without a read: writeOutcomes with the history rows copied from
 * the rows its UPDATEs just changed (INSERT … SELECT: their new state and attempt, so a hand-back's
 * given-back attempt too) and the breaker counts by the outcomes' own types. Returns null, having
 * written nothing, when a row had moved (a GuardMismatch rolled it back): the careful path then
 * sorts stale from current.
 */
async function applyFast(db: Db, cell: string, outcomes: readonly Outcome[], actor: string): Promise<OutcomeResult | null> {
  try {
    return await tx(db, async (c) =>
      resultOf(await writeOutcomes(db, c, cell, actor, byTransition(outcomes), historyFromRows(outcomes, actor), (o) => o.type!, null), []),
    );
  } catch (e) {
    if (e instanceof GuardMismatch) return null;
    throw e;
  }
}

/**
 * The outcome history rows of the fast path, copied in id order from the task rows its UPDATEs
 * just changed (from running; to and attempt as they are now; the attempt's start and worker as
 * the claim wrote them, which an outcome leaves alone), with each outcome's error and stack.
 */
function historyFromRows(outcomes: readonly Outcome[], actor: string): {sql: string; params: unknown[]} {
  const errors: Array<[string, unknown]> = [];
  const stacks: Array<[string, unknown]> = [];
  for (const o of outcomes) {
    const e = errorOf(o);
    if (e.error !== null) errors.push([o.id, clipError(e.error)]);
    if (e.stack !== null) stacks.push([o.id, clipStack(e.stack)]);
  }
  const error = caseById(errors, 'NULL');
  const stack = caseById(stacks, 'NULL');
  const ids = outcomes.map((o) => o.id);
  return {
    sql: `INSERT INTO task_history (task_id, from_state, to_state, attempt, worker, at, error, stack, started_at)
          SELECT id, 'running', state, attempt, COALESCE(worker, ?), NOW(3), ${error.sql}, ${stack.sql}, started_at
          FROM tasks WHERE id IN (${marks(ids.length)}) ORDER BY id`,
    params: [actor, ...error.params, ...stack.params, ...ids],
  };
}

/**
 * Adds a batch's breaker counts to this worker's row of the current second per type (one
 * statement; rows are per worker, so concurrent outcome transactions of other workers never wait
 * on it). Params: cell, type, worker, ok, failed per type.
 */
function outcomeCountsUpsert(
  cell: string,
  worker: string,
  counts: Map<string, {ok: number; failed: number}>,
): {sql: string; params: unknown[]} {
  const params: unknown[] = [];
  for (const [type, n] of counts) params.push(cell, type, worker.slice(0, 128), n.ok, n.failed);
  return {
    sql: `INSERT INTO type_outcomes (cell, type, second, worker, ok, failed)
          VALUES ${[...counts.keys()].map(() => '(?, ?, NOW(), ?, ?, ?)').join(', ')}
          ON DUPLICATE KEY UPDATE ok = ok + VALUES(ok), failed = failed + VALUES(failed)`,
    params,
  };
}
