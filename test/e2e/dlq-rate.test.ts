/**
 * The replay test at size, on the real MariaDB and RabbitMQ: 10,000 dead tasks replayed
 * by the built CLI (`ax dlq replay --rate 2000`) while a real worker (in this process, the test
 * handlers) runs them. Each runs exactly once more (history and the handler's own count), and the
 * replay takes at least 10,000 / 2,000 = 5 s: a lower bound the rate limiter must hold (no upper
 * bound on time is asserted: the machine is shared).
 */
import {mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import type {AxStore} from '../../src/core/store/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import type {Worker} from '../../src/core/worker/worker.js';
import {createTestEnv, createTestWorker, eventually, type TestEnv} from '../helpers/env.js';
import {runCli} from '../helpers/spawn.js';

const N = 10_000;
const RATE = 2000;
const TYPE = 'test_noop';
const CHUNK = 1000;

let env: TestEnv;
let store: AxStore;
let worker: Worker;
let cwd: string;
const newId = createIdGenerator(Date.now);
const executions = (): number => (globalThis as {__axExecutions?: number}).__axExecutions ?? 0;

/** N dead tasks of TYPE in N / CHUNK rounds of three batched store calls (insert, claim, dead-letter). */
async function deadTasks(): Promise<string[]> {
  const ids: string[] = [];
  const defaults = {maxRetries: 0, payloadLimitBytes: 65_536, cell: 'default'};
  for (let done = 0; done < N; done += CHUNK) {
    const tasks = Array.from({length: CHUNK}, (_, i) =>
      validateTaskSpec({type: TYPE, payload: {n: done + i}}, defaults, Date.now(), newId),
    );
    await store.tasksInsert({tasks, actor: 'e2e:1'});
    const claimed = (await store.tasksClaim({ids: tasks.map((t) => t.id), worker: 'w:setup', leaseMs: 60_000})).claimed;
    expect(claimed).toHaveLength(CHUNK);
    await store.outcomesApply({
      outcomes: claimed.map((c) => ({kind: 'deadLetter' as const, id: c.id, fence: c.fence, error: 'downstream 503'})),
      actor: 'w:setup',
    });
    ids.push(...tasks.map((t) => t.id));
  }
  return ids;
}

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), 'ax-e2e-dlq-rate-'));
  env = await createTestEnv();
  store = await env.store();
  await env.broker(); // declares the queues
  worker = await createTestWorker(env, {workerId: 'e2e-rate'});
  await worker.start();
}, 120_000);

afterAll(async () => {
  await worker?.stop({graceMs: 2000});
  await env?.dispose();
  if (cwd) rmSync(cwd, {recursive: true, force: true});
});

describe('ax dlq replay --rate at size', () => {
  test(`${N} dead tasks at --rate ${RATE}: each runs exactly once, and the replay takes ≥ ${N / RATE} s`, async () => {
    const ids = await deadTasks();
    const [dead] = await env.sql<{n: number}>("SELECT COUNT(*) AS n FROM tasks WHERE type = ? AND state = 'dead'", [TYPE]);
    expect(Number(dead?.n)).toBe(N);
    const before = executions();

    const t0 = performance.now();
    const r = await runCli(['dlq', 'replay', '--type', TYPE, '--rate', String(RATE), '--reason', 'downstream back', '--yes', '--json'], {
      cwd,
      env: env.env,
    });
    const wall = performance.now() - t0;
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toMatchObject({dryRun: false, replayed: N, skipped: [], unrung: 0});
    // The limiter's lower bound: N tasks at RATE per second cannot take less than N / RATE seconds.
    expect((r.json as {elapsedMs: number}).elapsedMs).toBeGreaterThanOrEqual((N / RATE) * 1000);
    expect(wall).toBeGreaterThanOrEqual((N / RATE) * 1000);

    await eventually(
      async () => {
        const [row] = await env.sql<{n: number}>("SELECT COUNT(*) AS n FROM tasks WHERE type = ? AND state = 'succeeded'", [TYPE]);
        return Number(row?.n) === N;
      },
      170_000,
      `all ${N} replayed tasks to succeed`,
    );
    // Exactly once each: one replay, one more run, one success per task in the history...
    const counts = await env.sql<{replays: number; runs: number; successes: number; n: number}>(
      `SELECT replays, runs, successes, COUNT(*) AS n FROM (
         SELECT h.task_id,
                SUM(h.from_state = 'dead' AND h.to_state = 'submitted') AS replays,
                SUM(h.from_state = 'running') AS runs,
                SUM(h.to_state = 'succeeded') AS successes
         FROM task_history h JOIN tasks t ON t.id = h.task_id WHERE t.type = ? GROUP BY h.task_id) per_task
       GROUP BY replays, runs, successes`,
      [TYPE],
    );
    expect(counts.map((c) => ({replays: Number(c.replays), runs: Number(c.runs), successes: Number(c.successes), n: Number(c.n)}))).toEqual(
      [{replays: 1, runs: 2, successes: 1, n: N}],
    );
    // ...and the handler ran N times, no more (the worker runs in this process).
    expect(executions() - before).toBe(N);
    const [audit] = await env.sql<{rows: number; tasks: number}>(
      "SELECT COUNT(*) AS `rows`, SUM(task_count) AS tasks FROM admin_audit WHERE command = 'dlq replay'",
    );
    expect(Number(audit?.tasks)).toBe(N);
    expect(ids).toHaveLength(N);
  }, 240_000);
});
