/**
 * Debounce and throttle (TaskSpec.debounce, .throttle) on MySQL, inside tasksInsert's transaction.
 * A gate is a task_gates row per (cell, type, key, kind) naming the task it keeps; the transaction
 * locks the rows of its batch's keys before it decides, so concurrent producers of one key take
 * turns, and everything it decides commits or rolls back with the batch's rows.
 *
 * - throttle (leading edge): while the row's window is open (until > NOW(3), the database clock) a
 *   task of its key is not written and is reported with the kept task's id; otherwise it is
 *   written and opens a window of its own (until = NOW(3) + window).
 * - debounce (trailing edge): a task is due its window after its submit; while the task the row
 *   keeps has not started (still submitted, no attempt used) the later of the two by submit order
 *   is kept and the other cancelled as replaced, with a history row naming its replacement. A kept
 *   task that started (or ended) is left alone and the new one takes the row.
 *
 * "Later" is by id when both ids are UUIDv7 (the producers' ids: ordered by their submit time, and
 * strictly within one process however its batches interleave), else the one written later. A stale
 * row needs no cleanup: its window is over, or its task started, and the next submit overwrites it.
 */
import {AxError} from '../../errors.js';
import type {NewTask} from '../../task/model.js';
import {TRANSITIONS} from '../../task/state.js';
import type {InsertResult} from '../types.js';
import {type Db, type PoolConnection, type Row, exec, marks, select} from './db.js';
import {type EndedTask, endedOf, resolveEnded} from './links.js';
import {MARK_LEFT_UNRUNG, guardedWhere} from './guards.js';
import {type HistoryRow, clipError, historyInsert} from './rows.js';

type Kind = 'debounce' | 'throttle';

/** True when the task has a debounce or a throttle: it must go through writeGated. */
export const isGated = (t: NewTask): boolean => (t.debounce ?? t.throttle ?? null) !== null;

interface GateRef {
  kind: Kind;
  type: string;
  key: string;
}

const gateOf = (t: NewTask): GateRef | null =>
  t.debounce
    ? {kind: 'debounce', type: t.type, key: t.debounce.key}
    : t.throttle
      ? {kind: 'throttle', type: t.type, key: t.throttle.key}
      : null;
const gateId = (g: GateRef): string => `${g.kind}\u0000${g.type}\u0000${g.key}`;

/** A UUIDv7 (version nibble 7): its leading bits are its creation time. */
const isV7 = (id: string): boolean => id.length === 36 && id[14] === '7';
/** Whether `a` came after `b`: by id between UUIDv7s, else `a` (the one being written now). */
const later = (a: string, b: string): boolean => (isV7(a) && isV7(b) ? a > b : true);

/** What a gate holds while the batch is decided. */
interface GateState {
  /** The task it keeps, '' for none (a row this transaction just created). */
  taskId: string;
  /** Throttle: its window is open. Debounce: its task has not started (may still be replaced). */
  open: boolean;
  /** Debounce: the kept task's dependents/batch flags (links.ts), when it has any. */
  linked?: EndedTask;
}

/** The note of a replaced task's history row (shown by `ax tasks show`). */
export const replacedNote = (by: string, key: string): string => clipError(`replaced by ${by} (debounce ${key})`) as string;

/**
 * Writes `tasks` (some gated) through `write` (tasksInsert's writeRows) less the throttled ones,
 * deciding every gate under its row lock: one INSERT … ON DUPLICATE KEY UPDATE that creates or
 * locks the gate rows (in key order, so concurrent batches lock them in the same order), one
 * SELECT of them, one SELECT … FOR UPDATE of the debounced tasks they keep, then the rows, one
 * guarded cancel UPDATE of the replaced tasks with one history INSERT, one upsert of the gates.
 * Statements per batch, not per task. Throws AxError('internal') when the cancel's guard matched
 * other rows than were locked (the transaction rolls back). Returns the throttled and the replaced
 * tasks of the batch.
 */
export async function writeGated(
  db: Db,
  c: PoolConnection,
  cell: string,
  tasks: readonly NewTask[],
  actor: string,
  localNowMs: number,
  write: (rows: NewTask[]) => Promise<void>,
): Promise<Required<Pick<InsertResult, 'throttled' | 'replaced'>>> {
  const refs = new Map<string, GateRef>();
  for (const t of tasks) {
    const g = gateOf(t);
    if (g) refs.set(gateId(g), g);
  }
  const sorted = [...refs.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, g]) => g);
  const gates = await lockGates(db, c, cell, sorted);

  const throttled: Array<{id: string; keptId: string; key: string}> = [];
  const replaced: Array<{id: string; by: string; key: string}> = [];
  /** Replaced tasks of earlier submits that have dependents or a batch (links.ts). */
  const endedLinked: EndedTask[] = [];
  /** The gates to write: the task each now keeps. */
  const kept = new Map<string, {g: GateRef; t: NewTask}>();
  for (const t of tasks) {
    const g = gateOf(t);
    if (!g) continue;
    const id = gateId(g);
    const s = gates.get(id) ?? {taskId: '', open: false};
    const held = s.open && s.taskId !== '';
    if (g.kind === 'throttle') {
      if (held) {
        throttled.push({id: t.id, keptId: s.taskId, key: g.key});
        continue;
      }
    } else if (held) {
      if (!later(t.id, s.taskId)) {
        replaced.push({id: t.id, by: s.taskId, key: g.key});
        continue;
      }
      replaced.push({id: s.taskId, by: t.id, key: g.key});
      if (s.linked) endedLinked.push(s.linked);
    }
    gates.set(id, {taskId: t.id, open: true});
    kept.set(id, {g, t});
  }

  const skip = new Set(throttled.map((x) => x.id));
  await write(skip.size === 0 ? [...tasks] : tasks.filter((t) => !skip.has(t.id)));
  if (replaced.length > 0) {
    await cancelReplaced(db, c, cell, replaced, actor);
    // A replaced task that had dependents or a batch (a parent named by a later submit): settled too.
    if (endedLinked.length > 0) await resolveEnded(db, c, cell, endedLinked, actor);
  }
  if (kept.size > 0) await writeGates(db, c, cell, [...kept.values()], localNowMs);
  const own = new Set(tasks.map((t) => t.id));
  return {throttled, replaced: replaced.filter((r) => own.has(r.id))};
}

/**
 * Creates the missing gate rows (kept task '', window over) and locks every one of `sorted`, then
 * reads them with their state: a throttle's window open; a debounce's task not started yet (its
 * task row read FOR UPDATE, so no claim or cancel moves it before this transaction ends).
 */
async function lockGates(db: Db, c: PoolConnection, cell: string, sorted: readonly GateRef[]): Promise<Map<string, GateState>> {
  // An exclusive lock on each row, new or not (a duplicate key under ON DUPLICATE KEY UPDATE is
  // locked X, even though nothing changes): the later statements of this transaction see and
  // change rows no other producer can change meanwhile.
  await exec(
    db,
    c,
    `INSERT INTO task_gates (cell, type, gate_key, kind, task_id, until) VALUES ${sorted.map(() => "(?, ?, ?, ?, '', NOW(3))").join(', ')}
       ON DUPLICATE KEY UPDATE task_id = task_id`,
    sorted.flatMap((g) => [cell, g.type, g.key, g.kind]),
  );
  const rows = await select(
    db,
    c,
    `SELECT type, gate_key, kind, task_id, until > NOW(3) AS open FROM task_gates
       WHERE cell = ? AND (${sorted.map(() => '(type = ? AND gate_key = ? AND kind = ?)').join(' OR ')}) FOR UPDATE`,
    [cell, ...sorted.flatMap((g) => [g.type, g.key, g.kind])],
  );
  const out = new Map<string, GateState>();
  const debounced: string[] = [];
  for (const r of rows) {
    const g: GateRef = {kind: r.kind as Kind, type: r.type as string, key: r.gate_key as string};
    const taskId = r.task_id as string;
    out.set(gateId(g), {taskId, open: g.kind === 'throttle' && Number(r.open) === 1});
    if (g.kind === 'debounce' && taskId !== '') debounced.push(taskId);
  }
  if (debounced.length > 0) {
    const waiting = new Map(
      (
        await select(
          db,
          c,
          `SELECT id, links, batch_id FROM tasks WHERE id IN (${marks(debounced.length)}) AND cell = ? AND state = 'submitted' AND attempt = 0 FOR UPDATE`,
          [...debounced, cell],
        )
      ).map((r) => [r.id as string, endedOf([r as Row & {id: string}], 'cancelled')[0]] as const),
    );
    for (const s of out.values())
      if (waiting.has(s.taskId)) {
        s.open = true;
        const linked = waiting.get(s.taskId);
        if (linked) s.linked = linked;
      }
  }
  return out;
}

/**
 * Cancels the replaced tasks (locked by lockGates, or written by this transaction): one UPDATE
 * guarded by the cancel transition and "not started" (submitted, attempt 0), which must change
 * every one of them, and one history INSERT whose note names the replacement.
 */
async function cancelReplaced(
  db: Db,
  c: PoolConnection,
  cell: string,
  replaced: ReadonlyArray<{id: string; by: string; key: string}>,
  actor: string,
): Promise<void> {
  const where = guardedWhere(
    'cancel',
    replaced.map((r) => ({id: r.id, fence: 0})),
  );
  const res = await exec(
    db,
    c,
    `UPDATE tasks SET state = '${TRANSITIONS.cancel.to}', finished_at = NOW(3), updated_at = NOW(3), lease_until = NULL, ${MARK_LEFT_UNRUNG}
       WHERE ${where.sql} AND state = 'submitted' AND attempt = 0 AND cell = ?`,
    [...where.params, cell],
  );
  if (res.affectedRows !== replaced.length)
    throw new AxError('internal', `debounce: the replace changed ${res.affectedRows} rows, expected ${replaced.length}: rolled back`);
  const history: HistoryRow[] = replaced.map((r) => [r.id, 'submitted', TRANSITIONS.cancel.to, 0, actor, replacedNote(r.by, r.key), null]);
  const h = historyInsert(history);
  await exec(db, c, h.sql, h.params);
}

/**
 * Points each gate at the task it now keeps: a throttle's window ends `window` from now (database
 * clock); a debounce's `until` is its task's due time (for reading: its state decides).
 */
async function writeGates(
  db: Db,
  c: PoolConnection,
  cell: string,
  kept: ReadonlyArray<{g: GateRef; t: NewTask}>,
  localNowMs: number,
): Promise<void> {
  const params: unknown[] = [];
  for (const {g, t} of kept) {
    // The debounced task's remaining delay, as writeRows computes its run_at.
    const ms = g.kind === 'throttle' ? (t.throttle?.windowMs ?? 0) : Math.max(0, t.submittedAtMs + t.delayMs - localNowMs);
    params.push(cell, g.type, g.key, g.kind, t.id, ms * 1000);
  }
  await exec(
    db,
    c,
    `INSERT INTO task_gates (cell, type, gate_key, kind, task_id, until)
       VALUES ${kept.map(() => '(?, ?, ?, ?, ?, NOW(3) + INTERVAL ? MICROSECOND)').join(', ')}
       ON DUPLICATE KEY UPDATE task_id = VALUES(task_id), until = VALUES(until)`,
    params,
  );
}
