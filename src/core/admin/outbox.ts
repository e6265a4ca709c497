/**
 * The transactional outbox in the admin service: the rows of the business database's task_outbox
 * (AX_OUTBOX_MYSQL_URL, else AX_MYSQL_URL) the relay has not sent or gave up on, its backlog, and
 * the retry of failed rows. Input is validated before the outbox is opened (invalid_input);
 * unavailable when it cannot be (scope `outbox`: not_migrated when task_outbox is missing).
 */
import {AxError, invalid} from '../errors.js';
import type {OutboxRow} from '../store/types.js';
import type {AdminSession} from './session.js';

/** Most rows listed at once. */
export const MAX_OUTBOX_LIST = 10_000;
export const DEFAULT_OUTBOX_LIST = 50;
/** Most ids retried at once (more: retry all). */
export const MAX_OUTBOX_RETRY_IDS = 1000;

export interface OutboxListing {
  /** `pending`: not yet sent, the relay will take them; `failed`: skipped until retried. */
  kind: 'pending' | 'failed';
  /** Oldest first. */
  rows: OutboxRow[];
}

export interface OutboxBacklog {
  /** The business database holding task_outbox. */
  database: string;
  /** Rows waiting for the relay (not sent, not failed). */
  unsent: number;
  /** Rows the relay gave up on (see `ax outbox list --failed`). */
  failed: number;
  /** Age of the oldest unsent row: the outbox lag. null when nothing is waiting. */
  oldestAgeMs: number | null;
}

export interface OutboxRetryResult {
  /** Failed rows cleared for the relay to try again. */
  retried: number;
  /** The ids asked for (repeats dropped), or 'all'. */
  ids: number[] | 'all';
}

export interface OutboxAdmin {
  /**
   * Pending rows (or with `failed`, the failed ones), oldest first, at most `limit` (1 to
   * MAX_OUTBOX_LIST, default DEFAULT_OUTBOX_LIST). Throws invalid_input for a bad limit.
   */
  list(o?: {failed?: boolean; limit?: number | undefined}): Promise<OutboxListing>;
  /** Unsent and failed rows and the age of the oldest unsent one (the outbox lag, database clock). */
  stats(): Promise<OutboxBacklog>;
  /**
   * Clears the failure of the rows named by id (numbers, or their text as typed), or of every
   * failed row (`all`), so the next relay pass takes them again. With ids nothing changes unless
   * every one is a failed row: not_found names unknown ids, conflict pending or sent ones. Throws
   * invalid_input for ids together with `all`, neither, more than MAX_OUTBOX_RETRY_IDS ids or one
   * that is not a whole number ≥ 1 (nothing opened).
   */
  retry(sel: {ids?: ReadonlyArray<string | number>; all?: boolean}): Promise<OutboxRetryResult>;
}

export function createOutboxAdmin(s: AdminSession): OutboxAdmin {
  return {
    async list(o = {}) {
      const limit = o.limit ?? DEFAULT_OUTBOX_LIST;
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_OUTBOX_LIST)
        throw invalid(`limit must be a whole number from 1 to ${MAX_OUTBOX_LIST}`);
      const kind = o.failed ? 'failed' : 'pending';
      const outbox = await s.outbox();
      return {kind, rows: kind === 'failed' ? await outbox.outboxListFailed({limit}) : await outbox.outboxListUnsent({limit})};
    },
    async stats() {
      const outbox = await s.outbox();
      return {database: outbox.database, ...(await outbox.outboxLag())};
    },
    async retry(sel) {
      const ids = parseRetryIds(sel.ids ?? [], sel.all === true);
      const outbox = await s.outbox();
      if (ids !== 'all') mustBeFailed(ids, await outbox.outboxRowStates({ids}));
      return {retried: await outbox.outboxRetryFailed({ids}), ids};
    },
  };
}

/** The ids to retry, repeats dropped, or 'all' (see OutboxAdmin.retry). */
function parseRetryIds(given: ReadonlyArray<string | number>, all: boolean): number[] | 'all' {
  if (all && given.length > 0) throw invalid('give either ids or --all, not both');
  if (all) return 'all';
  if (given.length === 0) throw invalid('name the failed rows to retry by id (see `ax outbox list --failed`), or give --all');
  if (given.length > MAX_OUTBOX_RETRY_IDS)
    throw invalid(`at most ${MAX_OUTBOX_RETRY_IDS} ids at a time; use --all to retry every failed row`);
  const ids = given.map((g) => {
    const s = String(g);
    const n = /^\d{1,16}$/.test(s) ? Number(s) : 0;
    if (!(n >= 1 && Number.isSafeInteger(n))) throw invalid(`"${s}" is not an outbox row id (a whole number ≥ 1)`);
    return n;
  });
  return [...new Set(ids)];
}

/**
 * Refuses (changing nothing) unless every id is a failed row: not_found for unknown ids, conflict
 * for pending or sent ones.
 */
function mustBeFailed(ids: number[], found: Map<number, 'pending' | 'sent' | 'failed'>): void {
  const missing = ids.filter((id) => !found.has(id));
  if (missing.length > 0) {
    throw new AxError('not_found', `no task_outbox row with id ${missing.join(', ')}; nothing was retried`, {details: {ids: missing}});
  }
  const notFailed = ids.filter((id) => found.get(id) !== 'failed');
  if (notFailed.length > 0) {
    const what = notFailed.map((id) => `${id} (${found.get(id)})`).join(', ');
    throw new AxError('conflict', `not failed, so nothing to retry: ${what}; nothing was retried`, {details: {ids: notFailed}});
  }
}
