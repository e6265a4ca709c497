/**
 * The business database's `task_outbox`: the relay's seam and the admin's (OutboxRelayStore,
 * OutboxAdminStore; on MySQL: mysql/outbox.ts).
 */

import type {TypeSelector} from '../../cells/cells.js';
import type {Closable} from './common.js';

/** A `task_outbox` row as the relay reads it. */
export interface OutboxRow {
  id: number;
  taskId: string | null;
  type: string;
  payload: string;
  runAt: Date | null;
  delayMs: number | null;
  pool: string | null;
  /** As written: validated by the relay (an unknown level fails the row); null on a table without the column. */
  priority: string | null;
  maxRetries: number | null;
  timeoutMs: number | null;
  dedupKey: string | null;
  /** task_key as written (TaskSpec.key): validated by the relay (a bad key fails the row); null on a table without the column. */
  key: string | null;
  /** The W3C trace context written with the row (enqueueInTransaction); the relay ignores a malformed one. Null on a table without the columns. */
  traceparent: string | null;
  tracestate: string | null;
  /** deps as written: JSON {after, onParentFailure} (TaskSpec.after); null without, or on a table without the column. */
  deps: string | null;
  createdAt: Date;
  attempts: number;
  lastError: string | null;
  failedAt: Date | null;
}

export interface OutboxClaimParams {
  owner: string;
  limit: number;
  leaseMs: number;
  /** Only rows of these types (a cell's relay; see cells/cells.ts typeSelector); absent: every row. */
  types?: TypeSelector;
  /**
   * Inclusive id ranges `[from, to]` every row of which the caller holds in a claim of its own
   * (its other batches in flight): passed over in the index without reading or locking the rows,
   * which a claim would otherwise read only to find them claimed. Absent or empty: none.
   */
  skip?: ReadonlyArray<readonly [from: number, to: number]>;
}

export interface OutboxMarkSentParams {
  ids: number[];
  owner: string;
}

export interface OutboxMarkFailedParams {
  rows: Array<{id: number; error: string}>;
  owner: string;
}

export interface OutboxReleaseParams {
  ids: number[];
  owner: string;
  error: string;
}

export interface OutboxPurgeSentParams {
  olderThanMs: number;
  limit: number;
}

export interface OutboxListParams {
  limit: number;
}

export interface OutboxRowStatesParams {
  ids: number[];
}

export interface OutboxRetryFailedParams {
  /** These rows, or every failed row. */
  ids: number[] | 'all';
}

export interface OutboxLag {
  unsent: number;
  failed: number;
  oldestAgeMs: number | null;
}

/**
 * The relay's seam on the business database's `task_outbox`. Claims are short transactions with
 * `FOR UPDATE SKIP LOCKED` so several relays share one table; no lock is held across a publish.
 */
export interface OutboxRelayStore {
  /**
   * Takes up to `limit` unsent, unfailed rows not claimed by a live relay, oldest first, for
   * `leaseMs`; each claim counts in the row's `attempts`.
   */
  outboxClaim(p: OutboxClaimParams): Promise<OutboxRow[]>;
  /** Marks rows sent (only those still claimed by `owner`); returns how many. */
  outboxMarkSent(p: OutboxMarkSentParams): Promise<number>;
  /**
   * Marks rows that can never be relayed as failed, with the reason (only those still claimed by
   * `owner`); they are skipped from then on.
   */
  outboxMarkFailed(p: OutboxMarkFailedParams): Promise<void>;
  /**
   * Hands rows back after a transient error (only those still claimed by `owner`; the error is
   * recorded; another pass retries them).
   */
  outboxRelease(p: OutboxReleaseParams): Promise<void>;
  /** Deletes sent rows older than `olderThanMs`, at most `limit`; returns how many. */
  outboxPurgeSent(p: OutboxPurgeSentParams): Promise<number>;
  /** Unsent rows and the age of the oldest (the outbox lag). */
  outboxLag(): Promise<OutboxLag>;
}

/** `ax outbox …` and `ax migrate --outbox`: inspection and repair of `task_outbox`. */
export interface OutboxAdminStore {
  /** The business database's name (for messages). */
  readonly database: string;
  outboxLag(): Promise<OutboxLag>;
  /** Rows not yet sent nor failed, oldest first. */
  outboxListUnsent(p: OutboxListParams): Promise<OutboxRow[]>;
  /** Failed rows, oldest first. */
  outboxListFailed(p: OutboxListParams): Promise<OutboxRow[]>;
  /** Where each row stands: pending, sent or failed (missing ids are absent from the map). */
  outboxRowStates(p: OutboxRowStatesParams): Promise<Map<number, 'pending' | 'sent' | 'failed'>>;
  /** Clears the failure of these rows (or all failed rows) so the relay tries them again; returns how many. */
  outboxRetryFailed(p: OutboxRetryFailedParams): Promise<number>;
  /** Whether task_outbox exists in the business database. */
  outboxTableExists(): Promise<boolean>;
  /**
   * Creates task_outbox if missing and gives a table made before them its CHECK constraints
   * (idempotent). Throws AxError('invalid_input'), changing nothing, when existing rows break a
   * constraint (their ids are in the message).
   */
  outboxCreateTable(): Promise<void>;
}

/** Everything the business database's outbox offers, for composition roots and tests. */
export type OutboxStore = OutboxRelayStore & OutboxAdminStore & Closable;
