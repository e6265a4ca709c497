/**
 * Cluster-wide limits per type with real worker processes (`bin/run.js worker`) on MariaDB and
 * RabbitMQ: `ax types set --max-running 20` holds across 3 workers (the most running at once,
 * from task_history, is at most 20) and `--rate 100/s` across 3 workers runs at 100/s ± 10 % over
 * the steady part of 30 s; bad values of both flags are refused with nothing changed.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {AxClient} from '../../src/core/client.js';
import {eventually, type TestEnv} from '../helpers/env.js';
import {createProcessTestEnv, logLines, type ProcessTestEnv} from '../helpers/processes.js';
import {runCli, ROOT, type Spawned} from '../helpers/spawn.js';
import {maxConcurrent} from '../helpers/history.js';

/** A type's limits as shown, with no per-key limit and no fair dispatch. */
const limits = (maxRunning: number | null, rate: number | null) => ({
  maxRunning,
  rate,
  maxRunningPerKey: null,
  ratePerKey: null,
  fair: false,
  keyWeights: {},
});

describe('cluster-wide limits per type (3 worker processes)', () => {
  let fx: ProcessTestEnv;
  let env: TestEnv;
  let client: AxClient;
  let workers: Spawned[];
  const ax = (args: string[]) => runCli(args, {env: {...env.env, AX_OPERATOR: 'ops-test'}, cwd: ROOT});
  const count = async (sql: string, params: unknown[] = []): Promise<number> => Number((await env.sql<{n: number}>(sql, params))[0]!.n);
  const inEffect = (type: string, key: 'maxRunning' | 'rate', v: number | null) =>
    eventually(
      async () =>
        workers.every((w) => logLines(w.stderr()).some((l) => l.msg === 'type limits in effect' && l.type === type && l[key] === v)),
      10_000,
      `every worker to apply ${key} ${v} of ${type}`,
    );

  beforeAll(async () => {
    fx = await createProcessTestEnv();
    ({env, client} = fx);
    const vars = {...env.env, AX_LOG_LEVEL: 'info', AX_FLOW_REFRESH: '300ms'};
    workers = [1, 2, 3].map(() => fx.spawn(['worker', '--handlers', 'test/fixtures/handlers.js', '--pools', 'io'], vars));
    fx.spawn(['scheduler'], {...env.env, AX_SCHEDULER_TICK: '20ms', AX_SCHEDULER_LOAD_EVERY: '200ms'});
    await eventually(async () => workers.every((w) => w.stderr().includes('worker started')), 20_000, 'three workers');
  });
  afterAll(async () => fx?.dispose());

  it('bad values of --max-running and --rate: exit 2, a clear error, nothing changed', async () => {
    // Every form is unit-tested (flow-limits.test.ts); here the CLI's exit codes and messages, in parallel.
    const runs = await Promise.all([
      ...['0', '-1', '1.5'].map(async (v) => ({
        v,
        r: await ax(['types', 'set', 'test_sleep', '--max-running', v]),
        re: /max running must be a whole number >= 1/,
      })),
      ...['0', '-5/s', 'fast'].map(async (v) => ({
        v,
        r: await ax(['types', 'set', 'test_sleep', '--rate', v]),
        re: /rate must be a positive number/,
      })),
      // A good value beside a bad one changes nothing either.
      (async () => ({v: '5 + 0', r: await ax(['types', 'set', 'test_sleep', '--max-running', '5', '--rate', '0']), re: /rate must be/}))(),
    ]);
    for (const {v, r, re} of runs) expect(r, v).toMatchObject({code: 2, stderr: expect.stringMatching(re)});
    expect(await ax(['types', 'set', 'Nobody-Knows', '--max-running', '5'])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/type/),
    });
    const shown = await ax(['types', 'show', 'test_sleep', '--json']);
    expect(shown.json.limits).toEqual(limits(null, null));
    expect(await count("SELECT COUNT(*) AS n FROM admin_audit WHERE command = 'types set'")).toBe(0);
    expect(await count("SELECT COUNT(*) AS n FROM task_type_history WHERE event = 'settings'")).toBe(0);
    // The SDK: the same checks, the same calls.
    for (const bad of [{maxRunning: 0}, {maxRunning: 2.5}, {rate: 0}, {rate: '-1/s'}, {rate: 'fast'}])
      await expect(client.types.set('test_sleep', bad), JSON.stringify(bad)).rejects.toMatchObject({code: 'invalid_input'});
    expect(await count("SELECT COUNT(*) AS n FROM admin_audit WHERE command = 'types set'")).toBe(0);
    const set = await client.types.set('test_fail', {maxRunning: 3, rate: '30/m'});
    expect(set.limits).toEqual(limits(3, 0.5));
    expect((await client.types.show('test_fail')).limits).toEqual(limits(3, 0.5));
    expect((await client.types.set('test_fail', {rate: null})).limits).toEqual(limits(3, null));
    expect((await client.types.set('test_fail', {maxRunning: 'none'})).limits).toEqual(limits(null, null));
    expect(await count("SELECT COUNT(*) AS n FROM admin_audit WHERE command = 'types set'")).toBe(3);
    // A type no worker has registered yet: settings ahead of a deploy, and the output says so.
    const ahead = await ax(['types', 'set', 'nobody_knows', '--max-running', '5']);
    expect(ahead).toMatchObject({code: 0, stdout: expect.stringMatching(/no worker, task or operator has used this type yet/)});
    expect((await client.types.show('nobody_knows')).limits).toEqual(limits(5, null));
    expect(await count("SELECT COUNT(*) AS n FROM admin_audit WHERE command = 'types set'")).toBe(4);
  });

  it('--max-running 20 with slow handlers: never more than 20 running across the workers, the cap used', {timeout: 90_000}, async () => {
    const set = await ax(['types', 'set', 'test_sleep', '--max-running', '20', '--json']);
    expect(set.code).toBe(0);
    expect(set.json.limits).toEqual(limits(20, null));
    await inEffect('test_sleep', 'maxRunning', 20);
    const n = 200;
    const ids = await Promise.all(Array.from({length: n}, (_, i) => client.submit({type: 'test_sleep', payload: {i, ms: 400}})));
    await client.flush();
    const inIds = `task_id IN (${ids.map(() => '?').join(',')})`;
    await eventually(
      async () =>
        (await count(`SELECT COUNT(*) AS n FROM tasks WHERE state = 'succeeded' AND id IN (${ids.map(() => '?').join(',')})`, ids)) === n,
      60_000,
      'all to succeed',
    );
    // Each attempt is one history row, written with its outcome: its start (started_at) and its end (at).
    const rows = await env.sql<{started_at: Date; at: Date}>(
      `SELECT started_at, at FROM task_history WHERE ${inIds} AND from_state = 'running' ORDER BY seq`,
      ids,
    );
    const spans = rows.map((r) => ({start: r.started_at.getTime(), end: r.at.getTime()}));
    expect(spans).toHaveLength(n); // one attempt each: the deferrals used none
    const max = maxConcurrent(spans);
    console.log(`max running observed: ${max} (cap 20)`);
    expect(max).toBeLessThanOrEqual(20);
    expect(max).toBeGreaterThan(10);
    expect(await count(`SELECT COUNT(*) AS n FROM tasks WHERE attempt = 1 AND id IN (${ids.map(() => '?').join(',')})`, ids)).toBe(n);
    expect(
      await count(`SELECT COUNT(*) AS n FROM task_history WHERE ${inIds} AND error LIKE 'not run: 20 of its type running%'`, ids),
    ).toBeGreaterThan(0);
    const list = await ax(['types', 'list']);
    expect(list.stdout).toMatch(/test_sleep .* max-running=20/);
    const cleared = await ax(['types', 'set', 'test_sleep', '--max-running', 'none', '--json']);
    expect(cleared.json.limits).toEqual(limits(null, null));
  });

  it('--rate 100/s over 30 s of backlog with 3 workers: within ± 10 % over the steady window', {timeout: 120_000}, async () => {
    const set = await ax(['types', 'set', 'test_noop', '--rate', '100/s', '--json']);
    expect(set.code).toBe(0);
    expect(set.json.limits).toEqual(limits(null, 100));
    await inEffect('test_noop', 'rate', 100);
    const n = 3000;
    const ids = await Promise.all(Array.from({length: n}, (_, i) => client.submit({type: 'test_noop', payload: {i}})));
    await client.flush();
    const idList = ids.map(() => '?').join(',');
    await eventually(
      async () => (await count(`SELECT COUNT(*) AS n FROM tasks WHERE state = 'succeeded' AND id IN (${idList})`, ids)) === n,
      60_000,
      'all to succeed',
    );
    const starts = (
      await env.sql<{at: Date}>(
        `SELECT started_at AS at FROM task_history WHERE from_state = 'running' AND task_id IN (${idList}) ORDER BY started_at`,
        ids,
      )
    ).map((r) => r.at.getTime());
    expect(starts).toHaveLength(n);
    // The steady window: after the first second's burst (a full bucket) until the last second.
    const from = starts[0]! + 2000;
    const to = starts.at(-1)! - 1000;
    const inWindow = starts.filter((t) => t >= from && t < to).length;
    const rate = inWindow / ((to - from) / 1000);
    console.log(
      `rate achieved: ${rate.toFixed(1)}/s over ${((to - from) / 1000).toFixed(1)} s (limit 100/s); all ${n} in ${((starts.at(-1)! - starts[0]!) / 1000).toFixed(1)} s`,
    );
    expect(to - from).toBeGreaterThan(20_000);
    expect(rate).toBeGreaterThanOrEqual(90);
    expect(rate).toBeLessThanOrEqual(110);
    expect(await count(`SELECT COUNT(*) AS n FROM tasks WHERE attempt = 1 AND id IN (${idList})`, ids)).toBe(n);
    const shown = await ax(['types', 'show', 'test_noop']);
    expect(shown.stdout).toMatch(/at most 100\/s across all workers/);
  });
  it(
    'clearing a rate releases the tasks waiting for their slots at once (a slot reserved at the old rate may be far ahead)',
    {timeout: 60_000},
    async () => {
      expect((await ax(['types', 'set', 'test_noop', '--rate', '1/s'])).code).toBe(0);
      await inEffect('test_noop', 'rate', 1);
      const n = 20;
      const ids = await Promise.all(Array.from({length: n}, (_, i) => client.submit({type: 'test_noop', payload: {slow: i}})));
      await client.flush();
      const idList = ids.map(() => '?').join(',');
      await eventually(
        async () => (await count(`SELECT COUNT(*) AS n FROM tasks WHERE parked = 'rate' AND id IN (${idList})`, ids)) >= n - 3,
        20_000,
        'most waiting for rate slots up to ~20 s ahead',
      );
      const cleared = await ax(['types', 'set', 'test_noop', '--rate', 'none', '--json']);
      expect(cleared.code).toBe(0);
      expect(cleared.json.limits).toEqual(limits(null, null));
      expect(cleared.json.released).toBeGreaterThanOrEqual(n - 3);
      // Released: none waits for a slot any more, every one still waiting is due now (at the old
      // rate the last slot was ~20 s ahead). A worker whose snapshot still has the rate defers
      // none: the claim reads the stored limits.
      expect(await count(`SELECT COUNT(*) AS n FROM tasks WHERE parked IS NOT NULL AND id IN (${idList})`, ids)).toBe(0);
      expect(await count(`SELECT COUNT(*) AS n FROM tasks WHERE state = 'submitted' AND run_at > NOW(3) AND id IN (${idList})`, ids)).toBe(
        0,
      );
      await eventually(
        async () => (await count(`SELECT COUNT(*) AS n FROM tasks WHERE state = 'succeeded' AND id IN (${idList})`, ids)) === n,
        30_000,
        'all to succeed',
      );
      expect(await count(`SELECT COUNT(*) AS n FROM tasks WHERE attempt = 1 AND id IN (${idList})`, ids)).toBe(n);
    },
  );
});
