/**
 * The overview sampler on MariaDB: after a restart the window is backfilled from the tables (the
 * tasks created and the transitions of the last minutes, of this cell only), live samples follow
 * without counting anything twice, and admin.overview is one sampler per service, stopped by close().
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {openAdmin} from '../../src/compose.js';
import {createOverviewSampler} from '../../src/core/admin/overview.js';
import {systemClock} from '../../src/core/time.js';
import {createTestEnv, eventually, type TestEnv} from '../helpers/env.js';

describe('overview sampler', () => {
  let env: TestEnv;

  beforeAll(async () => {
    env = await createTestEnv();
    // Ten minutes of history, one task a second, each created and succeeded in the same second
    // (3 s to 602 s ago); every tenth one failed once first. Another cell shares the database.
    for (const [cell, tag] of [
      ['default', '0'],
      ['other', '1'],
    ] as const) {
      await env.sql(
        `INSERT INTO tasks (id, cell, type, pool, state, attempt, max_retries, run_at, fence, content_hash, created_at, updated_at, finished_at, payload, published_at)
        SELECT CONCAT(LPAD(HEX(seq), 8, '0'), '-0000-7000-8000-00000000000${tag}'), ?, 'order_notify', 'io', 'succeeded', 1, 5,
               NOW(3) - INTERVAL (seq + 2) SECOND, 1, 'x', NOW(3) - INTERVAL (seq + 2) SECOND, NOW(3), NOW(3) - INTERVAL (seq + 2) SECOND, '{}', NOW(3)
          FROM seq_1_to_600`,
        [cell],
      );
    }
    await env.sql(`INSERT INTO task_history (task_id, from_state, to_state, attempt, worker, at)
      SELECT id, 'running', 'succeeded', 1, 'w', created_at FROM tasks
      UNION ALL SELECT id, 'running', 'failed', 1, 'w', created_at FROM tasks WHERE CONV(LEFT(id, 8), 16, 10) % 10 = 0`);
  });
  afterAll(async () => env?.dispose());

  it('backfills the window in a few statements, then samples on: every task and transition counted once', async () => {
    const store = await env.store();
    const calls: string[] = [];
    const counted = {
      backlogByState: () => (calls.push('backlog'), store.backlogByState()),
      tasksCreatedCount: (p: {since: Date; until: Date}) => (calls.push('created'), store.tasksCreatedCount(p)),
      tasksCreatedBuckets: (p: Parameters<typeof store.tasksCreatedBuckets>[0]) => (
        calls.push('createdBuckets'),
        store.tasksCreatedBuckets(p)
      ),
      transitionBuckets: (p: Parameters<typeof store.transitionBuckets>[0]) => (calls.push('transitions'), store.transitionBuckets(p)),
    };
    const s = createOverviewSampler({store: async () => counted, clock: systemClock, intervalMs: 5000, windowMs: 15 * 60_000});
    await s.sample();
    await s.backfill();
    // 15 minutes of 5 s buckets, 120 per statement: 2 slices of two grouped statements each.
    expect(calls).toEqual(['backlog', 'created', 'transitions', 'createdBuckets', 'transitions', 'createdBuckets', 'transitions']);
    const snap = s.snapshot();
    expect(snap.failures).toEqual([]);
    // Every interval is 5 s long (the buckets, and the first sample's interval).
    const total = (k: 'submitted' | 'succeeded' | 'failed') => Math.round(snap.series.reduce((n, p) => n + p[k] * 5, 0));
    expect(total('submitted')).toBe(600);
    expect(total('succeeded')).toBe(600);
    expect(total('failed')).toBe(60);
    expect(snap.finished).toMatchObject({succeeded: 600, dead: 0, cancelled: 0});
    expect(snap.states).toEqual({submitted: 0, running: 0, failed: 0, dead: 0});
    expect(snap.series.at(-1)!.backlog).toBe(0);
    expect(snap.series[0]!.backlog).toBeNull();
    expect(snap.series.length).toBeGreaterThanOrEqual(180);
    // A second sample counts only what came after the first.
    await s.sample();
    expect(s.snapshot().finished).toMatchObject({succeeded: 600});
    await s.stop();
  });

  it('admin.overview: started once, shared by the services acting as others, stopped by close()', async () => {
    const admin = openAdmin(env.rt);
    expect(admin.as('web:alice@127.0.0.1').overview).toBe(admin.overview);
    admin.overview.start();
    const snap = await eventually(async () => {
      const x = admin.overview.snapshot();
      return x.at !== null && x.finished !== null && x.finished.succeeded === 600 ? x : null;
    });
    expect(snap.states).toEqual({submitted: 0, running: 0, failed: 0, dead: 0});
    await admin.close();
    // Closed (the sampler stopped first, then the connections): it still answers from memory.
    expect(admin.overview.snapshot().finished?.succeeded).toBe(600);
  });
});
