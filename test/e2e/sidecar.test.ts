/**
 * End-to-end tests of the relay sidecar's entry point as a process (`node sidecar/main.js`, which
 * imports the built package through `ax-executor/relay`: run `npm run build` first) against a real
 * MariaDB and RabbitMQ. The business database with task_outbox is separate from ax's. The process
 * gets its configuration from the environment only (an ax.config.json in its working directory and
 * an AX_CONFIG pointing nowhere would both break it if it read a file).
 */
import {type ChildProcess, spawn} from 'node:child_process';
import {existsSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs';
import {createServer, connect} from 'node:net';
import {networkInterfaces, tmpdir} from 'node:os';
import {join} from 'node:path';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {createTestEnv, eventually, type TestEnv} from '../helpers/env.js';
import {createBusinessDb, type BusinessDb} from '../helpers/outbox.js';
import {ROOT} from '../helpers/spawn.js';
import {promtoolCheckMetrics, sample, scrape} from '../helpers/metrics.js';

const MAIN = join(ROOT, 'sidecar/main.js');

let testEnv: TestEnv;
let biz: BusinessDb;
let cwd: string;
const children: ChildProcess[] = [];

interface Sidecar {
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<{code: number | null; signal: NodeJS.Signals | null}>;
}

/** Starts `node sidecar/main.js` with exactly `env` (nothing inherited), in `where`. */
function sidecar(env: Record<string, string>, where = cwd): Sidecar {
  const child = spawn(process.execPath, [where === ROOT ? 'sidecar/main.js' : MAIN], {cwd: where, env, stdio: ['ignore', 'pipe', 'pipe']});
  children.push(child);
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  child.stdout?.on('data', (d: Buffer) => (err += `[stdout] ${d.toString()}`));
  const exited = new Promise<{code: number | null; signal: NodeJS.Signals | null}>((resolve) =>
    child.on('exit', (code, signal) => resolve({code, signal})),
  );
  return {child, stderr: () => err, exited};
}

/** The environment of a sidecar on the test databases, health on `port`. */
function sidecarEnv(port: number, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...testEnv.env,
    AX_OUTBOX_MYSQL_URL: biz.url,
    AX_RELAY_HEALTH_PORT: String(port),
    AX_RELAY_INTERVAL: '200ms',
    AX_RELAY_BATCH: '20',
    AX_LOG_LEVEL: 'info',
    // Would fail the start if the sidecar read configuration files.
    AX_CONFIG: join(cwd, 'missing.json'),
    ...extra,
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const {port} = s.address() as {port: number};
      s.close(() => resolve(port));
    });
  });
}

async function get(port: number, path: string, host = '127.0.0.1'): Promise<{status: number; body: Record<string, unknown>}> {
  const res = await fetch(`http://${host}:${port}${path}`, {signal: AbortSignal.timeout(2000)});
  return {status: res.status, body: (await res.json()) as Record<string, unknown>};
}

/** A port held by a listening server of this process (close it when done). */
function holdPort(): Promise<{port: number; server: ReturnType<typeof createServer>}> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve({port: (server.address() as {port: number}).port, server}));
  });
}

/** Resolves with the error code of a TCP connect (or 'connected'). */
function tryConnect(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({host, port, timeout: 2000});
    s.once('connect', () => {
      s.destroy();
      resolve('connected');
    });
    s.once('timeout', () => {
      s.destroy();
      resolve('timeout');
    });
    s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
}

const nonLoopback = (): string | undefined =>
  Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

async function outboxSql<T = Record<string, unknown>>(query: string, params: unknown[] = []): Promise<T[]> {
  return biz.sql<T>(query, params);
}

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist/relay.js'))) throw new Error('the package is not built: run `npm run build` first');
  cwd = mkdtempSync(join(tmpdir(), 'ax-e2e-sidecar-'));
  writeFileSync(join(cwd, 'ax.config.json'), '{"notASetting": true}');
  testEnv = await createTestEnv();
  biz = await createBusinessDb({migrate: true});
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await biz?.dispose();
  await testEnv?.dispose();
  if (cwd) rmSync(cwd, {recursive: true, force: true});
});

describe('node sidecar/main.js', () => {
  test('two sidecars share one outbox: every row relayed once, health and readiness, JSON logs, SIGTERM/SIGINT exit 0', async () => {
    const ports = [await freePort(), await freePort()];
    const cars = ports.map((p) => sidecar(sidecarEnv(p)));
    for (const p of ports) {
      await eventually(async () => (await get(p, '/readyz')).status === 200, 20_000, `/readyz on ${p}`);
    }

    // 100 good rows and one that can never be a task.
    const values = Array.from({length: 100}, (_, i) => `('order_notify', '{"orderId": ${i}}')`).join(', ');
    await outboxSql(`INSERT INTO task_outbox (type, payload) VALUES ${values}, ('order_notify', 'not json')`);
    await eventually(
      async () => {
        const [r] = await outboxSql<{n: number}>('SELECT COUNT(*) AS n FROM task_outbox WHERE sent_at IS NULL AND failed_at IS NULL');
        return Number(r?.n) === 0;
      },
      20_000,
      'the outbox to drain',
    );

    const [sent] = await outboxSql<{n: number}>('SELECT COUNT(*) AS n FROM task_outbox WHERE sent_at IS NOT NULL');
    expect(Number(sent?.n)).toBe(100);
    const failed = await outboxSql<{last_error: string}>('SELECT last_error FROM task_outbox WHERE failed_at IS NOT NULL');
    expect(failed).toHaveLength(1);
    expect(failed[0]?.last_error).toMatch(/payload is not valid JSON/);
    const tasks = await testEnv.sql<{n: number; published: number; orders: number}>(
      "SELECT COUNT(*) AS n, SUM(published_at IS NOT NULL) AS published, COUNT(DISTINCT JSON_VALUE(payload, '$.orderId')) AS orders FROM tasks WHERE type = 'order_notify'",
    );
    expect(tasks[0]).toMatchObject({n: 100, orders: 100});
    expect(Number(tasks[0]?.published)).toBe(100);

    // Health: the relay's stats (the two relays' counts add up to the rows, none twice) and its lag.
    const health = await Promise.all(ports.map((p) => get(p, '/healthz')));
    for (const h of health) {
      expect(h.status).toBe(200);
      // lastError/transientErrors are not asserted: two relays on a tiny table can deadlock on a claim
      // (MariaDB scans the whole PRIMARY index there); the pass is retried and nothing is lost.
      expect(h.body).toMatchObject({
        ok: true,
        relay: expect.stringMatching(/^relay:/),
        blocked: false,
        transientErrors: expect.any(Number),
      });
      expect(h.body.lag).toEqual({
        unsent: expect.any(Number),
        failed: expect.any(Number),
        oldestAgeMs: expect.toBeOneOf([null, expect.any(Number)]),
      });
    }
    expect(health.reduce((n, h) => n + Number(h.body.relayed), 0)).toBe(100);
    expect(health.reduce((n, h) => n + Number(h.body.failedRows), 0)).toBe(1);
    expect(new Set(health.map((h) => h.body.relay)).size).toBe(2);
    const ready = await get(ports[0]!, '/readyz');
    expect(ready).toMatchObject({status: 200, body: {ok: true}});
    // /metrics next to them: the two relays' ax_outbox_relayed_total add up to the rows, valid text.
    const scrapes = await Promise.all(ports.map((p) => scrape(`http://127.0.0.1:${p}`)));
    for (const m of scrapes) {
      expect(m.status).toBe(200);
      expect(await promtoolCheckMetrics(m.text)).toEqual({code: 0, out: ''});
    }
    expect(scrapes.reduce((n, m) => n + (sample(m.text, 'ax_outbox_relayed_total') ?? 0), 0)).toBe(100);
    expect(scrapes.reduce((n, m) => n + (sample(m.text, 'ax_outbox_failed_rows_total') ?? 0), 0)).toBe(1);

    // Bound to 127.0.0.1 by default: not reachable on the machine's other addresses.
    const other = nonLoopback();
    if (other) expect(await tryConnect(other, ports[0]!)).toBe('ECONNREFUSED');

    const t0 = Date.now();
    cars[0]!.child.kill('SIGTERM');
    cars[1]!.child.kill('SIGINT');
    const exits = await Promise.all(cars.map((c) => c.exited));
    expect(Date.now() - t0).toBeLessThan(5000);
    for (const [i, c] of cars.entries()) {
      expect(exits[i], c.stderr()).toEqual({code: 0, signal: null});
      const lines = c.stderr().trim().split('\n');
      // Every line is a JSON log record (stdout stays empty).
      for (const l of lines) expect(() => JSON.parse(l), l).not.toThrow();
      const msgs = lines.map((l) => JSON.parse(l) as {msg: string; level: string});
      expect(msgs.map((m) => m.msg)).toEqual(
        expect.arrayContaining([
          'AX_CONFIG is ignored: the sidecar is configured from the environment only',
          'relay sidecar running',
          'stopping',
          'relay sidecar stopped',
        ]),
      );
      expect(msgs.filter((m) => m.level === 'error')).toEqual([]);
    }
    for (const p of ports) expect(await tryConnect('127.0.0.1', p)).toBe('ECONNREFUSED');
  });

  test('a server unreachable at start with AX_CONNECT_FAIL_FAST, or bad configuration: a non-zero exit and one clear line', async () => {
    // Without AX_CONNECT_FAIL_FAST the sidecar waits for the server instead (test/integration/start-outage.test.ts).
    const fast = {AX_CONNECT_FAIL_FAST: 'true'};
    const [p1, p2, p3, p4] = [await freePort(), await freePort(), await freePort(), await freePort()];
    // A health port another process holds: exit 4 (conflict), before anything connects.
    const taken = await holdPort();
    const runs = [
      {
        env: sidecarEnv(p1!, {...fast, AX_MYSQL_URL: 'mysql://root@127.0.0.1:1/ax_unreachable'}),
        exit: 5,
        msg: /MySQL at mysql:\/\/root@127\.0\.0\.1:1\/ax_unreachable is unavailable/,
      },
      {
        env: sidecarEnv(p2!, {...fast, AX_OUTBOX_MYSQL_URL: 'mysql://root:secret@127.0.0.1:1/orders'}),
        exit: 5,
        msg: /MySQL at mysql:\/\/root:\*\*\*@127\.0\.0\.1:1\/orders is unavailable/,
      },
      {
        env: sidecarEnv(p3!, {...fast, AX_AMQP_URL: 'amqp://guest:guest@127.0.0.1:1'}),
        exit: 5,
        msg: /RabbitMQ at amqp:\/\/guest:\*\*\*@127\.0\.0\.1:1 is unavailable/,
      },
      {
        env: sidecarEnv(p4!, {AX_RELAY_BATCH: 'many'}),
        exit: 2,
        msg: /bad configuration: relayBatchSize \(env AX_RELAY_BATCH\) must be a whole number/,
      },
      {
        env: sidecarEnv(taken.port),
        exit: 4,
        msg: new RegExp(`cannot start: cannot serve /metrics and health on 127\\.0\\.0\\.1:${taken.port}: the port is in use`),
      },
    ];
    // From the repository root, the way the README runs it.
    const started = runs.map((r) => ({...r, car: sidecar(r.env, ROOT)}));
    for (const r of started) {
      const exit = await r.car.exited;
      if (r.exit === 4) taken.server.close();
      expect(exit.code, r.car.stderr()).toBe(r.exit);
      const errors = r.car
        .stderr()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as {level: string; msg: string; code: string})
        .filter((l) => l.level === 'error');
      expect(errors, r.car.stderr()).toHaveLength(1);
      expect(errors[0]?.msg).toMatch(r.msg);
      expect(r.car.stderr()).not.toContain('secret');
    }
  });
});
