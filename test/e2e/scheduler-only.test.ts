/**
 * `ax scheduler --only`: the scheduler's parts run alone (needs `node scripts/build.mjs` first).
 * An unknown part is refused before anything connects; a maintenance-only process and a
 * dispatcher-only process each become ready, say what they run, and stop cleanly on SIGTERM.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {createTestEnv, eventually, type TestEnv} from '../helpers/env.js';
import {spawnAx, type Spawned} from '../helpers/spawn.js';

const get = async (url: string): Promise<{status: number; body: Record<string, unknown>}> => {
  const r = await fetch(url);
  return {status: r.status, body: (await r.json()) as Record<string, unknown>};
};

describe('ax scheduler --only', () => {
  let env: TestEnv;
  const procs: Spawned[] = [];

  beforeAll(async () => {
    env = await createTestEnv();
  });
  afterAll(async () => {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await env?.dispose();
  });

  it('an unknown part exits 2 naming it and the parts, before connecting (the server given is unreachable)', async () => {
    const p = spawnAx(['scheduler', '--only', 'rescuer,archive'], {...env.env, AX_MYSQL_URL: 'mysql://root@127.0.0.1:1/ax_nowhere'});
    procs.push(p);
    const exit = await p.exited;
    const err = p.stderr().replace(/\s*\n\s*›\s*/g, ' ');
    expect(exit.code, err).toBe(2);
    expect(err).toContain(
      '--only: unknown part "archive"; the parts are dispatcher, rescuer, reconciler, dlq-scan, archiver, cell-metrics',
    );
    expect(err).not.toMatch(/cannot connect|unavailable/);
  });

  it('the cell gauges alone without an endpoint exit 2', async () => {
    const p = spawnAx(['scheduler', '--only', 'cell-metrics'], env.env);
    procs.push(p);
    const exit = await p.exited;
    const err = p.stderr().replace(/\s*\n\s*›\s*/g, ' ');
    expect(exit.code, err).toBe(2);
    expect(err).toContain('--only cell-metrics serves the cell gauges on /metrics: give --health-port (or AX_METRICS_PORT)');
  });

  for (const [only, holds] of [
    ['rescuer,reconciler,dlq-scan,archiver', false],
    ['dispatcher', true],
  ] as const) {
    it(`--only ${only}: ready, says what it runs, stops on SIGTERM (exit 0)`, async () => {
      const p = spawnAx(['scheduler', '--only', only, '--health-port', '0', '--summary-every', '0'], env.env);
      procs.push(p);
      const url = await eventually(
        async () => /health on (http:\/\/127\.0\.0\.1:\d+)/.exec(p.stderr())?.[1],
        30_000,
        'the scheduler to run',
      );
      expect(p.stderr()).toContain(`running (${only.split(',').join(', ')}); health on ${url}`);
      const ready = await eventually(async () => {
        const r = await get(`${url}/readyz`);
        return r.status === 200 ? r : undefined;
      });
      expect(ready.body).toMatchObject({ok: true, id: expect.stringMatching(/^scheduler:/), rescued: 0});
      // The dispatcher's wheel is reported only where a dispatcher runs.
      expect('held' in ready.body).toBe(holds);
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(metrics).toContain('ax_leases_expired_total');
      // The cell gauges are a part of their own, not run here.
      expect(metrics).not.toContain('ax_backlog_tasks');
      p.child.kill('SIGTERM');
      expect(await p.exited, p.stderr()).toEqual({code: 0, signal: null});
    });
  }
});
