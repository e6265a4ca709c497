/**
 * Starting while MariaDB or RabbitMQ is down, without stopping the shared servers: the spawned
 * process is pointed at TCP proxies (test/helpers/fault-proxy.ts) that close every connection until
 * they are switched to forward to the real servers. It must wait (logging each attempt, /readyz
 * 503), then become ready and work; with --fail-fast / AX_CONNECT_FAIL_FAST it exits 5 at once.
 */
import {spawn as spawnChild} from 'node:child_process';
import {createServer} from 'node:net';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {AxClient} from '../../src/core/client.js';
import {AMQP_URL, MYSQL_ROOT, eventually, type TestEnv} from '../helpers/env.js';
import {createProcessTestEnv, logLines, type ProcessTestEnv} from '../helpers/processes.js';
import {createBusinessDb, type BusinessDb} from '../helpers/outbox.js';
import {ROOT, type Spawned} from '../helpers/spawn.js';
import {startFaultProxy, targetOf, type FaultProxy} from '../helpers/fault-proxy.js';

const retries = (p: Spawned, to: string): number =>
  logLines(p.stderr()).filter((l) => l.msg === 'cannot connect, retrying' && l.to === to).length;
const get = async (url: string): Promise<{status: number; body: Record<string, unknown>}> => {
  const r = await fetch(url);
  return {status: r.status, body: (await r.json()) as Record<string, unknown>};
};

describe('start during an outage', () => {
  let fx: ProcessTestEnv;
  let env: TestEnv;
  let client: AxClient;
  const proxies: FaultProxy[] = [];

  /** Fresh proxies to MariaDB and RabbitMQ (both down) and the env pointing a process at them. */
  const outage = async () => {
    const mysql = await startFaultProxy(targetOf(MYSQL_ROOT), {kind: 'refuse'});
    const amqp = await startFaultProxy(targetOf(AMQP_URL), {kind: 'refuse'});
    proxies.push(mysql, amqp);
    const db = new URL(env.env.AX_MYSQL_URL!).pathname;
    const through = {
      ...env.env,
      AX_MYSQL_URL: `mysql://root@127.0.0.1:${mysql.port}${db}`,
      AX_AMQP_URL: `amqp://guest:guest@127.0.0.1:${amqp.port}`,
      AX_CONNECT_RETRY_MAX: '300ms',
      AX_LOG_LEVEL: 'info',
      AX_LOG_FORMAT: 'json',
    };
    return {mysql, amqp, env: through};
  };
  const spawn = (args: string[], e: Record<string, string>): Spawned => fx.spawn(args, e);

  beforeAll(async () => {
    fx = await createProcessTestEnv();
    ({env, client} = fx);
  });

  afterAll(async () => {
    for (const p of proxies) await p.close();
    await fx?.dispose();
  });

  it('a worker waits for MariaDB, then RabbitMQ, with /readyz 503, then becomes ready and runs a task', async () => {
    const o = await outage();
    const w = spawn(['worker', '--handlers', 'test/fixtures/handlers.js', '--pools', 'io', '--health-port', '0'], o.env);
    const url = await eventually(
      async () => logLines(w.stderr()).find((l) => l.msg === 'health endpoints listening')?.url as string | undefined,
      20_000,
      'the health port in the startup log',
    );
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await eventually(async () => retries(w, 'MySQL') >= 2, 20_000, 'MySQL retries');
    expect(await get(`${url}/readyz`)).toMatchObject({status: 503, body: {ok: false, state: 'connecting', connect: {what: 'MySQL'}}});
    expect((await get(`${url}/healthz`)).status).toBe(200);
    const line = logLines(w.stderr()).find((l) => l.msg === 'cannot connect, retrying');
    expect(line).toMatchObject({level: 'warn', to: 'MySQL', attempt: 1, retryInMs: expect.any(Number)});
    expect(w.stderr()).not.toMatch(/"level":"error"/);

    o.mysql.heal();
    await eventually(async () => retries(w, 'RabbitMQ') >= 2, 20_000, 'RabbitMQ retries');
    expect((await get(`${url}/readyz`)).status).toBe(503);

    o.amqp.heal();
    await eventually(async () => (await get(`${url}/readyz`)).status === 200, 20_000, 'the worker to be ready');
    const id = await client.submit({type: 'test_noop', payload: {}});
    await client.flush();
    await eventually(async () => (await client.getTask(id)).task.state === 'succeeded', 20_000, 'the task to run');
    expect(w.child.exitCode).toBeNull();
    w.child.kill('SIGTERM');
    expect((await w.exited).code).toBe(0);
  });

  it('SIGTERM while a worker waits for a server ends it cleanly (exit 0)', async () => {
    const o = await outage();
    const w = spawn(['worker', '--handlers', 'test/fixtures/handlers.js', '--pools', 'io'], o.env);
    await eventually(async () => retries(w, 'MySQL') >= 1, 20_000, 'a MySQL retry');
    w.child.kill('SIGTERM');
    expect((await w.exited).code).toBe(0);
  });

  it('a scheduler waits for its servers too, then runs and is ready', async () => {
    const o = await outage();
    const s = spawn(['scheduler', '--health-port', '0', '--summary-every', '0'], o.env);
    await eventually(async () => retries(s, 'MySQL') >= 2, 20_000, 'MySQL retries');
    // The health port is up while it waits: /healthz 200 (a liveness probe must not restart it),
    // /readyz 503 naming what it waits for.
    const early = await eventually(
      async () => logLines(s.stderr()).find((l) => l.msg === 'health endpoints listening')?.url as string | undefined,
      20_000,
      'the health port in the startup log',
    );
    expect(await get(`${early}/healthz`)).toMatchObject({status: 200, body: {state: 'connecting', connect: {what: 'MySQL'}}});
    expect((await get(`${early}/readyz`)).status).toBe(503);
    o.mysql.heal();
    await eventually(async () => retries(s, 'RabbitMQ') >= 1, 20_000, 'RabbitMQ retries');
    o.amqp.heal();
    const url = await eventually(async () => /health on (http:\/\/[\d.:]+)/.exec(s.stderr())?.[1], 20_000, 'the scheduler to run');
    await eventually(async () => (await get(`${url}/readyz`)).status === 200, 20_000, 'the scheduler to be ready');
    s.child.kill('SIGTERM');
    expect((await s.exited).code).toBe(0);
  });

  it('SIGTERM while a scheduler or a relay waits for a server ends it cleanly (exit 0)', async () => {
    const o = await outage();
    const s = spawn(['scheduler', '--summary-every', '0'], o.env);
    const r = spawn(['relay', '--summary-every', '0'], {...o.env, AX_OUTBOX_MYSQL_URL: o.env.AX_MYSQL_URL});
    await eventually(async () => retries(s, 'MySQL') >= 1 && retries(r, 'MySQL (ax)') >= 1, 20_000, 'MySQL retries');
    s.child.kill('SIGTERM');
    r.child.kill('SIGTERM');
    expect(await s.exited).toMatchObject({code: 0, signal: null});
    expect(await r.exited).toMatchObject({code: 0, signal: null});
  });

  it('the relay sidecar waits for its three servers with /readyz 503, then becomes ready', async () => {
    const o = await outage();
    const biz: BusinessDb = await createBusinessDb({migrate: true});
    try {
      const bizProxy = await startFaultProxy(targetOf(MYSQL_ROOT), {kind: 'refuse'});
      // The sidecar's AX_RELAY_HEALTH_PORT=0 means "no endpoint": give it a free port.
      const port = await new Promise<number>((resolve) => {
        const srv = createServer().listen(0, '127.0.0.1', () => {
          const p = (srv.address() as {port: number}).port;
          srv.close(() => resolve(p));
        });
      });
      proxies.push(bizProxy);
      const sidecarEnv = {
        PATH: process.env.PATH ?? '',
        ...o.env,
        AX_OUTBOX_MYSQL_URL: `mysql://root@127.0.0.1:${bizProxy.port}/${biz.name}`,
        AX_RELAY_HEALTH_PORT: String(port),
        AX_RELAY_INTERVAL: '100ms',
      };
      const child = spawnChild(process.execPath, [join(ROOT, 'sidecar/main.js')], {
        cwd: ROOT,
        env: sidecarEnv,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      const car = {child, stderr: () => err, stdout: () => '', exited: exited.then((code) => ({code, signal: null}))} as Spawned;
      fx.track(car);
      await eventually(async () => retries(car, 'MySQL (ax)') >= 2, 20_000, 'MySQL retries');
      expect((await get(`http://127.0.0.1:${port}/readyz`)).status).toBe(503);
      o.mysql.heal();
      await eventually(async () => retries(car, 'MySQL (outbox)') >= 1, 20_000, 'outbox retries');
      bizProxy.heal();
      await eventually(async () => retries(car, 'RabbitMQ') >= 1, 20_000, 'RabbitMQ retries');
      expect((await get(`http://127.0.0.1:${port}/readyz`)).status).toBe(503);
      o.amqp.heal();
      await eventually(async () => (await get(`http://127.0.0.1:${port}/readyz`)).status === 200, 20_000, 'the sidecar to be ready');
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      await biz.dispose();
    }
  });

  it('--fail-fast (and AX_CONNECT_FAIL_FAST) exit 5 at once instead of waiting', async () => {
    const o = await outage();
    const started = Date.now();
    const w = spawn(['worker', '--handlers', 'test/fixtures/handlers.js', '--pools', 'io', '--fail-fast'], o.env);
    const s = spawn(['scheduler'], {...o.env, AX_CONNECT_FAIL_FAST: 'true'});
    expect((await w.exited).code).toBe(5);
    expect((await s.exited).code).toBe(5);
    expect(Date.now() - started).toBeLessThan(15_000);
    for (const p of [w, s]) {
      expect(retries(p, 'MySQL')).toBe(0);
      expect(p.stderr()).toMatch(/MySQL at mysql:\/\/root@127\.0\.0\.1:\d+\/axt_\w+ is unavailable/);
    }
    expect(o.mysql.accepted).toBeGreaterThanOrEqual(2);
  });
});
