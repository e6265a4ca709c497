/** The dead-letter queue (DeadLetterStore; on MySQL: mysql/dlq.ts). */

import type {JsonObject, PoolName} from '../../task/model.js';
import type {TaskState} from '../../task/state.js';
import type {AuditContext} from './audit.js';
import type {DispatchRef} from './common.js';

/** Which dead tasks: every filter optional, combined with AND; values are bound parameters. */
export interface DeadFilter {
  type?: string;
  /** Dead (finished) at or after. */
  since?: Date;
  /** Dead before. */
  until?: Date;
  /** A substring of the last error (LIKE wildcards in it match literally). */
  errorContains?: string;
}

export interface DeadListParams extends DeadFilter {
  limit: number;
  /** Only tasks listed after this one (the last id of the previous page): keyset on (finished_at, id). */
  after?: string;
}

/** A dead task as `ax dlq list` shows it: no payload. */
export interface DeadTaskRow {
  id: string;
  type: string;
  pool: PoolName;
  attempt: number;
  maxRetries: number;
  /** See TaskRecord.retryBase. */
  retryBase: number;
  createdAt: Date;
  /** When it died. */
  finishedAt: Date;
  lastError: string | null;
}

/** Dead tasks counted per type and exact last error (the first 1000 characters). */
export interface DeadErrorGroup {
  type: string;
  error: string | null;
  count: number;
  firstSeen: Date;
  lastSeen: Date;
  /** The smallest id among them. */
  sampleId: string;
}

export interface DeadReplayParams {
  /** Up to a few thousand ids (one transaction). */
  ids: string[];
  /** Recorded in history as who replayed (host:pid). */
  actor: string;
  /** Recorded with the replay: the operator, the command and selection, the reason. */
  audit: AuditContext;
  /**
   * A forced replay: succeeded and cancelled tasks are replayed too, and each replayed row keeps
   * {by: audit.operator, at, reason: audit.reason} for the handler (ctx.replay). Needs a reason.
   * Without it, only dead tasks, and the row's forced-replay stamp is cleared.
   */
  force?: {at: Date};
  /**
   * The new payload text of each row replayed, from its payload as read under the transaction's
   * row lock (a --patch applied and validated). A throw rolls the whole transaction back (nothing
   * of this call changes) and is rethrown. Omitted: payloads are kept (and not read).
   */
  rewrite?: (payload: JsonObject, id: string) => string;
  /**
   * The patch behind `rewrite`, as recorded (already bounded, see patchRecord in core/dlq/replay.ts):
   * each replayed task's history note ends with `; patch <it>`.
   */
  patch?: string;
}

export interface DeadPageParams extends DeadFilter {
  limit: number;
  /** Only ids after this one (the last id of the previous page): keyset on id. */
  afterId?: string;
  /** Also read each payload (MEDIUMTEXT: only when needed, e.g. to validate a --patch). */
  withPayload?: boolean;
}

/** A dead task of a page in id order: its id, and its payload when asked for. */
export interface DeadPageRow {
  id: string;
  payload?: JsonObject;
}

export interface DeadReplayResult {
  /** Now submitted and due, not yet rung for: ring (publish) them, then mark them at `fence`. */
  replayed: Array<DispatchRef & {fence: number}>;
  /** Not replayed: no longer dead (another replay, a cancel…) with the state found, or unknown (null). */
  skipped: Array<{id: string; state: TaskState | null}>;
}

/**
 * The dead-letter queue: dead tasks, read through a range of idx_tasks_due (cell, state = 'dead');
 * the cost is a scan of the dead rows the filter keeps, sorted.
 */
export interface DeadLetterStore {
  /** Newest death first (finished_at, then id, descending). */
  deadList(p: DeadListParams): Promise<DeadTaskRow[]>;
  /** Per type × exact last error: count, first and last death, a sample; unordered. */
  deadErrorGroups(p: DeadFilter): Promise<DeadErrorGroup[]>;
  /**
   * Dead tasks in id order after `afterId`, at most `limit`: the pages a replay (and its --patch
   * check) walks: the dead rows of idx_tasks_due past the cursor (a type checked in the index), sorted.
   */
  deadPage(p: DeadPageParams): Promise<DeadPageRow[]>;
  /**
   * Replays the dead tasks among `ids` (with `force`, succeeded and cancelled ones too) in one
   * transaction: → submitted, due now, marked published in advance (the caller rings them right
   * after the commit, and calls doorbellsForget for those it could not ring, so no separate mark
   * statement follows), retry_base = attempt (a fresh retry budget and backoff; attempts keep
   * counting), a history row "replayed by <operator>: <reason>" ("force-replayed by …" when forced,
   * ending with "; patch <patch>" when given), and one audit row listing the ids replayed (none when
   * none was). The UPDATE is guarded by the replay transition's source states (dead; with `force`
   * also succeeded and cancelled), so two concurrent replays replay each task once. Throws
   * invalid_input for a forced replay without a reason, before anything changes.
   */
  deadReplay(p: DeadReplayParams): Promise<DeadReplayResult>;
}
