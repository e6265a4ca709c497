/** The dead-letter scan's watermark (table dlq_scan, migration 11; see DlqScanStore). */
import type {DlqScanAdvanceParams} from '../types.js';
import {type Db, exec, select} from './db.js';

/** The cell's watermark, or null before its first scan. One primary-key read. */
export async function dlqScanGet(db: Db, cell: string): Promise<Date | null> {
  const rows = await select(db, db.pool, 'SELECT scanned_until FROM dlq_scan WHERE cell = ?', [cell]);
  return (rows[0]?.scanned_until as Date | undefined) ?? null;
}

/**
 * Compare-and-set of the watermark: INSERT IGNORE when there is none (`from` null), else an UPDATE
 * guarded by the value read. True when this statement changed it. One statement, autocommit.
 */
export async function dlqScanAdvance(db: Db, cell: string, p: DlqScanAdvanceParams): Promise<boolean> {
  const res =
    p.from === null
      ? await exec(db, db.pool, 'INSERT IGNORE INTO dlq_scan (cell, scanned_until, updated_at) VALUES (?, ?, NOW(3))', [cell, p.to])
      : await exec(db, db.pool, 'UPDATE dlq_scan SET scanned_until = ?, updated_at = NOW(3) WHERE cell = ? AND scanned_until = ?', [
          p.to,
          cell,
          p.from,
        ]);
  return res.affectedRows === 1;
}
