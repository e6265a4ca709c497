/**
 * The archive seam of the task database (issue 13 §1; on MySQL: mysql/archive.ts): what the archiver, `ax archive run` and
 * `ax archive restore` need from MySQL. Rows cross this seam as plain column maps (snake_case
 * column names, DATETIME values as ISO-8601 UTC strings, the payload as its stored JSON text), the
 * exact form written to the cold-storage files (docs/archive.md), so a restore is byte for byte.
 */

import type {AuditContext} from './audit.js';

/** A column value as archived: text, a number, or null. DATETIMEs are ISO-8601 UTC strings. */
export type ArchivedValue = string | number | null;

/** A finished task as archived: its `tasks` row and its `task_history` rows (oldest first). */
export interface ArchivedTask {
  task: Record<string, ArchivedValue>;
  history: Array<Record<string, ArchivedValue>>;
}

/** The terminal states the archiver moves out of the hot table. */
export type ArchivableState = 'succeeded' | 'dead' | 'cancelled';
export const ARCHIVABLE_STATES: readonly ArchivableState[] = ['succeeded', 'dead', 'cancelled'];

/** Where a batch walk stands in idx_tasks_due (cell, state, run_at, type, id) order. */
export interface ArchiveCursor {
  runAt: Date;
  type: string;
  id: string;
}

export interface ArchiveBatchParams {
  state: ArchivableState;
  /** Only rows that finished (finished_at) before this instant. */
  finishedBefore: Date;
  /** Past this position (null: from the start). */
  after: ArchiveCursor | null;
  limit: number;
  /**
   * Called inside the batch's transaction with the rows locked (FOR UPDATE by primary key): must
   * write them to cold storage and verify them. The rows are deleted only when it resolves; when it
   * throws, the transaction rolls back (nothing deleted) and the error is rethrown.
   */
  write(tasks: ArchivedTask[]): Promise<void>;
}

export interface ArchiveBatchResult {
  /** Ids archived and deleted (tasks and their history). */
  deleted: string[];
  /** The position after the last candidate read: null when the walk is at its end. */
  next: ArchiveCursor | null;
}

export interface ArchiveCountParams {
  finishedBefore: Date;
}

/** A row a cold-storage part holds, as its snapshot: deleted only while the row is still this. */
export interface ArchivedSnapshot {
  id: string;
  state: string;
  /** The row's updated_at as archived (ISO string). */
  updatedAt: string;
}

export interface ArchiveDeleteResult {
  deleted: string[];
  /** In the hot table but changed since it was archived (replayed, …): kept, not deleted. */
  movedOn: string[];
  /** Not in the hot table any more (already deleted). */
  missing: string[];
}

/** One archiver per cell: held on its own connection until released (or the connection dies). */
export interface ArchiveLease {
  release(): Promise<void>;
}

export interface ArchiveRestoreParams {
  tasks: ArchivedTask[];
  /** When given, one audit row (listing the ids restored) is written in the restore's transaction. */
  audit?: AuditContext;
}

export interface ArchiveStore {
  /**
   * Takes the cell's archive lock (MySQL GET_LOCK, no wait) on a dedicated connection: null when
   * another archiver holds it. A crashed holder's lock goes with its connection.
   */
  archiveLock(): Promise<ArchiveLease | null>;
  /**
   * Finished tasks of the window per state: rows in `state` with finished_at < finishedBefore (read
   * through idx_tasks_due: run_at ≤ finished_at for every finished row that can be archived now).
   */
  archiveCount(p: ArchiveCountParams): Promise<Record<ArchivableState, number>>;
  /**
   * One batch: up to `limit` candidates past `after` (a range of idx_tasks_due), locked by primary
   * key and re-checked in one transaction, their history read, `write` called, then one multi-row
   * DELETE of the history and one of the tasks. Throws AxError('internal') and rolls back when the
   * delete does not remove exactly the rows written.
   */
  archiveBatch(p: ArchiveBatchParams): Promise<ArchiveBatchResult>;
  /**
   * Recovery of a part whose delete may not have committed: deletes (with their history) the rows
   * still exactly as archived (same state and updated_at), in one transaction.
   */
  archiveDeleteArchived(p: {rows: ArchivedSnapshot[]}): Promise<ArchiveDeleteResult>;
  /**
   * Puts archived tasks and their history back into the hot table, verbatim, in one transaction.
   * Throws AxError('conflict') naming the ids (nothing written) when any id (or dedup key) is still
   * in the hot table, AxError('invalid_input') when a task belongs to another cell.
   */
  archiveRestore(p: ArchiveRestoreParams): Promise<{restored: string[]}>;
}
