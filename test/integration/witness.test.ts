/**
 * The fault scenarios' witness checks (test/helpers/witness.ts) catch what they are there to catch:
 * rows written by hand that break each rule are reported, by id, by both the id-list and the
 * whole-database readings; a clean task is not.
 */
import {randomUUID} from 'node:crypto';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {createTestEnv, type TestEnv} from '../helpers/env.js';
import {cleanWitnesses, readAllWitnesses, readWitnesses} from '../helpers/witness.js';

describe('witness checks', () => {
  let env: TestEnv;
  const ids = {clean: randomUUID(), double: randomUUID(), twice: randomUUID(), open: randomUUID(), early: randomUUID(), gap: randomUUID()};
  const lost = randomUUID();
  const due = Date.parse('2026-01-01T00:00:10Z');

  const task = (id: string, state: string, attempt: number, payload: object = {}) =>
    env.sql(
      `INSERT INTO tasks (id, type, state, attempt, max_retries, run_at, content_hash, created_at, updated_at, payload)
       VALUES (?, 'w', ?, ?, 5, '2026-01-01 00:00:00', 'h', NOW(3), NOW(3), ?)`,
      [id, state, attempt, JSON.stringify(payload)],
    );
  const outcome = (id: string, attempt: number, to: string, startedAt = '2026-01-01 00:00:20', error: string | null = null) =>
    env.sql(
      `INSERT INTO task_history (task_id, from_state, to_state, attempt, worker, at, started_at, error) VALUES (?, 'running', ?, ?, 'w1', NOW(3), ?, ?)`,
      [id, to, attempt, startedAt, error],
    );

  beforeAll(async () => {
    env = await createTestEnv();
    await task(ids.clean, 'succeeded', 2);
    await outcome(ids.clean, 1, 'failed');
    await env.sql(
      `INSERT INTO task_history (task_id, from_state, to_state, attempt, worker, at, started_at, error)
                   VALUES (?, 'running', 'failed', 1, 'w1', NOW(3), NOW(3), 'released: shutdown')`,
      [ids.clean],
    );
    await outcome(ids.clean, 2, 'succeeded');
    await task(ids.double, 'succeeded', 2);
    await outcome(ids.double, 1, 'succeeded');
    await outcome(ids.double, 2, 'succeeded');
    await task(ids.twice, 'succeeded', 1);
    await outcome(ids.twice, 1, 'failed', undefined, 'lease expired');
    await outcome(ids.twice, 1, 'succeeded');
    await task(ids.open, 'running', 1);
    await task(ids.early, 'succeeded', 1, {due});
    await outcome(ids.early, 1, 'succeeded', '2026-01-01 00:00:09');
    await task(ids.gap, 'dead', 3);
    await outcome(ids.gap, 1, 'failed');
    await outcome(ids.gap, 3, 'dead');
  });
  afterAll(async () => env?.dispose());

  it('names each broken rule once, by id, from a list of ids', async () => {
    const all = [...Object.values(ids), lost];
    const r = await readWitnesses(env, all, new Map([[ids.early, due]]));
    expect(r).toEqual({
      ...cleanWitnesses(all.length),
      lost: [lost],
      nonTerminal: [{id: ids.open, state: 'running'}],
      doubleSuccess: [ids.double],
      early: [{id: ids.early, attempt: 1, earlyMs: 1000}],
      endedTwice: [{id: ids.twice, attempt: 1, n: 2}],
      gaps: [ids.double, ids.gap],
    });
    expect(await readWitnesses(env, [ids.clean])).toEqual(cleanWitnesses(1));
  });

  it('reads the same over the whole database, with lost rows as a count', async () => {
    const r = await readAllWitnesses(env, 7);
    expect(r.lost).toEqual(['1 acknowledged tasks have no row']);
    expect(r.nonTerminal).toEqual([{id: ids.open, state: 'running'}]);
    expect(r.doubleSuccess).toEqual([ids.double]);
    expect(r.early).toEqual([{id: ids.early, attempt: 1, earlyMs: 1000}]);
    expect(r.endedTwice).toEqual([{id: ids.twice, attempt: 1, n: 2}]);
    expect([...r.gaps].sort()).toEqual([ids.double, ids.gap].sort());
  });
});
