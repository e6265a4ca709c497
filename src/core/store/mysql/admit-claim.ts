/**
 * The flow step of a claim, in the claim's transaction: pause, breaker (with its probes counted
 * cluster-wide) and limits (max running, rate), decided from the types' registry rows as they are
 * when the claim runs, by the pure policies of core/flow (admission.ts flowDecision, limits.ts
 * decideLimits). What it refuses is deferred in that same transaction, parked with why, without
 * using an attempt.
 */
import {TRANSITIONS} from '../../task/state.js';
import {ADMISSION_DEFAULTS, flowDecision, type FlowState, probeEpisode} from '../../flow/admission.js';
import {breakerSettings} from '../../flow/breaker.js';
import {
  type Bucket,
  CAP_RECHECK_MS,
  decideLimits,
  fullAt,
  hasKeyLimits,
  hasLimits,
  type LimitRefusal,
  limitsOf,
} from '../../flow/limits.js';
import type {TasksClaimParams, TypeRecord} from '../types.js';
import {type Conn, type Db, exec, marks, type Row, select} from './db.js';
import {type FencedRef, guardedWhere} from './guards.js';
import {caseById} from './rows.js';
import {parseSettings} from './flow.js';
import {type FairPermit, fairSubstitute} from './fair-claim.js';

/** A claimable, due row as the claim read it (fence before the claim). */
export interface ClaimRow {
  id: string;
  type: string;
  /** Its task key (null: none). */
  key: string | null;
  pool: string;
  fence: number;
  /** Parked `rate` or `key-rate`: a slot of that bucket was reserved for it when it was deferred. */
  prepaid: 'rate' | 'key-rate' | null;
}

export type FlowRefusal = Omit<LimitRefusal, 'parked'> & {parked: 'paused' | 'breaker' | LimitRefusal['parked']; type: string};

/** What the flow step decided: the refused rows, and fair dispatch's swaps (see fair-claim.ts). */
export interface AdmitResult {
  refused: Map<string, FlowRefusal>;
  /** Tasks fair dispatch claims that were not in the batch: locked rows, with the doorbell each came in on. */
  picked: Array<{row: Row; via: string}>;
  /** Batch tasks whose doorbell went to a picked task: not claimed, still due. */
  swapped: Set<string>;
  /** Stale doorbells (their task running or ended) that went to a picked task. */
  usedStale: Set<string>;
}

/**
 * Running rows of `n` capped types (params: cell, the types). An index-only range of
 * idx_tasks_due (cell, 'running'), the type checked in the index: one entry per running task of
 * the cell (what the workers hold, never the backlog). Exported for the plan test.
 */
export const runningCountSql = (n: number): string =>
  `SELECT type, COUNT(*) AS n FROM tasks WHERE cell = ? AND state = 'running' AND type IN (${marks(n)}) GROUP BY type ORDER BY NULL`;

const SHARED_COLUMNS = 'type, paused, paused_by, paused_reason, settings, breaker_state, breaker_until, breaker_changed_at, NOW(3) AS now';
const LOCKED_COLUMNS = `${SHARED_COLUMNS}, probe_episode, probes_used, rate_tokens, rate_at, fair_key, fair_taken`;

function flowStateOf(r: Row, settings: Record<string, unknown>): FlowState {
  return {
    paused: Number(r.paused) === 1,
    pausedBy: (r.paused_by as string | null) ?? null,
    pausedReason: (r.paused_reason as string | null) ?? null,
    settings,
    breaker: {
      state: r.breaker_state as TypeRecord['breaker']['state'],
      until: (r.breaker_until as Date | null) ?? null,
      changedAt: (r.breaker_changed_at as Date | null) ?? null,
    },
  };
}

/**
 * The flow step of a claim on `c`, the claim's transaction, for its claimable rows in the order
 * they should run (delivery order: FIFO). Statements:
 * - the registry rows of the batch's types: those in `lockTypes` FOR UPDATE, the others LOCK IN
 *   SHARE MODE, each in type order. The shared lock is what makes the decision exact: a pause or a
 *   breaker transition (an UPDATE of the row) waits for the claims that read the row before it and
 *   every claim after it sees it. Concurrent claims of a locked type wait for each other here, after
 *   their task rows, which every claimer locks in primary-key order first. Two claimers whose
 *   snapshots disagree on which types to lock can deadlock; the transaction is then retried (tx).
 *   A type without a row has nothing said about it: its rows run.
 * - per fair type, fair dispatch (fair-claim.ts), whose reads of the keys are the transaction's
 *   first consistent reads when it runs;
 * - per locked type: one UPDATE of its probe count when it let probes through, one of its bucket
 *   when it has a rate, the running count and buckets of its keys with per-key limits; one grouped
 *   count of the running rows of the capped types (index-only). Every consistent read comes after
 *   all the registry locks (the claim's other reads are locking reads: keep it so), so the
 *   snapshot sees every claim committed before (REPEATABLE READ); a running row whose end is not
 *   committed yet still counts (the cap errs low).
 * - one UPDATE per kind deferred (paused | breaker | capped | rate | key-capped | key-rate), delays
 *   per row in a CASE.
 * The caller writes the deferred rows' history. Returns the ids refused with why (empty: none).
 */
export async function admitClaim(
  db: Db,
  c: Conn,
  cell: string,
  rows: ClaimRow[],
  lockTypes: ReadonlySet<string>,
  o: TasksClaimParams['admission'],
  permits: ReadonlyMap<string, readonly FairPermit[]> = new Map(),
  batch: ReadonlySet<string> = new Set(),
): Promise<AdmitResult> {
  const refused = new Map<string, FlowRefusal>();
  const out: AdmitResult = {refused, picked: [], swapped: new Set(), usedStale: new Set()};
  const types = [...new Set([...rows.map((r) => r.type), ...[...permits.keys()].filter((t) => lockTypes.has(t))])].sort();
  if (types.length === 0) return out;
  rows = [...rows];
  const locked = types.filter((t) => lockTypes.has(t));
  const shared = types.filter((t) => !lockTypes.has(t));
  const opts = {...ADMISSION_DEFAULTS, ...o};
  const regs: Array<{r: Row; locked: boolean}> = [];
  if (locked.length > 0)
    for (const r of await select(
      db,
      c,
      `SELECT ${LOCKED_COLUMNS} FROM task_types WHERE cell = ? AND type IN (${marks(locked.length)}) ORDER BY type FOR UPDATE`,
      [cell, ...locked],
    ))
      regs.push({r, locked: true});
  if (shared.length > 0)
    for (const r of await select(
      db,
      c,
      `SELECT ${SHARED_COLUMNS} FROM task_types WHERE cell = ? AND type IN (${marks(shared.length)}) ORDER BY type LOCK IN SHARE MODE`,
      [cell, ...shared],
    ))
      regs.push({r, locked: false});

  const byKind: Record<FlowRefusal['parked'], Array<FencedRef & {delayMs: number}>> = {
    paused: [],
    breaker: [],
    capped: [],
    rate: [],
    'key-capped': [],
    'key-rate': [],
  };
  const refuse = (x: ClaimRow, why: Omit<FlowRefusal, 'type' | 'id'>): void => {
    refused.set(x.id, {...why, id: x.id, type: x.type});
    byKind[why.parked].push({id: x.id, fence: x.fence, delayMs: why.delayMs});
  };
  const limitsDue: Array<{r: Row; mine: ClaimRow[]; l: ReturnType<typeof limitsOf>}> = [];
  for (const {r, locked: isLocked} of regs) {
    const type = r.type as string;
    // Read with either lock: a half-open type's probe recheck follows its own cool-down.
    const settings = parseSettings(r.settings as string | null);
    const state = flowStateOf(r, settings);
    const nowMs = (r.now as Date).getTime();
    const l = limitsOf(settings);
    // Fair dispatch, only while the type may run (else its doorbells are refused as they are).
    const typePermits = permits.get(type);
    if (isLocked && l.fair && typePermits && !state.paused && state.breaker.state === 'closed')
      rows = await fair(db, c, cell, type, r, l, typePermits, batch, rows, out, (x) =>
        refuse(x, {
          delayMs: CAP_RECHECK_MS,
          parked: 'key-capped',
          reason: `not run: ${l.maxRunningPerKey} of its type with its key running (max running per key)`,
        }),
      );
    const mine = rows.filter((x) => x.type === type);
    if (!state.paused && state.breaker.state === 'closed' && !isLocked) continue;
    // Probes: only a claim holding the row for update may spend them (it counts them on the row).
    const bs = breakerSettings(settings);
    const episode = probeEpisode(state.breaker.changedAt?.getTime() ?? null, nowMs, bs.cooldownMs);
    const stored = (r.probe_episode as Date | null | undefined)?.getTime();
    const usedBefore = isLocked && stored === episode ? Number(r.probes_used) : 0;
    let left = isLocked ? Math.max(0, bs.probes - usedBefore) : 0;
    const admitted: ClaimRow[] = [];
    for (const x of mine) {
      const a = flowDecision(state, nowMs, opts, left);
      if (!a.run) refuse(x, {delayMs: a.delayMs, parked: a.parked as FlowRefusal['parked'], reason: a.reason});
      else {
        if (a.probe) left--;
        admitted.push(x);
      }
    }
    const spent = isLocked ? Math.max(0, bs.probes - usedBefore) - left : 0;
    if (spent > 0)
      await exec(db, c, 'UPDATE task_types SET probe_episode = ?, probes_used = ? WHERE cell = ? AND type = ?', [
        new Date(episode),
        usedBefore + spent,
        cell,
        type,
      ]);
    if (isLocked && hasLimits(l) && admitted.length > 0) limitsDue.push({r, mine: admitted, l});
  }

  const capped = limitsDue.filter(({l}) => l.maxRunning !== undefined).map(({r}) => r.type as string);
  const running = new Map<string, number>();
  if (capped.length > 0)
    for (const r of await select(db, c, runningCountSql(capped.length), [cell, ...capped])) running.set(r.type as string, Number(r.n));
  for (const {r, mine, l} of limitsDue) {
    const type = r.type as string;
    const bucket =
      r.rate_tokens === null || r.rate_at === null ? null : {tokens: Number(r.rate_tokens), atMs: (r.rate_at as Date).getTime()};
    const keys = hasKeyLimits(l) ? await keyState(db, c, cell, type, l, mine) : undefined;
    const d = decideLimits(mine, l, {running: running.get(type) ?? 0, bucket, ...(keys ? {keys} : {})}, (r.now as Date).getTime());
    if (d.keyBuckets) await keyBucketsStore(db, c, cell, type, d.keyBuckets, l.ratePerKey!);
    if (d.bucket)
      await exec(db, c, 'UPDATE task_types SET rate_tokens = ?, rate_at = ? WHERE cell = ? AND type = ?', [
        d.bucket.tokens,
        new Date(d.bucket.atMs),
        cell,
        type,
      ]);
    const rowOf = new Map(mine.map((x) => [x.id, x]));
    for (const x of d.deferred) refuse(rowOf.get(x.id)!, {delayMs: x.delayMs, parked: x.parked, reason: x.reason});
  }

  for (const [kind, refs] of Object.entries(byKind)) {
    if (refs.length === 0) continue;
    const delay = caseById(
      refs.map((x) => [x.id, Math.max(0, Math.round(x.delayMs)) * 1000]),
      '0',
    );
    const where = guardedWhere('defer', refs);
    // parked_at before parked: MySQL evaluates SET left to right with the new values.
    const res = await exec(
      db,
      c,
      `UPDATE tasks SET state = '${TRANSITIONS.defer.to}', run_at = NOW(3) + INTERVAL ${delay.sql} MICROSECOND, published_at = NULL,
              fence = fence + 1, parked_at = IF(parked <=> ?, parked_at, NOW(3)), parked = ?, updated_at = NOW(3)
        WHERE ${where.sql}`,
      [...delay.params, kind, kind, ...where.params],
    );
    // The rows are locked by the claim's read: the guard cannot miss one.
    if (res.affectedRows !== refs.length) throw new Error(`claim flow step: deferred ${res.affectedRows} of ${refs.length} rows`);
  }
  return out;
}

/**
 * Fair dispatch for one type (fair-claim.ts), per pool of its permits: returns the claim's rows
 * with the batch tasks whose doorbell was lent taken out (recorded in `out.swapped`) and the
 * picked ones added (`out.picked`); batch tasks of a key at its per-key cap go to `deferUnused`.
 */
async function fair(
  db: Db,
  c: Conn,
  cell: string,
  type: string,
  reg: Row,
  l: ReturnType<typeof limitsOf>,
  permits: readonly FairPermit[],
  batch: ReadonlySet<string>,
  rows: ClaimRow[],
  out: AdmitResult,
  deferUnused: (x: ClaimRow) => void,
): Promise<ClaimRow[]> {
  for (const pool of [...new Set(permits.map((p) => p.pool))].sort()) {
    const f = await fairSubstitute(
      db,
      c,
      cell,
      type,
      pool,
      reg,
      l,
      permits.filter((p) => p.pool === pool),
      batch,
    );
    // The next pool's round robin goes on from where this one left it.
    reg.fair_key = f.cursor.key;
    reg.fair_taken = f.cursor.taken;
    const gone = new Set([...f.leftDue, ...f.unused]);
    for (const id of f.leftDue) out.swapped.add(id);
    for (const id of f.usedStale) out.usedStale.add(id);
    const unused = rows.filter((x) => f.unused.includes(x.id));
    rows = rows.filter((x) => !gone.has(x.id));
    for (const x of unused) deferUnused(x);
    for (const p of f.picked) {
      if (!p.row || p.via === null) continue;
      out.picked.push({row: p.row, via: p.via});
      rows.push({
        id: p.id,
        type,
        key: (p.row.task_key as string | null) ?? null,
        pool,
        fence: Number(p.row.fence),
        prepaid: p.row.parked === 'rate' || p.row.parked === 'key-rate' ? (p.row.parked as 'rate' | 'key-rate') : null,
      });
    }
  }
  return rows;
}

/**
 * The per-key state of the keys among `mine` (a type with maxRunningPerKey or ratePerKey): the
 * running count per key (index-only over idx_tasks_key) and the stored buckets, read for update
 * (locking reads: they take no snapshot, see admitClaim).
 */
async function keyState(
  db: Db,
  c: Conn,
  cell: string,
  type: string,
  l: ReturnType<typeof limitsOf>,
  mine: readonly ClaimRow[],
): Promise<{running: Map<string, number>; buckets: Map<string, Bucket>}> {
  const keys = [...new Set(mine.flatMap((x) => (x.key === null ? [] : [x.key])))].sort();
  const running = new Map<string, number>();
  const buckets = new Map<string, Bucket>();
  if (keys.length === 0) return {running, buckets};
  if (l.maxRunningPerKey !== undefined)
    for (const r of await select(
      db,
      c,
      `SELECT task_key, COUNT(*) AS n FROM tasks WHERE cell = ? AND type = ? AND key_phase = 2 AND task_key IN (${marks(keys.length)}) GROUP BY task_key`,
      [cell, type, ...keys],
    ))
      running.set(r.task_key as string, Number(r.n));
  if (l.ratePerKey !== undefined)
    for (const r of await select(
      db,
      c,
      `SELECT task_key, tokens, at FROM task_key_buckets WHERE cell = ? AND type = ? AND task_key IN (${marks(keys.length)}) FOR UPDATE`,
      [cell, type, ...keys],
    ))
      buckets.set(r.task_key as string, {tokens: Number(r.tokens), atMs: (r.at as Date).getTime()});
  return {running, buckets};
}

/** Stores the key buckets a decision used (one multi-row upsert), each with when it is full again at `rate`. */
async function keyBucketsStore(db: Db, c: Conn, cell: string, type: string, b: ReadonlyMap<string, Bucket>, rate: number): Promise<void> {
  const entries = [...b].sort(([a], [z]) => (a < z ? -1 : a > z ? 1 : 0));
  await exec(
    db,
    c,
    `INSERT INTO task_key_buckets (cell, type, task_key, tokens, at, full_at) VALUES ${entries.map(() => '(?, ?, ?, ?, ?, ?)').join(', ')}
     ON DUPLICATE KEY UPDATE tokens = VALUES(tokens), at = VALUES(at), full_at = VALUES(full_at)`,
    entries.flatMap(([key, x]) => [cell, type, key, x.tokens, new Date(x.atMs), new Date(fullAt(x, rate))]),
  );
}
