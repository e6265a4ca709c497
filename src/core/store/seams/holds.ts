/** The scheduler's dispatch holds on delayed tasks and retries (DispatchHoldStore; on MySQL: mysql/holds.ts). */

import type {DbClockStore, DispatchRef} from './common.js';

/** A delayed task a scheduler holds in its wheel. */
export interface HeldForDispatch extends DispatchRef {
  runAt: Date;
  scheduleName: string | null;
  /** Attempts used so far: 0 for a first run, more for a retry waiting in `failed`. */
  attempt: number;
  /** The row's fence when read: a doorbell rung for it is marked only while the fence is unchanged. */
  fence: number;
  /** The task's dedup key (a cron occurrence's names its schedule and fire time). */
  dedupKey: string | null;
}

export interface HoldsTakeParams {
  /** The scheduler (its id). */
  owner: string;
  /** Tasks due within this from now are taken. */
  horizonMs: number;
  /** A hold lasts until max(run_at, now) + this: a scheduler that stops renewing loses it then. */
  holdMs: number;
  /** Rows taken or renewed per call at most (those due first). */
  limit: number;
}

export interface HoldsReleaseParams {
  owner: string;
}

/** The scheduler's dispatch holds on delayed tasks and retries. */
export interface DispatchHoldStore extends DbClockStore {
  /**
   * For scheduler `owner`: takes hold of unpublished submitted/failed tasks due within `horizonMs`
   * that no live scheduler holds (hold = until max(run_at, now) + `holdMs`), renews its existing
   * holds among them (up to `limit` rows in all, due first), and returns everything it holds, oldest
   * due first. A brand-new immediate task (never claimed, due at its creation) is left to its
   * producer's own publish for its first 2 s (mysql/holds.ts PRODUCER_GRACE_US).
   */
  holdsTake(p: HoldsTakeParams): Promise<HeldForDispatch[]>;
  /** Lets go of every hold of `owner` (graceful scheduler stop); returns how many. */
  holdsRelease(p: HoldsReleaseParams): Promise<number>;
}
