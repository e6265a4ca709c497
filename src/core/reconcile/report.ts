/**
 * What a reconcile run did, in a file of its own: core/events.ts carries it in `reconcile:done`
 * and reconcile.ts emits that event, so the type lives below both (no import cycle).
 */
/** What one reconcile run found and did (dry run: found only). */
export interface ReconcileReport {
  dryRun: boolean;
  expiredLeases: {found: number; failed: number; dead: number; stale: number; ids: string[]};
  undispatched: {found: number; republished: number; ids: string[]};
  /** Schedules whose missing occurrence was recreated; occurrences not rung (and cancelled) by their schedule's policy. */
  cron: {repaired: string[]; skipped: number};
  /** True when a limit was reached: run again to handle the rest. */
  truncated: boolean;
  durationMs: number;
}
