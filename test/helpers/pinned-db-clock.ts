/**
 * Pins the database clock of a store's sessions to a fake clock: every connection the store's pool
 * hands out first runs `SET timestamp = <fake now>` (MariaDB: NOW(), NOW(3) and every DATETIME
 * default of that session then read the fake time; SYSDATE() does not, and ax does not use it).
 * So the store's SQL runs unchanged while due times, outcome seconds, leases and the claim's "now"
 * move only when the test moves the fake clock — with no sleeps, and deterministic to the
 * millisecond. Statements on one connection run in the order they were queued, so the SET always
 * runs before the caller's first statement on the connection it acquired.
 *
 * A connection handed from one caller to a waiting one (pool exhausted) is not "acquired" again
 * and would keep the old time: `assertPinned` throws once that ever happened (keep each store's
 * concurrency below its connection limit).
 */
import type {Clock} from '../../src/core/time.js';
import type {AxStore} from '../../src/core/store/types.js';
import type {MysqlTaskStore} from '../../src/core/store/mysql/store.js';

interface CoreConnection {
  query(sql: string, params: unknown[], cb: (err: Error | null) => void): unknown;
}

interface CorePool {
  on(event: 'acquire', fn: (c: CoreConnection) => void): unknown;
  on(event: 'enqueue', fn: () => void): unknown;
}

export interface PinnedClock {
  /** Throws when a session may have run on an old time (pool exhausted) or a SET failed. */
  assertPinned(): void;
}

export function pinDbClock(stores: readonly AxStore[], clock: Clock): PinnedClock {
  const problems: string[] = [];
  for (const s of stores) {
    const core = (s as unknown as MysqlTaskStore).db.pool.pool as unknown as CorePool;
    core.on('acquire', (c) => {
      c.query('SET timestamp = ?', [clock.now() / 1000], (err) => {
        if (err) problems.push(`SET timestamp failed: ${err.message}`);
      });
    });
    core.on('enqueue', () => problems.push('a store pool ran out of connections: a session may have run on an old time'));
  }
  return {
    assertPinned() {
      if (problems.length > 0) throw new Error(`pinned database clock: ${problems.join('; ')}`);
    },
  };
}
