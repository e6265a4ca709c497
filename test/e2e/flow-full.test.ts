/**
 * Flow control at the full size, with real worker processes on MariaDB and RabbitMQ and the
 * default breaker settings (types.test.ts has the quick, scaled-down versions):
 * - a downstream that fails every attempt for 90 s, then recovers, under 20,000 tasks and 3 workers
 *   (one of them killed with SIGKILL while the breaker is open, and replaced): the breaker opens
 *   within 70 s of the first failure, only its probes run while it is open (3 per episode, cluster-wide), no task uses an attempt
 *   while parked, it closes after the recovery, every task succeeds, none is dead;
 * - meanwhile, a type submitted before any worker has its handler, whose worker starts 2 minutes
 *   later: every task succeeds at its first attempt;
 * - pause with 2,000 tasks waiting and a worker killed with SIGKILL while paused, then resume
 *   --rate 200: nothing lost, the released backlog runs at 200/s ± 10 %.
 */
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterEach, beforeEach, describe, expect, it} from 'vitest';
import type {AxClient} from '../../src/core/client.js';
import type {JsonObject} from '../../src/core/task/model.js';
import {eventually, type TestEnv} from '../helpers/env.js';
import {createProcessTestEnv, type ProcessTestEnv} from '../helpers/processes.js';
import {runCli, ROOT, type Spawned} from '../helpers/spawn.js';
import {ATTEMPT_STARTS} from '../helpers/history.js';

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('flow control at full size (worker processes)', () => {
  let fx: ProcessTestEnv;
  let env: TestEnv;
  let client: AxClient;
  // Each test its own database and processes: the first one's workers must not outlive it.
  beforeEach(async () => {
    fx = await createProcessTestEnv();
    ({env, client} = fx);
  });
  afterEach(async () => fx?.dispose());
  const count = async (sql: string, params: unknown[] = []): Promise<number> =>
    Number((await env.sql<{n: number}>(sql, params))[0]?.n ?? 0);
  const at = async (sql: string, params: unknown[] = []): Promise<number> =>
    ((await env.sql<{t: Date | null}>(sql, params))[0]?.t ?? new Date(Number.NaN)).getTime();
  const ax = (args: string[]) => runCli(args, {env: {...env.env, AX_OPERATOR: 'ops-test'}, cwd: ROOT});
  const started = async (ws: Spawned[]) =>
    eventually(async () => ws.every((w) => w.stderr().includes('worker started')), 30_000, `${ws.length} workers to start`);
  const submit = async (type: string, n: number, payload: (i: number) => JsonObject, maxRetries?: number) => {
    const chunk = 2000;
    for (let i = 0; i < n; i += chunk)
      await Promise.all(
        Array.from({length: Math.min(chunk, n - i)}, (_, j) =>
          client.submit({type, payload: payload(i + j), ...(maxRetries === undefined ? {} : {maxRetries})}),
        ),
      );
    await client.flush();
  };
  /** Attempts used by the type's tasks must equal its claims minus the claims given back (park, crash rescue counts as used). */
  const attemptsBalance = async (type: string) => {
    const claims = await count(`SELECT COUNT(*) AS n FROM ${ATTEMPT_STARTS} h JOIN tasks t ON t.id = h.task_id WHERE t.type = ?`, [type]);
    const given = await count(
      `SELECT COUNT(*) AS n FROM task_history h JOIN tasks t ON t.id = h.task_id
        WHERE t.type = ? AND h.from_state = 'running' AND h.to_state = 'submitted'`,
      [type],
    );
    return {claims, given, used: await count('SELECT SUM(attempt) AS n FROM tasks WHERE type = ?', [type])};
  };

  it(
    'a 90 s outage under 20k tasks and 3 workers (one killed while open); a type whose worker starts 2 min late',
    {timeout: 420_000},
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'ax-breaker-full-'));
      const flag = join(dir, 'down');
      writeFileSync(flag, '');
      const vars = {...env.env, AX_LOG_LEVEL: 'info'};
      const spawnWorker = () => fx.spawn(['worker', '--handlers', 'test/fixtures/handlers.js', '--pools', 'io'], vars);
      const workers = [spawnWorker(), spawnWorker(), spawnWorker()];
      fx.spawn(['scheduler'], env.env);
      await started(workers);

      // A new type no live worker handles yet (its deploy is 2 minutes behind).
      const lateSubmitted = Date.now();
      await submit('test_other', 200, (i) => ({i}));
      const N = 20_000;
      await submit('test_downstream', N, (i) => ({i, flag}), 5);

      const firstFailure = await eventually(
        async () => {
          const t = await at(
            "SELECT MIN(h.at) AS t FROM task_history h JOIN tasks t ON t.id = h.task_id WHERE t.type = 'test_downstream' AND h.to_state = 'failed'",
          );
          return Number.isNaN(t) ? null : t;
        },
        60_000,
        'the first failure',
      );
      const openedAt = await eventually(
        async () => {
          const t = await at("SELECT MIN(at) AS t FROM task_type_history WHERE type = 'test_downstream' AND event = 'breaker:opened'");
          return Number.isNaN(t) ? null : t;
        },
        90_000,
        'the breaker to open',
      );
      expect(openedAt - firstFailure).toBeLessThanOrEqual(70_000);
      await eventually(
        async () => (await count("SELECT COUNT(*) AS n FROM tasks WHERE parked = 'breaker'")) > 0,
        20_000,
        'tasks parked by the breaker',
      );

      // A worker dies (kill -9) while the breaker is open; a replacement starts.
      workers[0]!.child.kill('SIGKILL');
      await workers[0]!.exited;
      const replacement = spawnWorker();
      await started([replacement]);

      // The outage lasts 90 s from the first failure: the scenario's length, not a synchronisation.
      await wait(Math.max(0, firstFailure + 90_000 - Date.now()));
      rmSync(flag);

      // The late deploy: 2 minutes after its tasks were submitted, a worker with the handler starts.
      await wait(Math.max(0, lateSubmitted + 120_000 - Date.now()));
      expect(await count("SELECT COUNT(*) AS n FROM tasks WHERE type = 'test_other' AND state = 'submitted'")).toBe(200);
      const late = fx.spawn(['worker', '--handlers', 'test/fixtures/other-handlers.js', '--pools', 'io'], vars);
      await started([late]);

      await eventually(
        async () => (await count("SELECT COUNT(*) AS n FROM tasks WHERE type = 'test_downstream' AND state = 'succeeded'")) === N,
        240_000,
        `all ${N} to succeed`,
      );
      await eventually(
        async () => (await count("SELECT COUNT(*) AS n FROM tasks WHERE type = 'test_other' AND state = 'succeeded'")) === 200,
        60_000,
        'the late type to succeed',
      );
      expect(await count("SELECT COUNT(*) AS n FROM tasks WHERE state = 'dead'")).toBe(0);
      expect(
        await count("SELECT COUNT(*) AS n FROM task_type_history WHERE type = 'test_downstream' AND event = 'breaker:closed'"),
      ).toBeGreaterThan(0);

      // Only probes ran while it was open: the claims decide from the type's row in their own
      // transaction (read with a shared lock, so the opening waits for the claims already reading
      // it), so every claim after the opening's history row, until the breaker closed, is a probe.
      // The budget is the type's 3 probes per episode, cluster-wide; an episode is the time open
      // past its probe time before a worker moves it to half-open, and each half-open spell (it
      // renews after a further base cool-down without an outcome: at most twice per spell here).
      const closedAt = await at("SELECT MAX(at) AS t FROM task_type_history WHERE type = 'test_downstream' AND event = 'breaker:closed'");
      const episodes = await count(
        "SELECT COUNT(*) AS n FROM task_type_history WHERE type = 'test_downstream' AND event = 'breaker:half-open'",
      );
      const duringOpen = await count(
        `SELECT COUNT(*) AS n FROM ${ATTEMPT_STARTS} h JOIN tasks t ON t.id = h.task_id
          WHERE t.type = 'test_downstream' AND h.at > ? AND h.at < ?`,
        [new Date(openedAt), new Date(closedAt)],
      );
      console.info(
        `[flow-full] breaker opened ${openedAt - firstFailure} ms after the first failure; ${episodes} half-open episodes; ${duringOpen} claims while it was not closed; closed ${closedAt - firstFailure} ms after it`,
      );
      expect(episodes).toBeGreaterThan(0);
      expect(episodes).toBeLessThanOrEqual(4);
      expect(duringOpen).toBeGreaterThan(0);
      expect(duringOpen).toBeLessThanOrEqual(3 * 3 * episodes);

      // No attempt used while parked.
      const b = await attemptsBalance('test_downstream');
      expect(b.used).toBe(b.claims - b.given);
      expect(await count('SELECT MAX(attempt) AS n FROM tasks WHERE type = ?', ['test_downstream'])).toBeLessThanOrEqual(6);
      // The late type: each ran once, at its first attempt, none failed while it waited.
      expect(await count("SELECT COUNT(*) AS n FROM tasks WHERE type = 'test_other' AND attempt = 1")).toBe(200);
      expect(
        await count(
          "SELECT COUNT(*) AS n FROM task_history h JOIN tasks t ON t.id = h.task_id WHERE t.type = 'test_other' AND h.to_state IN ('failed', 'dead')",
        ),
      ).toBe(0);
      rmSync(dir, {recursive: true, force: true});
    },
  );

  it(
    'the breaker opens, closes and opens again through five episodes (3 workers); each close releases what it parked at once',
    {timeout: 150_000},
    async () => {
      const vars = {...env.env, AX_LOG_LEVEL: 'info', AX_FLOW_REFRESH: '300ms', AX_RETRY_BASE: '100ms'};
      fx.spawn(['scheduler'], {...env.env, AX_SCHEDULER_TICK: '20ms', AX_SCHEDULER_LOAD_EVERY: '200ms'});
      const workers = [1, 2, 3].map(() => fx.spawn(['worker', '--handlers', 'test/fixtures/handlers.js', '--pools', 'io'], vars));
      await started(workers);
      // A short cool-down and window so five episodes fit in the test; the rules are the defaults'.
      const set = await ax([
        'types',
        'set',
        'test_downstream',
        '--breaker-cooldown',
        '2s',
        '--breaker-window',
        '10s',
        '--breaker-min-volume',
        '10',
      ]);
      expect(set.code, set.stderr).toBe(0);
      const dir = mkdtempSync(join(tmpdir(), 'ax-episodes-'));
      const flag = join(dir, 'down');
      const state = async () => (await ax(['types', 'show', 'test_downstream', '--json'])).json.breaker.state as string;
      try {
        for (let episode = 1; episode <= 5; episode++) {
          writeFileSync(flag, 'down');
          await submit('test_downstream', 40, (i) => ({i, episode, flag}), 50);
          await eventually(async () => (await state()) === 'open', 30_000, `episode ${episode}: the breaker to open`);
          await eventually(
            async () => (await count("SELECT COUNT(*) AS n FROM tasks WHERE type = 'test_downstream' AND parked = 'breaker'")) > 0,
            30_000,
            `episode ${episode}: tasks parked by the breaker`,
          );
          rmSync(flag);
          // Recovered: the probes close it, and what it parked runs at once (not at its old probe time).
          await eventually(async () => (await state()) === 'closed', 30_000, `episode ${episode}: the breaker to close`);
          await eventually(
            async () => (await count("SELECT COUNT(*) AS n FROM tasks WHERE type = 'test_downstream' AND state <> 'succeeded'")) === 0,
            20_000,
            `episode ${episode}: every task to succeed after the close`,
          );
        }
      } finally {
        rmSync(dir, {recursive: true, force: true});
      }
      const hist = await env.sql<{event: string; n: number}>(
        "SELECT event, COUNT(*) AS n FROM task_type_history WHERE type = 'test_downstream' AND event LIKE 'breaker:%' GROUP BY event",
      );
      const by = Object.fromEntries(hist.map((h) => [h.event, Number(h.n)]));
      expect(by['breaker:opened']).toBeGreaterThanOrEqual(5);
      expect(by['breaker:closed']).toBe(5);
      expect(await count("SELECT COUNT(*) AS n FROM tasks WHERE type = 'test_downstream' AND state = 'dead'")).toBe(0);
      expect(workers.some((w) => w.stderr().includes('rang tasks the breaker had parked: it closed'))).toBe(true);
    },
  );

  it(
    'pause with 2,000 waiting and a worker killed while paused, then resume --rate 200: nothing lost, 200/s ± 10 %',
    {timeout: 120_000},
    async () => {
      const vars = {...env.env, AX_LOG_LEVEL: 'info'};
      const spawnWorker = () => fx.spawn(['worker', '--handlers', 'test/fixtures/handlers.js', '--pools', 'io'], vars);
      const workers = [spawnWorker(), spawnWorker(), spawnWorker()];
      await started(workers);
      expect((await ax(['types', 'pause', 'test_noop', '--reason', 'full-size test'])).code).toBe(0);
      const pausedAt = Date.now();
      // Within 5 s every worker has seen the pause: it logs so.
      await eventually(
        async () => workers.every((w) => w.stderr().includes('type paused: parking its tasks')),
        5000,
        'every worker to see the pause within 5 s',
      );
      expect(Date.now() - pausedAt).toBeLessThan(5000);
      const claimsBefore = await count(
        `SELECT COUNT(*) AS n FROM ${ATTEMPT_STARTS} h JOIN tasks t ON t.id = h.task_id WHERE t.type = 'test_noop'`,
      );
      const n = 2000;
      await submit('test_noop', n, (i) => ({i}));
      await eventually(
        async () => (await count("SELECT COUNT(*) AS n FROM tasks WHERE type = 'test_noop' AND parked = 'paused'")) === n,
        30_000,
        'all parked',
      );
      workers[1]!.child.kill('SIGKILL');
      await workers[1]!.exited;
      expect(await count(`SELECT COUNT(*) AS n FROM ${ATTEMPT_STARTS} h JOIN tasks t ON t.id = h.task_id WHERE t.type = 'test_noop'`)).toBe(
        claimsBefore,
      );

      const rate = 200;
      const r = await ax(['types', 'resume', 'test_noop', '--rate', String(rate), '--json']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.json).toMatchObject({released: n});
      await eventually(
        async () => (await count("SELECT COUNT(*) AS n FROM tasks WHERE type = 'test_noop' AND state = 'succeeded'")) === n,
        60_000,
        'all to succeed',
      );
      const [span] = await env.sql<{first: Date; last: Date}>(
        `SELECT MIN(h.at) AS first, MAX(h.at) AS last FROM ${ATTEMPT_STARTS} h JOIN tasks t ON t.id = h.task_id WHERE t.type = 'test_noop'`,
      );
      const achieved = (n - 1) / ((span!.last.getTime() - span!.first.getTime()) / 1000);
      console.info(`[flow-full] resume --rate ${rate}: ${achieved.toFixed(1)} tasks/s achieved over ${n} tasks`);
      expect(achieved).toBeGreaterThanOrEqual(rate * 0.9);
      expect(achieved).toBeLessThanOrEqual(rate * 1.1);
      expect(await count("SELECT COUNT(*) AS n FROM tasks WHERE type = 'test_noop' AND attempt = 1")).toBe(n);
    },
  );
});
