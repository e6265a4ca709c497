/** What the rescuer and the reconciler look for (RescueStore; on MySQL: mysql/rescue.ts). */

import type {HeldForDispatch} from './holds.js';

/** A running row whose lease expired, as the rescuer sees it. */
export interface ExpiredLease {
  id: string;
  fence: number;
  attempt: number;
  maxRetries: number;
  /** See ClaimedTask.retryBase. */
  retryBase: number;
  worker: string | null;
}

export interface LeasesFindExpiredParams {
  limit: number;
}

export interface TasksFindUndispatchedParams {
  limit: number;
  republishAfterMs: number;
}

/** What the rescuer and the reconciler look for (they write through HotPathStore's outcomes and marks). */
export interface RescueStore {
  /** Running tasks whose lease expired before the database's now, the longest expired first. */
  leasesFindExpired(p: LeasesFindExpiredParams): Promise<ExpiredLease[]>;
  /**
   * Due `submitted`/`failed` tasks never published since they became due, or published longer than
   * `republishAfterMs` ago and still unclaimed; oldest due first.
   */
  tasksFindUndispatched(p: TasksFindUndispatchedParams): Promise<HeldForDispatch[]>;
}
