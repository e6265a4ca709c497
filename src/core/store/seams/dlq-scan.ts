/** The dead-letter scan's watermark (DlqScanStore; on MySQL: mysql/dlq-scan.ts). */

export interface DlqScanAdvanceParams {
  /** The watermark read before the pass (null: the cell has none yet). */
  from: Date | null;
  to: Date;
}

/**
 * The dead-letter scan's watermark (table dlq_scan, one row per cell): how far the deaths of the
 * cell have been reported, shared by its schedulers and kept across their restarts.
 */
export interface DlqScanStore {
  /** The watermark, or null before the cell's first scan. */
  dlqScanGet(): Promise<Date | null>;
  /**
   * Moves the watermark from `from` to `to` only if it is still `from` (a compare-and-set; `from`
   * null creates it only if there is none): true when this call moved it, false when another
   * scheduler did first. One statement.
   */
  dlqScanAdvance(p: DlqScanAdvanceParams): Promise<boolean>;
}
