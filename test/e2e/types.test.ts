/**
 * Flow control with real worker processes (`bin/run.js worker`) on MariaDB and RabbitMQ:
 * - safe deploys: a type submitted while only workers of an older deploy (without its handler) run
 *   waits parked without using an attempt, and runs once a worker with the handler starts;
 * - pause and resume by hand: no claim of a paused type on any worker once each has seen the pause,
 *   submits accepted and parked, resume --rate releasing the backlog no faster than the rate.
 */
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {AxClient} from '../../src/core/client.js';
import {eventually, type TestEnv} from '../helpers/env.js';
import {createProcessTestEnv, logLines, type ProcessTestEnv} from '../helpers/processes.js';
import {runCli, ROOT, type Spawned} from '../helpers/spawn.js';
import {ATTEMPT_STARTS} from '../helpers/history.js';

describe('flow control per type (worker processes)', () => {
  let fx: ProcessTestEnv;
  let env: TestEnv;
  let client: AxClient;

  const worker = (handlers: string, extra: Record<string, string> = {}): Spawned =>
    fx.spawn(['worker', '--handlers', handlers, '--pools', 'io'], {...env.env, AX_LOG_LEVEL: 'info', AX_FLOW_REFRESH: '300ms', ...extra});
  const ax = (args: string[]) => runCli(args, {env: {...env.env, AX_FLOW_REFRESH: '300ms', AX_OPERATOR: 'ops-test'}, cwd: ROOT});
  const logged = (w: Spawned, msg: string, type: string): boolean => logLines(w.stderr()).some((l) => l.msg === msg && l.type === type);
  const submitMany = async (type: string, n: number): Promise<string[]> => {
    const ids = await Promise.all(Array.from({length: n}, (_, i) => client.submit({type, payload: {i}})));
    await client.flush();
    return ids;
  };
  const count = async (sql: string, params: unknown[]): Promise<number> => Number((await env.sql<{n: number}>(sql, params))[0]!.n);

  beforeAll(async () => {
    fx = await createProcessTestEnv();
    ({env, client} = fx);
  });
  afterAll(async () => fx?.dispose());

  it('safe deploy: tasks of a type no live worker handles wait parked (no attempt), then all succeed once a worker with it starts', async () => {
    const old = worker('test/fixtures/other-handlers.js');
    await eventually(async () => old.stderr().includes('worker started'), 20_000, 'the old worker to start');
    const ids = await submitMany('test_noop', 50);
    // The old worker parks every one of them unclaimed: observable as the parked mark.
    await eventually(
      async () => (await count("SELECT COUNT(*) AS n FROM tasks WHERE type = 'test_noop' AND parked = 'unhandled'", [])) === 50,
      20_000,
      'all 50 parked as unhandled',
    );
    const list = await ax(['types', 'list', '--json']);
    expect(list.code).toBe(0);
    expect(list.json.types.find((t: {type: string}) => t.type === 'test_noop')).toMatchObject({noHandler: true, parked: {unhandled: 50}});
    // Parked once each, no spinning: one defer row per task, no claim by the worker without the handler.
    expect(await count("SELECT COUNT(*) AS n FROM task_history WHERE from_state = 'submitted' AND to_state = 'submitted'", [])).toBe(50);
    expect(await count(`SELECT COUNT(*) AS n FROM ${ATTEMPT_STARTS} s`, [])).toBe(0);
    // The new deploy's worker registers the type and rings them at once. The old worker still
    // consumes the same queue during the rolling deploy: what it gets it hands back for a second
    // (its handler is on another live worker), and the scheduler rings those again.
    worker('test/fixtures/handlers.js');
    fx.spawn(['scheduler'], {...env.env});
    await eventually(
      async () =>
        (await count(`SELECT COUNT(*) AS n FROM tasks WHERE state = 'succeeded' AND id IN (${ids.map(() => '?').join(',')})`, ids)) === 50,
      30_000,
      'all 50 to succeed',
    );
    // None used an attempt while it waited: each ran exactly once, at attempt 1.
    expect(await count("SELECT COUNT(*) AS n FROM tasks WHERE type = 'test_noop' AND attempt = 1 AND parked IS NULL", [])).toBe(50);
    expect(await count("SELECT COUNT(*) AS n FROM task_history WHERE to_state IN ('failed', 'dead')", [])).toBe(0);
    // The deploy ends: the old worker stops.
    old.child.kill('SIGTERM');
    await old.exited;
  });

  it('pause: no claim of the type on any worker once they saw it, submits parked; resume --rate 200 releases no faster than 200/s', async () => {
    const workers = [worker('test/fixtures/handlers.js'), worker('test/fixtures/handlers.js')];
    await eventually(async () => workers.every((w) => w.stderr().includes('worker started')), 20_000, 'two workers to start');
    const bad = await ax(['types', 'pause', 'test_noop']);
    expect(bad.code).toBe(2); // --reason is required
    const p = await ax(['types', 'pause', 'test_noop', '--reason', 'downstream outage', '--json']);
    expect(p.code).toBe(0);
    expect(p.json).toMatchObject({type: 'test_noop', changed: true, paused: {by: 'ops-test', reason: 'downstream outage'}});
    const again = await ax(['types', 'pause', 'test_noop', '--reason', 'again']);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/already paused by ops-test/);
    // Each worker logs when its snapshot sees the pause (within AX_FLOW_REFRESH).
    await eventually(
      async () => workers.every((w) => logged(w, 'type paused: parking its tasks', 'test_noop')),
      5000,
      'both workers to see the pause',
    );
    const claimsBefore = await count(`SELECT COUNT(*) AS n FROM ${ATTEMPT_STARTS} s`, []);
    const n = 400;
    const ids = await submitMany('test_noop', n);
    const inIds = `id IN (${ids.map(() => '?').join(',')})`;
    await eventually(
      async () => (await count(`SELECT COUNT(*) AS n FROM tasks WHERE parked = 'paused' AND ${inIds}`, ids)) === n,
      20_000,
      'every submit accepted and parked',
    );
    expect(await count(`SELECT COUNT(*) AS n FROM ${ATTEMPT_STARTS} s`, [])).toBe(claimsBefore);
    const shown = await ax(['types', 'show', 'test_noop', '--json']);
    expect(shown.json).toMatchObject({paused: {by: 'ops-test'}, parked: {paused: n}});
    expect(shown.json.history[0]).toMatchObject({event: 'paused', actor: 'ops-test', detail: 'downstream outage'});

    const rate = 200;
    const r = await ax(['types', 'resume', 'test_noop', '--rate', String(rate), '--json']);
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({type: 'test_noop', released: n, unrung: 0});
    await eventually(
      async () => (await count(`SELECT COUNT(*) AS n FROM tasks WHERE state = 'succeeded' AND ${inIds}`, ids)) === n,
      30_000,
      'all to succeed',
    );
    const [span] = await env.sql<{first: Date; last: Date}>(
      `SELECT MIN(at) AS first, MAX(at) AS last FROM ${ATTEMPT_STARTS} s WHERE task_id IN (${ids.map(() => '?').join(',')})`,
      ids,
    );
    // The released backlog started no faster than the rate: n tasks need at least (n − one batch) / rate.
    const spanMs = span!.last.getTime() - span!.first.getTime();
    expect(spanMs).toBeGreaterThanOrEqual(0.9 * ((n - rate / 10) / rate) * 1000);
    // Each ran once at attempt 1: parking used no attempt.
    expect(await count(`SELECT COUNT(*) AS n FROM tasks WHERE attempt = 1 AND ${inIds}`, ids)).toBe(n);
    // Audited: pause and resume, by the operator.
    const audit = await env.sql<{command: string; operator: string}>(
      "SELECT command, operator FROM admin_audit WHERE command LIKE 'types %' ORDER BY id",
    );
    expect(audit).toEqual([
      {command: 'types pause', operator: 'ops-test'},
      {command: 'types resume', operator: 'ops-test'},
    ]);
    // Resuming a type that is not paused: exit 4, nothing changed.
    const no = await ax(['types', 'resume', 'test_noop']);
    expect(no.code).toBe(4);
    expect(no.stderr).toMatch(/not paused/);
    expect((await ax(['types', 'show', 'nobody_knows'])).code).toBe(3);
    expect((await ax(['types', 'resume', 'test_noop', '--rate', '0'])).code).toBe(2);
  });
});

describe('circuit breaker per type (worker processes)', () => {
  let fx: ProcessTestEnv;
  let env: TestEnv;
  let client: AxClient;
  beforeAll(async () => {
    fx = await createProcessTestEnv();
    ({env, client} = fx);
  });
  afterAll(async () => fx?.dispose());
  const count = async (sql: string, params: unknown[] = []): Promise<number> => Number((await env.sql<{n: number}>(sql, params))[0]!.n);

  it(
    'a failing downstream opens the breaker for 3 workers together, tasks park without using attempts, it closes after recovery, all succeed',
    {timeout: 150_000},
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'ax-breaker-'));
      const flag = join(dir, 'down');
      writeFileSync(flag, '');
      const vars = {...env.env, AX_LOG_LEVEL: 'info', AX_FLOW_REFRESH: '300ms', AX_RETRY_BASE: '200ms', AX_RETRY_MAX: '1s'};
      const workers = [1, 2, 3].map(() => fx.spawn(['worker', '--handlers', 'test/fixtures/handlers.js', '--pools', 'io'], vars));
      fx.spawn(['scheduler'], {...env.env, AX_SCHEDULER_TICK: '50ms'});
      await eventually(async () => workers.every((w) => w.stderr().includes('worker started')), 20_000, 'three workers');
      const ax = (args: string[]) => runCli(args, {env: {...env.env, AX_OPERATOR: 'ops-test'}, cwd: ROOT});
      const set = await ax(['types', 'set', 'test_downstream', '--breaker-cooldown', '2s', '--breaker-max-cooldown', '4s', '--json']);
      expect(set.code).toBe(0);
      expect(set.json.breaker).toMatchObject({threshold: 0.5, minVolume: 20, cooldownMs: 2000, maxCooldownMs: 4000});
      expect((await ax(['types', 'set', 'test_downstream', '--breaker-threshold', '1.5'])).code).toBe(2);
      const n = 300;
      const ids = await Promise.all(
        Array.from({length: n}, (_, i) => client.submit({type: 'test_downstream', payload: {i, flag}, maxRetries: 20})),
      );
      await client.flush();
      await eventually(
        async () => (await count("SELECT COUNT(*) AS n FROM task_types WHERE type = 'test_downstream' AND breaker_state = 'open'")) === 1,
        30_000,
        'the breaker to open',
      );
      // While it is open tasks park by the breaker.
      await eventually(
        async () => (await count("SELECT COUNT(*) AS n FROM tasks WHERE parked = 'breaker'")) > 0,
        10_000,
        'tasks parked by the breaker',
      );
      const listed = await ax(['types', 'list', '--json']);
      expect(listed.json.types.find((t: {type: string}) => t.type === 'test_downstream').breaker.state).toMatch(/open|half_open/);
      rmSync(flag); // the downstream recovers
      const inIds = `id IN (${ids.map(() => '?').join(',')})`;
      await eventually(
        async () => (await count(`SELECT COUNT(*) AS n FROM tasks WHERE state = 'succeeded' AND ${inIds}`, ids)) === n,
        60_000,
        'all to succeed',
      );
      expect(await count("SELECT COUNT(*) AS n FROM tasks WHERE state = 'dead'")).toBe(0);
      await eventually(
        async () => (await count("SELECT COUNT(*) AS n FROM task_types WHERE type = 'test_downstream' AND breaker_state = 'closed'")) === 1,
        20_000,
        'closed',
      );
      // No attempt used while parked: each task's attempts are its claims minus the claims given back by a park.
      const claims = await count(`SELECT COUNT(*) AS n FROM ${ATTEMPT_STARTS} s`);
      const given = await count("SELECT COUNT(*) AS n FROM task_history WHERE from_state = 'running' AND to_state = 'submitted'");
      expect(await count(`SELECT SUM(attempt) AS n FROM tasks WHERE ${inIds}`, ids)).toBe(claims - given);
      expect(await count("SELECT COUNT(*) AS n FROM task_history WHERE error LIKE 'parked: breaker%'")).toBeGreaterThan(0);
      // Every transition is a row of the type's history, and one worker logged each.
      const shown = await ax(['types', 'show', 'test_downstream', '--json']);
      const events = shown.json.history.map((h: {event: string}) => h.event);
      expect(events).toEqual(expect.arrayContaining(['breaker:opened', 'breaker:half-open', 'breaker:closed', 'settings']));
      const opened = workers.flatMap((w) => logLines(w.stderr()).filter((l) => l.msg === 'breaker opened: test_downstream'));
      expect(opened.length).toBe(events.filter((e: string) => e === 'breaker:opened').length);
      // A reset of a closed breaker changes nothing: exit 4.
      expect((await ax(['types', 'breaker', 'test_downstream', '--reset'])).code).toBe(4);
    },
  );
});
