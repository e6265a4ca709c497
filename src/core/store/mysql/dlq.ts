import {AxError, invalid} from '../../errors.js';
import type {PoolName, Priority} from '../../task/model.js';
import {TRANSITIONS, type TaskState} from '../../task/state.js';
import type {
  DeadErrorGroup,
  DeadFilter,
  DeadListParams,
  DeadPageParams,
  DeadPageRow,
  DeadReplayParams,
  DeadReplayResult,
  DeadTaskRow,
} from '../types.js';
import {auditInsert} from './audit.js';
import {type Db, exec, marks, select, tx} from './db.js';
import {guardedWhere} from './guards.js';
import {PAYLOAD_APART, PAYLOAD_BODY_COLUMN, PAYLOAD_BODY_LOCKED, bodiesUpserts, packBig, payloadText} from './payloads.js';
import {LAST_ERROR_CONTAINS, Where, likeLiteral} from './where.js';
import {caseById, clipError, historyInsert, type HistoryRow, parsePayload, toErrorGroup} from './rows.js';

/** The WHERE of a dead-task filter (bound parameters only). */
function deadWhere(cell: string, f: DeadFilter): Where {
  return new Where()
    .and('cell = ?', cell)
    .and("state = 'dead'")
    .if(f.type !== undefined, 'type = ?', f.type)
    .if(f.since !== undefined, 'finished_at >= ?', f.since)
    .if(f.until !== undefined, 'finished_at < ?', f.until)
    .if(f.errorContains !== undefined, LAST_ERROR_CONTAINS, likeLiteral(f.errorContains ?? ''));
}

/**
 * Dead tasks, newest death first. Params: the filter, limit, and the cursor `after` (a task id:
 * only rows before it in (finished_at, id) order; an unknown cursor selects nothing). Index:
 * idx_tasks_due (cell, 'dead', …), the type checked in the index; a sort of the rows kept.
 */
export async function deadList(db: Db, cell: string, p: DeadListParams): Promise<DeadTaskRow[]> {
  const w = deadWhere(cell, p);
  const params = [...w.params];
  let cursor = '';
  if (p.after !== undefined) {
    cursor = ' AND (finished_at, id) < (SELECT c.finished_at, c.id FROM tasks c WHERE c.id = ? AND c.cell = ?)';
    params.push(p.after, cell);
  }
  params.push(p.limit);
  const rows = await select(
    db,
    db.pool,
    `SELECT id, type, pool, attempt, max_retries, retry_base, created_at, finished_at, last_error FROM tasks
     WHERE ${w.sql}${cursor} ORDER BY finished_at DESC, id DESC LIMIT ?`,
    params,
  );
  return rows.map((r) => ({
    id: r.id as string,
    type: r.type as string,
    pool: r.pool as PoolName,
    attempt: Number(r.attempt),
    maxRetries: Number(r.max_retries),
    retryBase: Number(r.retry_base ?? 0),
    createdAt: r.created_at as Date,
    finishedAt: r.finished_at as Date,
    lastError: (r.last_error as string | null) ?? null,
  }));
}

/** Dead tasks per type × the first 1000 characters of the last error. Params: the filter. */
export async function deadErrorGroups(db: Db, cell: string, f: DeadFilter): Promise<DeadErrorGroup[]> {
  const w = deadWhere(cell, f);
  const rows = await select(
    db,
    db.pool,
    `SELECT type, LEFT(last_error, 1000) AS error, COUNT(*) AS n, MIN(finished_at) AS first_seen,
            MAX(finished_at) AS last_seen, MIN(id) AS sample_id
     FROM tasks WHERE ${w.sql} GROUP BY type, LEFT(last_error, 1000)`,
    w.params,
  );
  return rows.map(toErrorGroup);
}

/**
 * Dead tasks in id order past `afterId` (see DeadLetterStore.deadPage); payloads only when asked.
 * The rows of idx_tasks_due (cell, 'dead', …) past the cursor (the type, when given, checked in the
 * index), sorted by id.
 */
export async function deadPage(db: Db, cell: string, p: DeadPageParams): Promise<DeadPageRow[]> {
  const w = deadWhere(cell, p).if(p.afterId !== undefined, 'id > ?', p.afterId);
  const rows = await select(
    db,
    db.pool,
    `SELECT id${p.withPayload ? `, payload, ${PAYLOAD_BODY_COLUMN}` : ''} FROM tasks WHERE ${w.sql} ORDER BY id LIMIT ?`,
    [...w.params, p.limit],
  );
  return rows.map((r) => (p.withPayload ? {id: r.id as string, payload: parsePayload(payloadText(r))} : {id: r.id as string}));
}

/**
 * Replays dead tasks (see DeadLetterStore.deadReplay). One transaction: a locking read in primary
 * key order (concurrent replays queue behind each other, then see the rows submitted and skip
 * them), one UPDATE guarded by the replay transition, one history INSERT, one audit row.
 * affectedRows must equal the rows read as replayable, else the transaction is rolled back. The
 * rows are marked published in the same UPDATE (the caller rings them after the commit and
 * forgets the ones it could not ring): a separate mark statement per batch cost as much as the
 * replay itself (docs/benchmarks.md, R1). A forced replay (`p.force`) uses the forceReplay
 * transition (dead, succeeded or cancelled) and stamps the rows' `replay` column for the handler;
 * a plain one clears it. Either starts the task over: its result and progress are cleared. With
 * `p.rewrite`, the locking read also reads the payloads (stored-apart
 * ones too) and each replayed row gets rewrite(payload) (a throw rolls back), stored inline or
 * apart by its new size against `inlineBytes`: two more statements, a DELETE of the replayed rows'
 * old bodies and an INSERT of the big new ones. Throws
 * invalid_input for a forced replay without a reason, before anything changes.
 */
export async function deadReplay(db: Db, cell: string, p: DeadReplayParams, inlineBytes: number): Promise<DeadReplayResult> {
  const ids = [...new Set(p.ids)].sort();
  if (ids.length === 0) return {replayed: [], skipped: []};
  const reason = p.audit.reason ?? '';
  if (p.force && reason.trim() === '') throw invalid('a forced replay needs a reason');
  const t = p.force ? 'forceReplay' : 'replay';
  const stamp = p.force ? JSON.stringify({by: p.audit.operator, at: p.force.at.toISOString(), reason}) : null;
  return tx(db, async (c) => {
    const rows = await select(
      db,
      c,
      `SELECT id, type, pool, priority, state, attempt, fence${p.rewrite ? `, payload, ${PAYLOAD_BODY_LOCKED}` : ''} FROM tasks
        WHERE id IN (${marks(ids.length)}) AND cell = ? FOR UPDATE`,
      [...ids, cell],
    );
    const found = new Map(rows.map((r) => [r.id as string, r]));
    const replayed: DeadReplayResult['replayed'] = [];
    const skipped: DeadReplayResult['skipped'] = [];
    const history: HistoryRow[] = [];
    const note = clipError(
      `${p.force ? 'force-replayed' : 'replayed'} by ${p.audit.operator}${reason ? `: ${reason}` : ''}${p.patch === undefined ? '' : `; patch ${p.patch}`}`,
    );
    for (const id of ids) {
      const r = found.get(id);
      const state = (r?.state as TaskState | undefined) ?? null;
      if (!r || !(TRANSITIONS[t].from as readonly string[]).includes(state as string)) {
        skipped.push({id, state});
        continue;
      }
      replayed.push({id, type: r.type as string, pool: r.pool as PoolName, priority: r.priority as Priority, fence: Number(r.fence)});
      history.push([id, state, TRANSITIONS[t].to, Number(r.attempt), p.actor, note, null]);
    }
    if (replayed.length === 0) return {replayed, skipped};
    const where = guardedWhere(t, replayed);
    const rewrite = p.rewrite;
    const texts = rewrite === undefined ? [] : replayed.map((x) => rewrite(parsePayload(payloadText(found.get(x.id)!)), x.id));
    const bodies = await packBig(texts, inlineBytes);
    const pl = caseById(
      texts.map((text, i) => [replayed[i]!.id, bodies.has(i) ? PAYLOAD_APART : text]),
      'payload',
    );
    const res = await exec(
      db,
      c,
      `UPDATE tasks SET state = '${TRANSITIONS[t].to}', retry_base = attempt, run_at = NOW(3), published_at = NOW(3),
              finished_at = NULL, lease_until = NULL, worker = NULL, sched_owner = NULL, sched_until = NULL, replay = ?,
              payload = ${pl.sql}, updated_at = NOW(3),
              result_json = NULL, progress = NULL, progress_note = NULL, progress_at = NULL
        WHERE ${where.sql} AND cell = ?`,
      [stamp, ...pl.params, ...where.params, cell],
    );
    if (res.affectedRows !== replayed.length)
      throw new AxError('internal', `replay changed ${res.affectedRows} rows, expected ${replayed.length}: rolled back`);
    if (texts.length > 0) {
      const rewritten = replayed.map((x) => x.id);
      await exec(db, c, `DELETE FROM task_payloads WHERE task_id IN (${marks(rewritten.length)})`, rewritten);
      if (bodies.size > 0) {
        for (const b of bodiesUpserts([...bodies].map(([i, body]) => [replayed[i]!.id, body] as const))) await exec(db, c, b.sql, b.params);
      }
    }
    const h = historyInsert(history);
    await exec(db, c, h.sql, h.params);
    await auditInsert(
      db,
      c,
      cell,
      p.audit,
      replayed.map((t) => t.id),
    );
    return {replayed, skipped};
  });
}
