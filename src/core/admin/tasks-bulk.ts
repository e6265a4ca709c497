/**
 * Bulk actions of the tasks admin (core/inspect/bulk.ts): plan (checked, resolved, counted; nothing
 * changes) → run. A cancel runs in audited batches of tasksCancelIds; a replay runs through the
 * dead-letter replay by ids (dlq.plan({ids}).run(), MAX_REPLAY_IDS at a time), audited as the
 * command given, so a bulk replay is the replay `ax dlq replay <ids>` does.
 */
import {MAX_REPLAY_IDS} from '../dlq/replay-request.js';
import {AxError} from '../errors.js';
import {
  type BulkAction,
  type BulkCount,
  type BulkInput,
  type BulkResult,
  countBulk,
  parseBulk,
  resolveBulk,
  runBulkCancel,
} from '../inspect/bulk.js';
import type {InspectStore} from '../store/types.js';
import type {DlqAdmin} from './dlq.js';
import type {AdminSession} from './session.js';

/** A bulk action as asked for, and the audit row's command (`web tasks bulk`, …). */
export interface BulkRequest extends BulkInput {
  command: string;
}

/** A checked and counted bulk action: nothing has changed yet. */
export interface PlannedBulk extends BulkCount {
  readonly action: BulkAction;
  /**
   * Acts on the tasks counted as actionable (and only those): what it did may differ from the
   * plan, as tasks move on meanwhile (those are `skipped`). Throws unavailable when a server cannot
   * be reached (the batches before stay done).
   */
  run(): Promise<BulkResult>;
}

/** Rounds of one replay batch whose tasks moved between its re-read and the replay's own plan. */
const REPLAY_TRIES = 3;

export function createBulkPlanner(s: AdminSession, dlq: DlqAdmin): (req: BulkRequest) => Promise<PlannedBulk> {
  const {ctx} = s;
  return async (req) => {
    const sel = parseBulk(req, ctx.clock.now());
    const operator = ctx.operator();
    const store = await s.store();
    const {ids, ...count} = countBulk(sel.action, await resolveBulk(store, sel));
    const run = (): Promise<BulkResult> => {
      if (sel.action === 'replay')
        return runBulkReplay(store, dlq, ids, {selected: count.matched, reason: sel.reason, command: req.command});
      const filter = 'ids' in sel ? (batch: readonly string[]) => ({ids: batch}) : () => ({...sel.input});
      return runBulkCancel(store, ids, {
        selected: count.matched,
        actor: ctx.actor,
        operator,
        reason: sel.reason,
        command: req.command,
        filter,
        notifier: s.lazyBroker(),
      });
    };
    return {action: sel.action, ...count, run};
  };
}

/**
 * Replays the dead tasks among `ids`, MAX_REPLAY_IDS at a time: each batch re-read first (only the
 * ones still dead go to the replay, whose plan would refuse a task that succeeded or went away
 * meanwhile), then dlq.plan({ids}).run(). A batch whose tasks moved between that read and the
 * replay's plan (conflict, not_found) is read again, up to REPLAY_TRIES times.
 */
async function runBulkReplay(
  store: Pick<InspectStore, 'tasksGetMany'>,
  dlq: DlqAdmin,
  ids: readonly string[],
  o: {selected: number; reason: string | null; command: string},
): Promise<BulkResult> {
  const out: BulkResult = {action: 'replay', done: 0, skipped: 0, byState: {}, unrung: 0};
  const stillDead = async (batch: readonly string[]): Promise<string[]> =>
    (await store.tasksGetMany({ids: batch})).filter((t) => t.state === 'dead').map((t) => t.id);
  for (let i = 0; i < ids.length; i += MAX_REPLAY_IDS) {
    let dead = await stillDead(ids.slice(i, i + MAX_REPLAY_IDS));
    for (let tries = 1; dead.length > 0; tries++) {
      try {
        const r = await (await dlq.plan({ids: dead, reason: o.reason, command: o.command})).run();
        out.done += r.replayed;
        out.unrung = (out.unrung ?? 0) + r.unrung;
        break;
      } catch (e) {
        const moved = e instanceof AxError && (e.code === 'conflict' || e.code === 'not_found');
        if (!moved || tries >= REPLAY_TRIES) throw e;
        dead = await stillDead(dead);
      }
    }
  }
  if (out.done > 0) out.byState.dead = out.done;
  out.skipped = o.selected - out.done;
  return out;
}
