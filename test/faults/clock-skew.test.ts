/**
 * Clock skew (issue 24): two workers and two schedulers whose wall clocks are 30 s ahead of and
 * 30 s behind the database's (libfaketime: test/helpers/faketime.ts), under a load of immediate,
 * delayed and absolute-time tasks, retries with backoff, tasks several leases long and a cron
 * schedule every minute; some tasks are submitted, and the schedule created, from skewed hosts
 * too; midway the worker ahead is killed -9 while it holds a long task, and started again.
 *
 * ax decides every time on the database's clock (NOW(3)); the test checks it from the real one
 * (this process's and MariaDB's, on one machine; a skewed worker's own stamps would fool it):
 * - no attempt started before its task was due, by the database's started_at and by the handler's
 *   own start stamped on the machine's monotonic clock, which libfaketime leaves alone; every retry
 *   waited its backoff; each worker's handlers did see their shifted clock (the fault was on);
 * - a skewed producer's delay counts from the database's clock;
 * - no lease stolen early (the only attempts rescued are the killed worker's, each after its
 *   lease_until) nor held late (rescued within AX_RESCUE_EVERY and a margin of it; no lease ever
 *   set further ahead than AX_LEASE);
 * - every cron slot fired exactly once, never before its time, none missed;
 * - a breaker opened by a skewed worker (a downstream down for a while) waited its cool-down on
 *   the database's clock, no shorter and no longer;
 * - the witness checks (test/helpers/witness.ts), and `ax doctor` names both skewed workers.
 *
 * Short form about a minute (one cron slot: the schedule has minute resolution); AX_FAULTS_FULL=1:
 * 5 minutes of load and at least 4 slots.
 */
import {existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {setTimeout as sleep} from 'node:timers/promises';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {TaskSpec} from '../../src/core/task/model.js';
import {eventually, type TestEnv} from '../helpers/env.js';
import {monotonicToEpoch, skewedClock} from '../helpers/faketime.js';
import {createProcessTestEnv, type ProcessTestEnv} from '../helpers/processes.js';
import {ROOT, runCli, type Spawned} from '../helpers/spawn.js';
import {ATTEMPT_STARTS} from '../helpers/history.js';
import {cleanWitnesses, readWitnesses} from '../helpers/witness.js';
import {len} from './scale.js';

const SKEW_MS = 30_000;
const LEASE_MS = 2000;
const RESCUE_EVERY_MS = 500;
const RETRY_BASE_MS = 1000;
/** How long tasks are submitted. */
const LOAD_MS = len(25_000, 300_000);
/** Cron slots the run must span (the schedule fires every minute). */
const MIN_SLOTS = len(1, 4);
const SCHEDULE = 'skew-minutely';
/** The breaker cool-down of the type whose downstream goes down (doubling once, capped). */
const BREAKER_COOLDOWN_MS = 2000;
/** How late after its probe time a breaker may half-open: the workers' flow refresh (1 s) and a margin. */
const BREAKER_SLACK_MS = 3000;
const MINUTE = 60_000;
/**
 * A retry's start is compared with its failure's history row, written by the statement after the
 * one that set run_at = NOW(3) + backoff in the same transaction: a few ms later at most.
 */
const STATEMENT_SPREAD_MS = 5;
/** How late after its lease_until a dead worker's attempt may be rescued: the rescuer's period and a margin (2 loaded cores). */
const RESCUE_SLACK_MS = RESCUE_EVERY_MS + 2500;

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

interface Exec {
  id: string;
  attempt: number;
  pid: number;
  /** Real start (epoch ms), from the machine's monotonic clock. */
  real: number;
  /** The worker's own wall clock at the start. */
  wall: number;
}

describe('clock skew: workers and schedulers 30 s ahead and 30 s behind the database', () => {
  let fx: ProcessTestEnv;
  let env: TestEnv;
  let dir: string;
  let execLog: string;
  /** The lease sampler runs while this is true (cleared by afterAll too, before the pool closes). */
  let sampling = false;

  beforeAll(async () => {
    fx = await createProcessTestEnv();
    env = fx.env;
    dir = mkdtempSync(join(tmpdir(), 'ax-skew-'));
    execLog = join(dir, 'exec.log');
  });
  afterAll(async () => {
    sampling = false;
    await sleep(300);
    await fx?.dispose();
  });

  const vars = (offsetMs: number): Record<string, string> => ({
    ...env.env,
    ...skewedClock(offsetMs),
    AX_LEASE: `${LEASE_MS}ms`,
    AX_RESCUE_EVERY: `${RESCUE_EVERY_MS}ms`,
    AX_RETRY_BASE: `${RETRY_BASE_MS}ms`,
    AX_HEARTBEAT: '1s',
    AX_TEST_EXEC_LOG: execLog,
  });
  const worker = (offsetMs: number): Spawned =>
    fx.spawn(['worker', '--handlers', 'test/fixtures/skew-handlers.js', '--pools', 'io'], vars(offsetMs));
  const scheduler = (offsetMs: number): Spawned => fx.spawn(['scheduler'], vars(offsetMs));
  const cli = (offsetMs: number, args: string[], stdin?: string) =>
    runCli(args, {env: vars(offsetMs), cwd: ROOT, ...(stdin === undefined ? {} : {stdin})});
  const dbNow = async (): Promise<number> => (await env.sql<{now: Date}>('SELECT NOW(3) AS now'))[0]!.now.getTime();
  const execs = (): Exec[] =>
    (existsSync(execLog) ? readFileSync(execLog, 'utf8') : '')
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [id, attempt, pid, mono, wall] = l.split(' ');
        return {id: id!, attempt: Number(attempt), pid: Number(pid), real: monotonicToEpoch(BigInt(mono!)), wall: Number(wall)};
      });
  const workerIdOf = async (p: Spawned): Promise<string> =>
    eventually(
      async () => (await env.sql<{id: string}>('SELECT id FROM workers WHERE pid = ? AND stopped_at IS NULL', [p.child.pid]))[0]?.id,
      20_000,
      `worker pid ${p.child.pid} to register`,
    );

  /** Whether the worker `p` (registered as `id`) is running a long task now (its handler started, its row still running). */
  const runningLong = async (p: Spawned, id: string): Promise<boolean> => {
    // The latest starts of that process: a long task running now started within its last few seconds.
    const longs = execs()
      .filter((e) => e.pid === p.child.pid)
      .slice(-200);
    if (longs.length === 0) return false;
    const r = await env.sql<{n: number}>(
      `SELECT COUNT(*) AS n FROM tasks WHERE state = 'running' AND type = 'skew_long' AND worker = ? AND id IN (${longs.map(() => '?').join(',')})`,
      [id, ...longs.map((e) => e.id)],
    );
    return Number(r[0]!.n) > 0;
  };

  it('no task runs before due, no lease is stolen early or held late, every cron slot fires once', async () => {
    const t0 = Date.now();
    // The premise of every check below: this process's clock is the database's (one machine).
    expect(Math.abs((await dbNow()) - Date.now())).toBeLessThan(100);

    const ahead = worker(SKEW_MS);
    const behind = worker(-SKEW_MS);
    const schedulers = [scheduler(SKEW_MS), scheduler(-SKEW_MS)];
    const aheadId = await workerIdOf(ahead);
    const behindId = await workerIdOf(behind);

    // The schedule, created from a host 30 s behind (its fire times are the database's).
    const added = await cli(-SKEW_MS, ['cron', 'add', SCHEDULE, '--cron', '* * * * *', '--tz', 'UTC', '--type', 'skew_cron', '--json']);
    expect(added.code, added.stderr).toBe(0);
    const createdAt = (
      await env.sql<{at: Date}>('SELECT created_at AS at FROM cron_schedules WHERE name = ?', [SCHEDULE])
    )[0]!.at.getTime();
    const firstSlot = Math.floor(createdAt / MINUTE) * MINUTE + MINUTE;
    const lastSlot = firstSlot + (MIN_SLOTS - 1) * MINUTE;

    // Breakers: off for the flaky type (it fails two attempts in three by design); quick ones for the
    // type whose downstream goes down. Set from a host 30 s ahead.
    for (const args of [
      ['types', 'set', 'skew_flaky', '--breaker-off'],
      [
        'types',
        'set',
        'skew_down',
        '--breaker-min-volume',
        '5',
        '--breaker-window',
        '10s',
        '--breaker-cooldown',
        `${BREAKER_COOLDOWN_MS}ms`,
      ],
      ['types', 'set', 'skew_down', '--breaker-max-cooldown', `${2 * BREAKER_COOLDOWN_MS}ms`],
    ]) {
      const r = await cli(SKEW_MS, [...args, '--json']);
      expect(r.code, r.stderr).toBe(0);
    }
    const downFlag = join(dir, 'down.flag');
    writeFileSync(downFlag, '');

    const ids: string[] = [];
    const dueAt = new Map<string, number>();
    const type = new Map<string, string>();

    // Producers on skewed hosts: `ax submit --delay 5s` is 5 s of the database's clock from the write.
    const cliSubmits: Array<{ids: string[]; before: number; after: number}> = [];
    for (const offset of [SKEW_MS, -SKEW_MS]) {
      const before = Date.now();
      const r = await cli(offset, ['submit', 'skew_noop', '--stdin', '--delay', '5s'], '{"i": 1}\n{"i": 2}\n{"i": 3}\n');
      const after = Date.now();
      expect(r.code, r.stderr).toBe(0);
      const got = r.stdout.trim().split('\n');
      expect(got).toHaveLength(3);
      cliSubmits.push({ids: got, before, after});
    }
    const cliRows = await env.sql<{id: string; run_at: Date}>(
      `SELECT id, run_at FROM tasks WHERE id IN (${cliSubmits.flatMap((c) => c.ids.map(() => '?')).join(',')})`,
      cliSubmits.flatMap((c) => c.ids),
    );
    for (const c of cliSubmits)
      for (const id of c.ids) {
        const runAt = cliRows.find((r) => r.id === id)!.run_at.getTime();
        expect(runAt).toBeGreaterThanOrEqual(c.before + 5000);
        expect(runAt).toBeLessThanOrEqual(c.after + 5000);
        ids.push(id);
        dueAt.set(id, runAt);
        type.set(id, 'skew_noop');
      }

    // The lease of every running task, sampled: never further ahead of NOW(3) than AX_LEASE.
    sampling = true;
    let leaseAheadMaxMs = 0;
    const sampler = (async () => {
      while (sampling) {
        const [r] = await env.sql<{ahead: number | null}>(
          "SELECT TIMESTAMPDIFF(MICROSECOND, NOW(3), MAX(lease_until)) AS ahead FROM tasks WHERE state = 'running'",
        );
        if (r?.ahead !== null && r?.ahead !== undefined) leaseAheadMaxMs = Math.max(leaseAheadMaxMs, Number(r.ahead) / 1000);
        await sleep(250);
      }
    })();

    const submit = async (spec: TaskSpec, due: number): Promise<void> => {
      const id = await fx.client.submit(spec);
      ids.push(id);
      dueAt.set(id, due);
      type.set(id, spec.type);
    };
    let killed: {id: string; leases: Map<string, number>} | null = null;
    let restarted: Spawned | null = null;
    const loadEnd = Date.now() + LOAD_MS;
    for (let i = 0; Date.now() < loadEnd; i++) {
      const now = Date.now();
      // The downstream is down for the first 40 % of the load.
      if (existsSync(downFlag) && now > loadEnd - 0.6 * LOAD_MS) rmSync(downFlag);
      await submit({type: 'skew_down', payload: {i, flag: downFlag}, maxRetries: 0}, now);
      await submit({type: 'skew_noop', payload: {i}}, now);
      await submit({type: 'skew_noop', payload: {i}, delay: 1000 + (i % 5) * 1000}, now + 1000 + (i % 5) * 1000);
      if (i % 2 === 0) await submit({type: 'skew_flaky', payload: {i, succeedOn: 3}, maxRetries: 5}, now);
      if (i % 3 === 0) {
        const at = now + 2000 + (i % 4) * 1000;
        await submit({type: 'skew_noop', payload: {i, at: true}, runAt: new Date(at)}, at);
      }
      if (i % 4 === 0) await submit({type: 'skew_long', payload: {i, ms: 2.5 * LEASE_MS}}, now);
      await fx.client.flush();
      // Past midway: kill -9 the worker ahead once it runs a long task; a new one (still ahead) takes over.
      if (!killed && Date.now() > loadEnd - LOAD_MS / 2 && (await runningLong(ahead, aheadId))) {
        ahead.child.kill('SIGKILL');
        await ahead.exited;
        const held = await env.sql<{id: string; lease_until: Date}>(
          "SELECT id, lease_until FROM tasks WHERE state = 'running' AND worker = ?",
          [aheadId],
        );
        expect(held.length).toBeGreaterThan(0);
        killed = {id: aheadId, leases: new Map(held.map((r) => [r.id, r.lease_until.getTime()]))};
        restarted = worker(SKEW_MS);
      }
      await sleep(500);
    }
    expect(killed, 'the worker ahead ran no long task in the second half of the load').not.toBeNull();
    const restartedId = await workerIdOf(restarted!);

    // Drained: every task finished, and every slot of the span fired and ran.
    const terminal = async (): Promise<boolean> => {
      const [r] = await env.sql<{n: number}>(
        `SELECT COUNT(*) AS n FROM tasks WHERE state IN ('succeeded', 'dead', 'cancelled') AND id IN (${ids.map(() => '?').join(',')})`,
        ids,
      );
      return Number(r!.n) === ids.length;
    };
    await eventually(terminal, len(60_000, 180_000), 'every task to finish').catch(async (e: unknown) => {
      const left = await env.sql(
        `SELECT id, type, state, attempt, run_at, published_at, worker, parked, last_error, NOW(3) AS now FROM tasks
          WHERE state NOT IN ('succeeded', 'dead', 'cancelled') AND id IN (${ids.map(() => '?').join(',')}) LIMIT 10`,
        ids,
      );
      throw new Error(`${String(e)}; left: ${JSON.stringify(left)}`);
    });
    const slotRan = async (): Promise<boolean> => {
      const [r] = await env.sql<{n: number}>(
        "SELECT COUNT(*) AS n FROM tasks WHERE schedule_name = ? AND state = 'succeeded' AND run_at = ?",
        [SCHEDULE, new Date(lastSlot)],
      );
      return Number(r!.n) === 1;
    };
    await eventually(slotRan, lastSlot - Date.now() + 30_000, `the cron slot of ${new Date(lastSlot).toISOString()} to run`);

    // `ax doctor` (on this host, whose clock is right) names both skewed workers.
    const doc = await runCli(['doctor', '--json'], {env: env.env, cwd: ROOT});
    const findings = (doc.json?.findings ?? []) as Array<{id: string; status: string; evidence: string[]}>;
    expect(findings.find((f) => f.id === 'timing.clock')?.status, doc.stderr).toBe('ok');
    const clocks = findings.find((f) => f.id === 'timing.workers');
    expect(clocks?.status).toBe('problem');
    expect(clocks?.evidence).toEqual(
      expect.arrayContaining([
        expect.stringMatching(new RegExp(`^${escape(restartedId)} on .*: 30(\\.\\d)?s ahead of the database's`)),
        expect.stringMatching(new RegExp(`^${escape(behindId)} on .*: 30(\\.\\d)?s behind the database's`)),
      ]),
    );
    sampling = false;
    await sampler;

    // The cron occurrences: one per slot, each run once, none missed.
    const occurrences = await env.sql<{id: string; run_at: Date; state: string}>(
      'SELECT id, run_at, state FROM tasks WHERE schedule_name = ? AND run_at <= ? ORDER BY run_at',
      [SCHEDULE, new Date(lastSlot)],
    );
    const slots = Array.from({length: MIN_SLOTS}, (_, k) => firstSlot + k * MINUTE);
    expect(occurrences.map((o) => [o.run_at.getTime(), o.state])).toEqual(slots.map((s) => [s, 'succeeded']));
    for (const o of occurrences) {
      ids.push(o.id);
      dueAt.set(o.id, o.run_at.getTime());
      type.set(o.id, 'skew_cron');
    }

    // The witness checks; "no run before due" by the database's started_at.
    expect(await readWitnesses(env, ids, dueAt)).toEqual(cleanWitnesses(ids.length));

    // And by the handlers' real start; each retry after its backoff (by both clocks).
    const runs = execs();
    const failures = await env.sql<{id: string; attempt: number; at: Date; error: string}>(
      `SELECT task_id AS id, attempt, at, error FROM task_history WHERE from_state = 'running' AND to_state = 'failed'
        AND error NOT LIKE 'released:%' AND task_id IN (${ids.map(() => '?').join(',')})`,
      ids,
    );
    const failedAt = new Map(failures.map((f) => [`${f.id} ${f.attempt}`, f]));
    const earliest = (id: string, attempt: number): number => {
      if (attempt === 1) return dueAt.get(id)!;
      const f = failedAt.get(`${id} ${attempt - 1}`);
      if (!f) throw new Error(`no failure row before attempt ${attempt} of ${id}`);
      const backoff = f.error.startsWith('lease expired') ? 0 : RETRY_BASE_MS * 2 ** (attempt - 2);
      return f.at.getTime() + backoff - STATEMENT_SPREAD_MS;
    };
    const early = runs.filter((r) => r.real < earliest(r.id, r.attempt));
    expect(early).toEqual([]);
    const starts = await env.sql<{id: string; attempt: number; at: Date}>(
      `SELECT s.task_id AS id, s.attempt, s.at FROM ${ATTEMPT_STARTS} s WHERE s.task_id IN (${ids.map(() => '?').join(',')})`,
      ids,
    );
    expect(starts.filter((s) => s.at.getTime() < earliest(s.id, Number(s.attempt)))).toEqual([]);
    // Every cron occurrence ran once, and the flaky tasks needed their three attempts.
    for (const o of occurrences) expect(runs.filter((r) => r.id === o.id).map((r) => r.attempt)).toEqual([1]);
    const flaky = ids.filter((id) => type.get(id) === 'skew_flaky');
    const flakyRows = await env.sql<{id: string; state: string; attempt: number}>(
      `SELECT id, state, attempt FROM tasks WHERE id IN (${flaky.map(() => '?').join(',')})`,
      flaky,
    );
    expect(flakyRows.filter((r) => r.state !== 'succeeded' || Number(r.attempt) < 3)).toEqual([]);

    // The fault was on: each worker's handlers saw its own clock 30 s off the real one.
    const skewOf = (pid: number | undefined): number[] => runs.filter((r) => r.pid === pid).map((r) => r.wall - r.real);
    for (const [p, want] of [
      [ahead, SKEW_MS],
      [restarted!, SKEW_MS],
      [behind, -SKEW_MS],
    ] as const) {
      const seen = skewOf(p.child.pid);
      expect(seen.length).toBeGreaterThan(0);
      for (const s of seen) expect(Math.abs(s - want)).toBeLessThan(1000);
    }

    // Leases: only the killed worker's attempts were rescued, each once, after its lease ran out and
    // within the rescuer's period of it; no lease was ever set further ahead than AX_LEASE.
    const rescues = await env.sql<{id: string; attempt: number; worker: string; at: Date}>(
      "SELECT task_id AS id, attempt, worker, at FROM task_history WHERE error LIKE 'lease expired%'",
    );
    expect(rescues.map((r) => r.worker)).toEqual(rescues.map(() => killed!.id));
    expect(rescues.map((r) => r.id).sort()).toEqual([...killed!.leases.keys()].sort());
    for (const r of rescues) {
      const until = killed!.leases.get(r.id)!;
      expect(r.at.getTime()).toBeGreaterThanOrEqual(until);
      expect(r.at.getTime() - until).toBeLessThanOrEqual(RESCUE_SLACK_MS);
    }
    expect(leaseAheadMaxMs).toBeLessThanOrEqual(LEASE_MS + 1);

    // The breaker of the type whose downstream was down: each opening waited its cool-down (2 s,
    // then 4 s in a row) on the database's clock before half-opening, and it closed in the end.
    const moves = await env.sql<{at: Date; event: string; detail: string}>(
      "SELECT at, event, detail FROM task_type_history WHERE type = 'skew_down' AND event LIKE 'breaker:%' ORDER BY seq",
    );
    const openings = moves.flatMap((m, k) => (m.event === 'breaker:opened' ? [{opened: m, next: moves[k + 1]}] : []));
    expect(openings.length).toBeGreaterThan(0);
    for (const {opened, next} of openings) {
      const probeAt = Date.parse(/next probe at (\S+)$/.exec(opened.detail)?.[1] ?? 'x');
      const cooldown = probeAt - opened.at.getTime();
      expect(cooldown, opened.detail).toBeGreaterThanOrEqual(BREAKER_COOLDOWN_MS - 1000);
      expect(cooldown, opened.detail).toBeLessThanOrEqual(2 * BREAKER_COOLDOWN_MS + 1000);
      expect(next?.event).toBe('breaker:half-open');
      expect(next!.at.getTime()).toBeGreaterThanOrEqual(probeAt);
      expect(next!.at.getTime() - probeAt).toBeLessThanOrEqual(BREAKER_SLACK_MS);
    }
    expect(moves.at(-1)?.event).toBe('breaker:closed');

    // Nothing crashed on its skewed clock.
    for (const p of [behind, restarted!, ...schedulers]) expect(p.child.exitCode, p.stderr().slice(-2000)).toBeNull();

    const perSlot = occurrences.map((o) => runs.filter((r) => r.id === o.id).length);
    console.log(
      `[clock-skew] ${ids.length} tasks (${flaky.length} flaky, ${ids.filter((id) => type.get(id) === 'skew_long').length} long), ` +
        `breaker of skew_down opened ${openings.length} times (cool-downs ${openings.map(({opened}) => Date.parse(/next probe at (\S+)$/.exec(opened.detail)![1]!) - opened.at.getTime()).join('/')} ms), ` +
        `${runs.length} attempts run (${runs.filter((r) => r.pid === behind.child.pid).length} on the worker behind), early starts 0, ` +
        `rescues ${rescues.length} (all of the killed worker, ${rescues.map((r) => r.at.getTime() - killed!.leases.get(r.id)!).join('/')} ms after lease_until), ` +
        `lease ahead at most ${leaseAheadMaxMs} ms, cron runs per slot [${perSlot.join(', ')}], ${Math.round((Date.now() - t0) / 1000)} s`,
    );
    for (const p of [behind, restarted!, ...schedulers]) p.child.kill('SIGTERM');
    for (const p of [behind, restarted!, ...schedulers]) await p.exited;
  });
});
