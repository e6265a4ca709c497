/** HotPathStore.leasesRenew on MySQL. */
import type {LeasesRenewParams} from '../types.js';
import {type Db, exec, marks, select, tx} from './db.js';
import {caseById} from './rows.js';

/** Extends leases of rows still running with the given fences. Returns the ids renewed. */
export async function leasesRenew(db: Db, {held, leaseMs}: LeasesRenewParams): Promise<string[]> {
  if (held.length === 0) return [];
  const fence = caseById(
    held.map((h) => [h.id, h.fence]),
    'NULL',
  );
  const ids = held.map((h) => h.id);
  return tx(db, async (c) => {
    await exec(
      db,
      c,
      `UPDATE tasks SET lease_until = NOW(3) + INTERVAL ? MICROSECOND
        WHERE id IN (${marks(ids.length)}) AND state = 'running' AND fence = ${fence.sql}`,
      [leaseMs * 1000, ...ids, ...fence.params],
    );
    const rows = await select(
      db,
      c,
      `SELECT id FROM tasks WHERE id IN (${marks(ids.length)}) AND state = 'running' AND fence = ${fence.sql}`,
      [...ids, ...fence.params],
    );
    return rows.map((r) => r.id as string);
  });
}
