/**
 * The quick start on a fresh database (issue 20, defect 3): `node scripts/demo.js` (what `npm run
 * demo` runs after setup, build and migrate) submits its tasks, runs them through a real worker and
 * scheduler and finishes with "demo OK" — without tripping its own breaker (its flaky type fails
 * on purpose more often than the default threshold allows) and without JSON log lines on screen.
 */
import {spawn} from 'node:child_process';
import {afterAll, describe, expect, it} from 'vitest';
import {createTestEnv, type TestEnv} from '../helpers/env.js';
import {ROOT} from '../helpers/spawn.js';

describe('the demo on a fresh database', () => {
  let env: TestEnv | undefined;
  afterAll(async () => env?.dispose());

  it('finishes with demo OK, no breaker opened, says in words what it waits for, and starts the console', {timeout: 120_000}, async () => {
    env = await createTestEnv();
    const vars: Record<string, string> = {...env.env};
    delete vars.AX_LOG_LEVEL; // the demo's own default
    const child = spawn(process.execPath, ['scripts/demo.js'], {
      cwd: ROOT,
      env: {...process.env, ...vars, NODE_ENV: 'production'},
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    // The console it starts answers while the demo runs.
    let consoleAnswer: Promise<number> | undefined;
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /the console: (http:\/\/127\.0\.0\.1:\d+)\//.exec(out);
      if (m && !consoleAnswer) consoleAnswer = fetch(`${m[1]}/api/v1/session`).then((r) => r.status);
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    expect({code, err}).toEqual({code: 0, err: ''});
    expect(out).toMatch(/demo OK/);
    expect(await consoleAnswer).toBe(200);
    expect(out).toMatch(/breaker opens above 90 % failures for the demo/);
    // The retries and delayed tasks it waits for, in words.
    expect(out).toMatch(/waiting: \d+ (retry|retries|delayed tasks?) of \w+ due in [\d.]+ s/);
    expect(out).not.toMatch(/"level":/);
    const opened = await env.sql<{n: number}>("SELECT COUNT(*) AS n FROM task_type_history WHERE event = 'breaker:opened'");
    expect(Number(opened[0]!.n)).toBe(0);
  });
});
