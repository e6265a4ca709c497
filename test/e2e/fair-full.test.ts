/**
 * Fair dispatch at the issue's sizes (issue 25), with 3 worker processes on MariaDB and RabbitMQ:
 * key A submits 100,000 tasks, then key B 100: B's tasks all start within 5 s (p99) while A's
 * backlog is still draining; with weights 3:1, two keys' shares of the starts over a minute are
 * within ± 10 % of 3:1. Soak tier (npm run test:soak).
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {AxClient} from '../../src/core/client.js';
import {eventually, type TestEnv} from '../helpers/env.js';
import {createProcessTestEnv, logLines, type ProcessTestEnv} from '../helpers/processes.js';
import {runCli, ROOT, type Spawned} from '../helpers/spawn.js';

const FLOOD = 100_000;

describe('fair dispatch at size (3 worker processes)', () => {
  let fx: ProcessTestEnv;
  let env: TestEnv;
  let client: AxClient;
  let workers: Spawned[];
  const ax = (args: string[]) => runCli(args, {env: {...env.env, AX_OPERATOR: 'ops-test'}, cwd: ROOT});
  const count = async (sql: string, params: unknown[] = []): Promise<number> => Number((await env.sql<{n: number}>(sql, params))[0]!.n);
  const fairInEffect = (type: string) =>
    eventually(
      async () =>
        workers.every((w) => logLines(w.stderr()).some((l) => l.msg === 'type limits in effect' && l.type === type && l.fair === true)),
      10_000,
      `every worker to apply --fair to ${type}`,
    );
  const submitMany = async (n: number, type: string, key: string, payload: Record<string, unknown>): Promise<string[]> => {
    const ids: string[] = [];
    for (let i = 0; i < n; i += 5000) {
      const part = await Promise.all(
        Array.from({length: Math.min(5000, n - i)}, (_, j) => client.submit({type, key, payload: {...payload, i: i + j}})),
      );
      ids.push(...part);
    }
    await client.flush();
    return ids;
  };

  beforeAll(async () => {
    fx = await createProcessTestEnv();
    ({env, client} = fx);
    const vars = {...env.env, AX_LOG_LEVEL: 'info', AX_FLOW_REFRESH: '300ms', AX_IO_CONCURRENCY: '16'};
    workers = [1, 2, 3].map(() => fx.spawn(['worker', '--handlers', 'test/fixtures/handlers.js', '--pools', 'io'], vars));
    fx.spawn(['scheduler'], {...env.env, AX_SCHEDULER_TICK: '20ms', AX_SCHEDULER_LOAD_EVERY: '200ms'});
    await eventually(async () => workers.every((w) => w.stderr().includes('worker started')), 20_000, 'three workers');
  });
  afterAll(async () => fx?.dispose());

  it("key B's 100 tasks start within 5 s (p99) behind key A's 100,000, while A still drains", {timeout: 600_000}, async () => {
    expect((await ax(['types', 'set', 'test_sleep', '--fair'])).code).toBe(0);
    await fairInEffect('test_sleep');
    const flood = await submitMany(FLOOD, 'test_sleep', 'tenant:a', {ms: 5});
    const small = await submitMany(100, 'test_sleep', 'tenant:b', {ms: 5});
    await eventually(
      async () => (await count(`SELECT COUNT(*) AS n FROM tasks WHERE task_key = 'tenant:b' AND state = 'succeeded'`)) === 100,
      120_000,
      'B to finish',
    );
    const leftOfA = await count(`SELECT COUNT(*) AS n FROM tasks WHERE task_key = 'tenant:a' AND state IN ('submitted', 'failed')`);
    const lags = (
      await env.sql<{ms: number}>(
        `SELECT TIMESTAMPDIFF(MICROSECOND, created_at, started_at) / 1000 AS ms FROM tasks WHERE id IN (${small.map(() => '?').join(',')}) ORDER BY ms`,
        small,
      )
    ).map((r) => Number(r.ms));
    const p99 = lags[Math.ceil(0.99 * lags.length) - 1]!;
    console.log(`B: start after submit p50 ${Math.round(lags[49]!)} ms, p99 ${Math.round(p99)} ms; A had ${leftOfA} of ${FLOOD} left`);
    expect(p99).toBeLessThan(5000);
    expect(leftOfA).toBeGreaterThan(FLOOD / 10);
    await eventually(
      async () => (await count(`SELECT COUNT(*) AS n FROM tasks WHERE task_key = 'tenant:a' AND state = 'succeeded'`)) === FLOOD,
      400_000,
      'A to drain',
    );
    expect(
      await count(
        `SELECT COUNT(*) AS n FROM tasks WHERE id IN (${flood
          .slice(0, 1000)
          .map(() => '?')
          .join(',')}) AND attempt = 1`,
        flood.slice(0, 1000),
      ),
    ).toBe(1000);
  });

  it('weights 3:1: the shares of the starts over a minute are within ± 10 % of 3:1', {timeout: 400_000}, async () => {
    expect((await ax(['types', 'set', 'test_sleep', '--fair', '--key-weight', 'tenant:w3=3'])).code).toBe(0);
    await eventually(
      async () =>
        workers.every((w) => logLines(w.stderr()).some((l) => l.msg === 'type limits in effect' && l.keyWeights?.['tenant:w3'] === 3)),
      10_000,
      'every worker to apply the weight',
    );
    // 3 workers × 16 slots × 100 ms: ~480 starts/s, so 36,000 take over a minute.
    await Promise.all([submitMany(27_000, 'test_sleep', 'tenant:w3', {ms: 100}), submitMany(9_000, 'test_sleep', 'tenant:w1', {ms: 100})]);
    await eventually(
      async () =>
        (await count(`SELECT COUNT(*) AS n FROM tasks WHERE task_key IN ('tenant:w3', 'tenant:w1') AND state = 'succeeded'`)) === 36_000,
      300_000,
      'both keys to drain',
    );
    // The window where both keys had due tasks: from the later first start to the earlier last start.
    const span = await env.sql<{k: string; first: Date; last: Date}>(
      `SELECT task_key AS k, MIN(started_at) AS first, MAX(started_at) AS last FROM tasks WHERE task_key IN ('tenant:w3', 'tenant:w1') GROUP BY task_key`,
    );
    const from = new Date(Math.max(...span.map((s) => s.first.getTime())) + 2000);
    const to = new Date(Math.min(...span.map((s) => s.last.getTime())) - 2000);
    const shares = await env.sql<{k: string; n: number}>(
      `SELECT task_key AS k, COUNT(*) AS n FROM tasks WHERE task_key IN ('tenant:w3', 'tenant:w1') AND started_at BETWEEN ? AND ? GROUP BY task_key`,
      [from, to],
    );
    const of = (k: string) => Number(shares.find((s) => s.k === k)?.n ?? 0);
    const ratio = of('tenant:w3') / of('tenant:w1');
    console.log(
      `weights 3:1 over ${Math.round((to.getTime() - from.getTime()) / 1000)} s: ${of('tenant:w3')} : ${of('tenant:w1')} = ${ratio.toFixed(3)}`,
    );
    expect(to.getTime() - from.getTime()).toBeGreaterThan(55_000);
    expect(ratio).toBeGreaterThan(2.7);
    expect(ratio).toBeLessThan(3.3);
  });
});
