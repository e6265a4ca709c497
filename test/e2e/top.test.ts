/**
 * `ax workers` and `ax top` against the real services while a spawned worker runs tasks: the
 * registry's live → stale on kill -9, the rates in `top --once --json`, the refusals off a
 * terminal, and the TUI itself under a real terminal (tmux), driven with send-keys and read with
 * capture-pane. Needs `npx tsc -p tsconfig.build.json` first (it runs bin/run.js) and tmux.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {eventually, type TestEnv} from '../helpers/env.js';
import {createProcessTestEnv, type ProcessTestEnv} from '../helpers/processes.js';
import {ROOT, runCli, type Spawned} from '../helpers/spawn.js';
import {tmux} from '../helpers/tmux.js';
import {createTopSource} from '../../src/cli/top.js';

const HEARTBEAT = '300ms';

describe('ax workers and ax top', () => {
  let fx: ProcessTestEnv;
  let env: TestEnv;
  let worker: Spawned;
  const cli = (args: string[], vars: Record<string, string> = {}) =>
    runCli(args, {env: {...env.env, AX_HEARTBEAT: HEARTBEAT, ...vars}, cwd: ROOT});

  beforeAll(async () => {
    fx = await createProcessTestEnv();
    env = fx.env;
    worker = fx.spawn(['worker', '--handlers', 'test/fixtures/handlers.js', '--pools', 'io', '--io-concurrency', '10'], {
      ...env.env,
      AX_HEARTBEAT: HEARTBEAT,
    });
    // Five dead tasks, then a steady load: 10 at a time × 200 ms ≈ 50 tasks/s for about 40 s.
    // The dead ones first and waited for: behind 2000 claimed sleeps they could sit in the pool's
    // local queue for longer than a test's deadline.
    for (let i = 0; i < 5; i++) await fx.client.submit({type: 'test_fail', payload: {}, maxRetries: 0});
    await fx.client.flush();
    await eventually(
      async () => {
        const [r] = await env.sql<{n: number}>("SELECT COUNT(*) AS n FROM tasks WHERE type = 'test_fail' AND state = 'dead'");
        return Number(r?.n) === 5 ? true : null;
      },
      30_000,
      'the five test_fail tasks to be dead',
    );
    for (let i = 0; i < 2000; i++) await fx.client.submit({type: 'test_sleep', payload: {ms: 200}});
    await fx.client.flush();
  });
  afterAll(async () => {
    await fx?.dispose();
  });

  it('ax workers --json: the running worker is live with its pools, in-flight and a rate', async () => {
    const w = await eventually(
      async () => {
        const r = await cli(['workers', '--json']);
        const live = r.json?.workers?.find(
          (x: {status: string; rate: number | null; types?: Record<string, {succeeded?: number}>}) =>
            x.status === 'live' && (x.rate ?? 0) > 0 && (x.types?.test_sleep?.succeeded ?? 0) > 0,
        );
        return live ? {json: r.json, live} : null;
      },
      20_000,
      'a live worker with a rate',
    );
    expect(w.json.counts).toMatchObject({live: 1, stale: 0});
    expect(w.live).toMatchObject({pid: worker.child.pid, pools: {io: 10}});
    expect(w.live.inFlight).toBeGreaterThan(0);
    // Its resident memory, from the heartbeat (a Node process is tens of MiB at least).
    expect(w.live.rssBytes).toBeGreaterThan(10 * 1024 * 1024);
    expect(w.live.types.test_sleep.succeeded).toBeGreaterThan(0);
    const text = await cli(['workers']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`:${worker.child.pid}\\s+LIVE\\s+io:10\\s+\\d+\\s+\\S+\\s+\\d+M\\s`));
  });

  it('ax top --once --sort dead: the type with the most dead tasks first; PARKED from the registry', async () => {
    const r = await cli(['top', '--once', '--json', '--sort', 'dead']);
    expect(r.code).toBe(0);
    expect(r.json.types[0]).toMatchObject({type: 'test_fail', dead: 5, parked: 0});
    const text = await cli(['top', '--once', '--sort', 'dead:asc']);
    expect(text.stdout).toMatch(/↑DEAD/);
  });

  it('ax top --once --json: backlog, consume rate, per-type rate, p95 and dead counts', async () => {
    const s = await eventually(
      async () => {
        const r = await cli(['top', '--once', '--json']);
        const sleep = r.json?.types?.find((t: {type: string}) => t.type === 'test_sleep');
        return r.code === 0 &&
          sleep?.rate > 0 &&
          r.json.types.some((t: {type: string; dead: number}) => t.type === 'test_fail' && t.dead === 5)
          ? r.json
          : null;
      },
      20_000,
      'a snapshot with rates and the dead tasks',
    );
    expect(s.workers.live).toBe(1);
    expect(s.consumeRate).toBeGreaterThan(0);
    expect(s.backlog.total).toBeGreaterThan(0);
    expect(s.submitRate).not.toBeNull();
    const sleep = s.types.find((t: {type: string}) => t.type === 'test_sleep');
    // 200 ms handlers: the p95 lies above the (100, 250] ms bucket's lower bound, queueing in the pool included.
    expect(sleep.p95Ms).toBeGreaterThan(100);
    expect(sleep.failurePct).toBe(0);
    // From the type registry: the breaker closed, not paused.
    expect(sleep).toMatchObject({breaker: 'closed', paused: false});
    expect(s.flowControl).toBe(true);
  });

  it('refuses what it cannot do: no terminal without --once, a bad or unknown --type, a bad --interval', async () => {
    const tty = await cli(['top']);
    expect(tty.code).toBe(2);
    expect(tty.stderr).toContain('use ax top --once');
    const bad = await cli(['top', '--once', '--type', 'Nope']);
    expect(bad.code).toBe(2);
    const unknown = await cli(['top', '--once', '--type', 'nothing_here']);
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toContain('nothing_here');
    const interval = await cli(['top', '--interval', '5ms', '--once']);
    expect(interval.code).toBe(2);
    // An unknown sort column names the valid ones; checked before anything starts (even off a terminal).
    for (const args of [
      ['top', '--sort', 'size', '--once'],
      ['top', '--sort', 'size'],
    ]) {
      const sort = await cli(args);
      expect(sort.code).toBe(2);
      // (oclif wraps the message at the terminal's width and indents it with "›")
      expect(sort.stderr.replace(/\s*\n\s*›?\s*/g, ' ')).toContain(
        'sort "size" is not a column: use one of type, due, delay, parked, run, rate, fail, p95, brk, pause, dead',
      );
    }
    const down = await cli(['top', '--once', '--json'], {AX_MYSQL_URL: 'mysql://root@127.0.0.1:1/ax'});
    expect(down.code).toBe(5);
    const since = await cli(['workers', '--since', 'yesterday']);
    expect(since.code).toBe(2);
  });

  it('the TUI in a real terminal: header, table, ↓ selects, p y pauses and p y resumes, ? shows help, q quits', async () => {
    // CI=true as .ci/run sets it: ax top must still draw live on a terminal (Ink would not).
    const vars = Object.entries({...env.env, AX_HEARTBEAT: HEARTBEAT, NODE_ENV: 'production', AX_CONFIG: '', CI: 'true'})
      .map(([k, v]) => `${k}='${v}'`)
      .join(' ');
    const t = tmux(`axtop_${process.pid}`, 100, 30, `cd '${ROOT}' && env ${vars} node bin/run.js top --interval 300ms`);
    try {
      const first = await t.shows(/› test_fail/, 'the table with the first type selected');
      expect(first).toMatch(/ax top · cell default/);
      expect(first).toMatch(/workers 1 live/);
      expect(first).toContain('test_sleep');
      expect(first).toContain('q quit');
      for (const line of first.split('\n')) expect(line.length).toBeLessThanOrEqual(100);
      t.keys('Down');
      await t.shows(/› test_sleep/, 'the second type selected');
      // p asks, y pauses in the registry (the PAUSE column says yes), p y again resumes.
      t.keys('p');
      await t.shows(/pause test_sleep\? .*y\/N/, 'the pause prompt');
      t.keys('y');
      await t.shows(/paused test_sleep/, 'the pause done');
      expect((await cli(['types', 'show', 'test_sleep', '--json'])).json.paused).toMatchObject({reason: 'ax top'});
      await t.shows(/› test_sleep .* yes /, 'the PAUSE column');
      t.keys('p');
      await t.shows(/resume test_sleep\? .*y\/N/, 'the resume prompt');
      t.keys('y');
      await t.shows(/resumed test_sleep: \d+ parked tasks released/, 'the resume done');
      expect((await cli(['types', 'show', 'test_sleep', '--json'])).json.paused).toBeNull();
      t.keys('?');
      await t.shows(/this help/, 'the help');
      t.keys('q');
      await t.ended();
    } finally {
      t.kill();
    }
  });

  it('the TUI leaves no piece of an old frame after a y/N prompt or a resize, acts on every key of a burst, drills down and lists the workers', async () => {
    // AX_LOG_LEVEL=info as an operator's default: a pause logs a line, which must not land on the screen.
    const vars = Object.entries({
      ...env.env,
      AX_LOG_LEVEL: 'info',
      AX_HEARTBEAT: HEARTBEAT,
      NODE_ENV: 'production',
      AX_CONFIG: '',
      CI: 'true',
    })
      .map(([k, v]) => `${k}='${v}'`)
      .join(' ');
    const t = tmux(`axtop_${process.pid}_frames`, 100, 30, `cd '${ROOT}' && env ${vars} node bin/run.js top --interval 300ms`);
    /** One frame on screen: one header, no log line, no answered prompt, nothing wider than the terminal. */
    const clean = (pane: string, width: number): void => {
      expect(pane.match(/ax top · cell default/g)).toHaveLength(1);
      expect(pane).not.toMatch(/"level"|"msg"/);
      expect(pane).not.toContain('y/N');
      for (const line of pane.split('\n')) expect(line.length).toBeLessThanOrEqual(width);
    };
    try {
      await t.shows(/› test_fail/, 'the table');
      t.keys('p');
      await t.shows(/pause test_fail\? .*y\/N/, 'the pause prompt');
      t.keys('y');
      clean(await t.shows(/paused test_fail/, 'the pause done'), 100);
      await t.shows(/› test_fail .* yes /, 'the PAUSE column');
      t.keys('p');
      await t.shows(/resume test_fail\? .*y\/N/, 'the resume prompt');
      t.keys('y');
      clean(await t.shows(/resumed test_fail/, 'the resume done'), 100);
      await t.shows(/› test_fail .* no /, 'the PAUSE column after the resume');
      // Narrower and shorter, then wider again: one frame each time.
      t.resize(70, 20);
      clean(await t.shows(/^q quit .*…\s*$/m, 'the frame at 70 columns'), 70);
      t.resize(120, 30);
      clean(await t.shows(/PAUSE +DEAD/, 'the frame at 120 columns'), 120);
      // p and y in one write: both act (and n answers no).
      t.burst('py');
      clean(await t.shows(/paused test_fail/, 'the pause from a burst'), 120);
      // (p asks to resume only once a refresh shows the type paused)
      await t.shows(/› test_fail .* yes /, 'the PAUSE column after the burst');
      t.burst('pn');
      clean(await t.shows(/resume cancelled: nothing changed/, 'the answer no from a burst'), 120);
      t.burst('py');
      await t.shows(/resumed test_fail/, 'the resume from a burst');
      // Drill-down: Enter lists the newest tasks of test_fail (ids whole), Enter a timeline, Esc and Backspace back.
      t.keys('Enter');
      const list = await t.shows(/› [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12} dead/, 'the tasks of test_fail');
      expect(list).toContain('newest tasks of test_fail');
      const id = /› ([0-9a-f-]{36}) dead/.exec(list)![1]!;
      t.keys('Enter');
      const detail = await t.shows(/history \(UTC\)/, 'the timeline');
      expect(detail).toContain(`${id}  test_fail  DEAD`);
      expect(detail).toMatch(/running → dead/);
      t.keys('Escape');
      await t.shows(/newest tasks of test_fail/, 'back to the tasks');
      t.keys('BSpace');
      await t.shows(/› test_fail/, 'back to the table');
      // The workers, and a sort: s s → by DUE (largest first), marked in the head.
      t.keys('w');
      await t.shows(new RegExp(`:${worker.child.pid} +LIVE`), 'the worker line');
      t.keys('w');
      t.burst('ss');
      await t.shows(/↓DELAY/, 'sorted by DELAY');
      t.keys('q');
      await t.ended();
    } finally {
      t.kill();
    }
  });

  it('the TUI with MySQL unreachable: shows the error, keeps drawing, quits on q', async () => {
    const t = tmux(
      `axtop_${process.pid}_down`,
      80,
      24,
      `cd '${ROOT}' && env CI=true NODE_ENV=production AX_CONFIG= AX_MYSQL_URL=mysql://root@127.0.0.1:1/ax node bin/run.js top --interval 200ms`,
    );
    try {
      const shown = await t.shows(/! MySQL at .* \(retrying\)/, 'the MySQL error');
      expect(shown).toContain('database unreachable');
      // No data is not "ok": the header says the data is stale (none read yet), the alert is "—".
      expect(shown).toContain('STALE: no data');
      expect(shown).not.toContain('alert ok');
      expect(shown).toContain('q quit');
      t.keys('q');
      await t.ended();
    } finally {
      t.kill();
    }
  });

  it("the r and p keys' actions: replay through core/dlq (audited as top replay); p pauses the type in the registry, p again resumes it (audited as types pause/resume, reason ax top)", async () => {
    const source = createTopSource(env.rt);
    try {
      expect(await source.replay('test_fail')).toBe('replayed 5 dead tasks of test_fail');
      const audit = await env.sql<{command: string; task_count: number}>(
        "SELECT command, task_count FROM admin_audit WHERE command = 'top replay'",
      );
      expect(audit).toEqual([{command: 'top replay', task_count: 5}]);
      expect(await source.replay('test_sleep')).toMatch(/^replay of test_sleep failed: no dead task matches/);
      expect(source.canPause).toBe(true);
      expect(await source.pause('test_fail', true)).toMatch(/^paused test_fail/);
      const shown = await cli(['types', 'show', 'test_fail', '--json']);
      expect(shown.json).toMatchObject({paused: {reason: 'ax top'}});
      expect(shown.json.history[0]).toMatchObject({event: 'paused', detail: 'ax top'});
      const once = await cli(['top', '--once', '--json', '--type', 'test_fail']);
      expect(once.json.types[0]).toMatchObject({type: 'test_fail', paused: true, breaker: 'closed'});
      expect(await source.pause('test_fail', false)).toMatch(/^resumed test_fail: \d+ parked tasks released/);
      expect((await cli(['types', 'show', 'test_fail', '--json'])).json.paused).toBeNull();
      const trail = await env.sql<{command: string; reason: string | null}>('SELECT command, reason FROM admin_audit ORDER BY id');
      expect(trail.slice(-2)).toEqual([
        {command: 'types pause', reason: 'ax top'},
        {command: 'types resume', reason: 'ax top'},
      ]);
    } finally {
      await source.close();
    }
  });

  it('a type whose backlog one task key holds: its share and key after the name, in --once --json and the TUI', async () => {
    // No worker handles keys_top: its tasks wait, all of one tenant's but a few.
    for (let i = 0; i < 150; i++) await fx.client.submit({type: 'keys_top', payload: {}, key: i < 140 ? 'tenant:42' : `tenant:${i}`});
    await fx.client.flush();
    const r = await cli(['top', '--once', '--json', '--type', 'keys_top']);
    expect(r.json.types).toMatchObject([{type: 'keys_top', dominantKey: {key: 'tenant:42', share: 140 / 150}}]);
    expect((await cli(['top', '--once', '--type', 'keys_top'])).stdout).toMatch(/keys_top !93% tenant:42 /);
    const vars = Object.entries({...env.env, AX_HEARTBEAT: HEARTBEAT, NODE_ENV: 'production', AX_CONFIG: ''})
      .map(([k, v]) => `${k}='${v}'`)
      .join(' ');
    const t = tmux(`axtopkeys_${process.pid}`, 100, 30, `cd '${ROOT}' && env ${vars} node bin/run.js top --interval 300ms --type keys_top`);
    try {
      await t.shows(/› keys_top !93% tenant:42 /, 'the marked type');
      t.keys('q');
      await t.ended();
    } finally {
      t.kill();
    }
  });

  it('a worker killed with -9 shows as stale after three missed heartbeats', async () => {
    worker.child.kill('SIGKILL');
    await worker.exited;
    const r = await eventually(
      async () => {
        const x = await cli(['workers', '--json']);
        return x.json?.counts?.stale === 1 ? x.json : null;
      },
      15_000,
      'the worker to be stale',
    );
    expect(r.counts.live).toBe(0);
    expect(r.workers[0]).toMatchObject({pid: worker.child.pid, status: 'stale', rate: null, inFlight: 0});
    const text = await cli(['workers']);
    expect(text.stdout).toMatch(/STALE/);
    const top = await cli(['top', '--once', '--json']);
    expect(top.json.workers).toMatchObject({live: 0, stale: 1});
  });
});
