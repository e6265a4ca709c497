/**
 * End-to-end test of `ax doctor` through the built CLI (`node bin/run.js`; build first) against the
 * real MariaDB and RabbitMQ, on a deliberately broken cell: a live worker that runs only the io
 * pool while a cpu task waits, a task of a type no live worker has a handler for (with flow control
 * it waits, parked "no handler", until AX_UNHANDLED_DEAD_AFTER), a paused type with a backlog, a
 * crashed worker's stale heartbeat, and a due task nobody rang. Then with RabbitMQ unreachable and
 * with MySQL unreachable: the server down is the finding, exit 5.
 */
import {existsSync, mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {ROOT, runCli, type CliRun} from '../helpers/spawn.js';
import {createTestEnv, createTestWorker, eventually, type TestEnv} from '../helpers/env.js';
import {openClient} from '../../src/compose.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import type {Worker} from '../../src/core/worker/worker.js';

let env: TestEnv;
let cwd: string;
let worker: Worker;
let unknownId: string;
let unrungId: string;

function ax(args: string[], over: Record<string, string> = {}): Promise<CliRun> {
  return runCli(args, {cwd, env: {...env.env, ...over}});
}
const ids = (r: CliRun, status: string): string[] =>
  (r.json.findings as Array<{id: string; status: string}>).filter((f) => f.status === status).map((f) => f.id);

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist/commands/doctor.js'))) throw new Error('the CLI is not built: run `npm run build` first');
  cwd = mkdtempSync(join(tmpdir(), 'ax-e2e-doctor-'));
  env = await createTestEnv();
  worker = await createTestWorker(env, {workerId: 'doctor-io-only'});
  await worker.start();
  const client = await openClient(env.rt, {reconnect: false});
  try {
    await client.submit({type: 'test_noop', payload: {n: 1}, pool: 'cpu'});
    unknownId = await client.submit({type: 'nobody_handles', payload: {n: 2}});
    await client.flush();
    await client.types.pause('test_sleep', 'e2e: downstream maintenance');
    // Due in an hour: a backlog of the paused type no worker can race to run before it sees the pause.
    await client.submit({type: 'test_sleep', payload: {ms: 1}, runAt: new Date(Date.now() + 3_600_000)});
    await client.flush();
  } finally {
    await client.close();
  }
  const store = await env.store();
  const parked = async (id: string): Promise<unknown> =>
    ((await env.sql('SELECT parked FROM tasks WHERE id = ?', [id])) as Array<{parked: string | null}>)[0]?.parked;
  await eventually(async () => (await parked(unknownId)) === 'unhandled', 20_000, 'the unknown type to be parked "no handler"');
  // A worker that crashed: registered, never stopped, heartbeat two minutes old.
  await store.workersUpsert({info: {id: 'crashed-1', host: 'gone', pid: 4242, pools: {io: 8}}, inFlight: 2});
  await env.sql("UPDATE workers SET heartbeat_at = NOW(3) - INTERVAL 2 MINUTE WHERE id = 'crashed-1'");
  // A task written but never rung (its producer lost RabbitMQ), due for two minutes.
  const t = validateTaskSpec(
    {type: 'test_noop', payload: {n: 3}},
    {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'},
    Date.now(),
    createIdGenerator(Date.now),
  );
  unrungId = t.id;
  await store.tasksInsert({tasks: [t], actor: 'e2e:1'});
  await env.sql('UPDATE tasks SET run_at = NOW(3) - INTERVAL 2 MINUTE WHERE id = ?', [t.id]);
});

afterAll(async () => {
  await worker?.stop({graceMs: 1000});
  await env?.dispose();
  if (cwd) rmSync(cwd, {recursive: true, force: true});
});

describe('ax doctor', () => {
  test('finds every breakage with its evidence and the next command, and exits 8', async () => {
    const r = await ax(['doctor', '--json']);
    expect(r.code, r.stderr).toBe(8);
    expect(r.json.verdict).toBe('problem');
    expect(ids(r, 'problem').sort()).toEqual(['backlog.late', 'dispatch.unrung', 'pools.unserved', 'types.unhandled']);
    expect(ids(r, 'ok')).toEqual(expect.arrayContaining(['mysql', 'rabbitmq', 'workers.live', 'timing.clock']));
    expect(ids(r, 'warn')).toEqual(expect.arrayContaining(['workers.stale', 'types.paused']));
    const find = (id: string) => (r.json.findings as Array<{id: string; evidence: string[]; next: string[]}>).find((f) => f.id === id)!;
    expect(find('pools.unserved').evidence).toEqual([expect.stringMatching(/^test_noop: 1 due in pool cpu/)]);
    expect(find('pools.unserved').next).toEqual(['ax worker --handlers <module> --pools cpu']);
    // Waiting for a handler, not dead-lettered: the problem names the type and what to do.
    expect((await (await env.store()).tasksGet({id: unknownId}))?.state).not.toBe('dead');
    expect(find('types.unhandled').evidence).toEqual([
      'nobody_handles: 1 parked waiting for a handler (dead after AX_UNHANDLED_DEAD_AFTER)',
    ]);
    expect(find('types.unhandled').next[0]).toMatch(/^ax types show nobody_handles/);
    expect(find('types.unhandled').next[1]).toMatch(/^deploy a worker/);
    expect(find('types.paused').evidence).toEqual([
      expect.stringMatching(/^test_sleep: paused by \S+ [\d.]+\w* ago \("e2e: downstream maintenance"\); 1 task waiting$/),
    ]);
    expect(find('types.paused').next[0]).toMatch(/^ax types resume test_sleep/);
    // The live worker reports its memory with its heartbeat; the crashed one is not live.
    expect(find('memory').evidence[0]).toMatch(/^largest: doctor-io-only on \S+ \(pid \d+\): RSS \d+\.\d MiB, heap \d+\.\d MiB/);
    expect(ids(r, 'ok')).toContain('memory');
    expect(find('workers.stale').evidence[0]).toMatch(/^crashed-1 on gone pid 4242: last heartbeat 2m/);
    expect(find('dispatch.unrung').evidence).toEqual([
      expect.stringMatching(new RegExp(`^${unrungId} test_noop \\(pool io, attempt 0\\): due for 2m`)),
    ]);

    const human = await ax(['doctor']);
    expect(human.code).toBe(8);
    expect(human.stdout).toMatch(/Submitted but not running\n/);
    expect(human.stdout).toMatch(/PROBLEM {2}tasks are due in the cpu pool, which no live worker runs {2}\[pools\.unserved\]/);
    expect(human.stdout).toMatch(/→ ax worker --handlers <module> --pools cpu/);
    expect(human.stdout).toMatch(/4 problem\(s\), \d+ warning\(s\), .* — exit 8\n$/);
  });

  test('RabbitMQ unreachable: that is the finding, the queue checks are skipped, the rest still runs; exit 5', async () => {
    const r = await ax(['doctor', '--json'], {AX_AMQP_URL: 'amqp://guest:guest@127.0.0.1:1'});
    expect(r.code, r.stderr).toBe(5);
    expect(r.json.verdict).toBe('unavailable');
    expect(ids(r, 'problem')).toContain('rabbitmq');
    expect(ids(r, 'skipped')).toContain('rabbitmq.poison');
    expect(ids(r, 'problem')).toContain('pools.unserved');
  });

  test('MySQL unreachable: one problem with the hint, every database check skipped; exit 5', async () => {
    const r = await ax(['doctor'], {AX_MYSQL_URL: 'mysql://root@127.0.0.1:1/ax'});
    expect(r.code).toBe(5);
    expect(r.stdout).toMatch(/PROBLEM .*127\.0\.0\.1:1.*\[mysql\]/);
    expect(r.stdout).toMatch(/skipped {2}not checked: MySQL unavailable {2}\[workers, pools/);
  });

  test('bad flags exit 2 and read nothing', async () => {
    const r = await ax(['doctor', '--late', 'soon']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/late/);
  });
});
