/**
 * What several seams of the task database share: closing a store, the database clock, the
 * references a doorbell is rung and marked by, the parked kinds, and why MySQL could not be used.
 * The seams are split by entity under core/store/seams/; core/store/types.ts re-exports them all.
 */

import type {PoolName, Priority} from '../../task/model.js';

/** A store that holds connections: close it, or `await using` it. */
export interface Closable {
  /** Ends the connection pool; idempotent. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** The database clock, for services that compare due times with it. */
export interface DbClockStore {
  /** The database's NOW(3). */
  clockNow(): Promise<Date>;
}

/** A doorbell that was rung: the task and the fence it was rung for (0 for a task never claimed). */
export interface RungRef {
  id: string;
  fence: number;
}

/** What the doorbell needs to route a task. */
export interface DispatchRef {
  id: string;
  type: string;
  pool: PoolName;
  /** The row's priority: the level of the pool's queue a doorbell for it goes to. */
  priority: Priority;
}

/**
 * Why a waiting task is parked (the `tasks.parked` column): paused by hand, its breaker open, no
 * live worker handles it, over its type's max running (`capped`), or waiting for the rate-limit
 * slot reserved for it (`rate`: it runs then without taking a token).
 */
export type ParkedKind = 'paused' | 'breaker' | 'unhandled' | 'capped' | 'rate' | 'key-capped' | 'key-rate';

/** Why MySQL could not be used: `details.reason` of the AxError('unavailable') the adapter throws. */
export type DbFailureReason =
  | 'unreachable' // no server answers at the URL's host and port, or the connection broke
  | 'access_denied' // the server refused the login: unknown user or wrong password (it never says which)
  | 'permission_denied' // logged in, but the user may not use the database or a table
  | 'unknown_database' // the database named in the URL does not exist
  | 'not_migrated'; // the database exists but ax's schema (or task_outbox) is missing or old
