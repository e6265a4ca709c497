/**
 * The archiver's candidate read is a range of idx_tasks_due in index order (no filesort, no scan of
 * the table) on a table big enough for the optimizer to care, with and without a cursor.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {archiveCandidatesSql} from '../../src/core/store/mysql/archive.js';
import {createTestEnv, type TestEnv} from '../helpers/env.js';

interface Plan {
  key: string | null;
  type: string;
  Extra: string | null;
}

describe('query plan of the archive batch read', () => {
  let env: TestEnv;
  beforeAll(async () => {
    env = await createTestEnv();
    await env.sql(`INSERT INTO tasks (id, cell, type, pool, state, attempt, max_retries, run_at, fence, content_hash, created_at, updated_at, finished_at, payload)
      SELECT CONCAT(LPAD(HEX(seq), 8, '0'), '-0000-7000-8000-000000000000'), 'default', 'order_notify', 'io',
             ELT(1 + seq % 5, 'submitted', 'succeeded', 'succeeded', 'dead', 'cancelled'), 1, 5,
             NOW(3) - INTERVAL seq MINUTE, 1, 'x', NOW(3) - INTERVAL seq MINUTE, NOW(3), NOW(3) - INTERVAL seq MINUTE, '{}'
        FROM seq_1_to_20000`);
    await env.sql('ANALYZE TABLE tasks');
  });
  afterAll(async () => env?.dispose());

  it('reads a range of idx_tasks_due in order, with and without a cursor', async () => {
    const cutoff = new Date(Date.now() - 86_400_000);
    for (const after of [
      null,
      {runAt: new Date(Date.now() - 5 * 86_400_000), type: 'order_notify', id: '00000100-0000-7000-8000-000000000000'},
    ]) {
      const q = archiveCandidatesSql('default', {state: 'succeeded', finishedBefore: cutoff, after, limit: 500});
      const p = (await env.sql<Plan>(`EXPLAIN ${q.sql}`, q.params))[0]!;
      expect(p.key).toBe('idx_tasks_due');
      expect(p.type).toBe('range');
      expect(p.Extra ?? '').not.toMatch(/filesort/);
    }
  });
});
