/**
 * Fault injection for the outbox fault tests: `ax relay` as a real process, RabbitMQ connections
 * closed by the broker (only this test's own, found by their `ax <pid>` connection name, so other
 * tenants of the shared broker are left alone), and a restart of the local MariaDB server.
 */
import {execFile} from 'node:child_process';
import {readFileSync} from 'node:fs';
import {promisify} from 'node:util';
import amqp from 'amqplib';
import {topology} from '../../src/core/broker/amqp/topology.js';
import {AMQP_URL, type TestEnv} from './env.js';
import type {BusinessDb} from './outbox.js';
import {spawnAx, type Spawned} from './spawn.js';

const run = promisify(execFile);

/** What `ax relay --json` prints when it stops (the relay's counters). */
export interface RelayStatsOut {
  relay: string;
  relayed: number;
  published: number;
  failedRows: number;
  transientErrors: number;
  batches: number;
  lastError: string | null;
}

export interface RelayProcess {
  proc: Spawned;
  pid: number;
  /** SIGTERM, wait for the exit, parse the counters printed on stdout. */
  stop(): Promise<RelayStatsOut>;
  /** kill -9, and wait until the process is gone. */
  kill9(): Promise<void>;
  alive(): boolean;
}

/** Starts `ax relay --json` on the test environment and the business database. */
export function spawnRelay(env: TestEnv, biz: BusinessDb, extra: Record<string, string> = {}): RelayProcess {
  const proc = spawnAx(['relay', '--json'], {...env.env, AX_OUTBOX_MYSQL_URL: biz.url, AX_RELAY_INTERVAL: '100ms', ...extra});
  const alive = (): boolean => proc.child.exitCode === null && proc.child.signalCode === null;
  return {
    proc,
    pid: proc.child.pid!,
    alive,
    async stop() {
      if (alive()) proc.child.kill('SIGTERM');
      const {code, signal} = await proc.exited;
      const out = proc.stdout().trim();
      if (code !== 0 || !out.startsWith('{')) {
        throw new Error(`ax relay exited with ${code ?? signal}: stdout ${out.slice(0, 500)} stderr ${proc.stderr().slice(-2000)}`);
      }
      return JSON.parse(out) as RelayStatsOut;
    },
    async kill9() {
      if (alive()) proc.child.kill('SIGKILL');
      await proc.exited;
    },
  };
}

// ---- RabbitMQ -------------------------------------------------------------------------------

/** Broker-side ids of the AMQP connections that processes `pids` opened (ax names them `ax <pid>`). */
export async function amqpConnectionsOf(pids: number[]): Promise<Map<number, string[]>> {
  const {stdout} = await run('rabbitmqctl', ['list_connections', 'pid', 'client_properties', '-q', '--no-table-headers'], {
    maxBuffer: 16 * 1024 * 1024,
  });
  const found = new Map<number, string[]>(pids.map((p) => [p, []]));
  for (const line of stdout.split('\n')) {
    const m = /^(<[^>]+>)\s.*\{"connection_name","ax (\d+)"\}/.exec(line);
    if (m) found.get(Number(m[2]))?.push(m[1]!);
  }
  return found;
}

/** Has the broker close these connections (as `rabbitmqctl close_all_connections` would, but only ours). */
export async function closeAmqpConnections(ids: string[], reason = 'test'): Promise<void> {
  await Promise.all(ids.map((id) => run('rabbitmqctl', ['close_connection', id, reason])));
}

/** Ready messages in each of the environment's queues (io, cpu, poison); a missing queue counts 0. */
export async function queueDepths(env: TestEnv): Promise<Record<string, number>> {
  const conn = await amqp.connect(AMQP_URL);
  try {
    const out: Record<string, number> = {};
    for (const q of topology(env.config.amqpPrefix, env.config.cell, env.config.queueType).allQueues()) {
      // A missing queue closes the channel (404): one channel per queue; missing counts as empty.
      const ch = await conn.createChannel();
      ch.on('error', () => undefined);
      out[q] = await ch.checkQueue(q).then(
        (r) => r.messageCount,
        () => 0,
      );
      await ch.close().catch(() => undefined);
    }
    return out;
  } finally {
    await conn.close().catch(() => undefined);
  }
}

// ---- MariaDB --------------------------------------------------------------------------------

const ADMIN = ['--protocol=tcp', '-h127.0.0.1', '-uroot'];
const MARIADBD = '/usr/sbin/mariadbd';

export async function mariadbUp(): Promise<boolean> {
  try {
    await run('mysqladmin', [...ADMIN, 'ping'], {timeout: 5000});
    return true;
  } catch {
    return false;
  }
}

const pidAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const mariadbdRunning = async (): Promise<boolean> => {
  try {
    await run('start-stop-daemon', ['--status', '--exec', MARIADBD]);
    return true;
  } catch {
    return false;
  }
};

/**
 * Makes sure the local MariaDB answers: starts it the way scripts/services.sh does when no mariadbd
 * runs (one still shutting down is waited for, not doubled), and waits until it answers ping.
 */
export async function ensureMariadbUp(timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await mariadbUp())) {
    if (!(await mariadbdRunning())) {
      await run('start-stop-daemon', ['--start', '--oknodo', '--background', '--exec', MARIADBD, '--', '--user=mysql']);
    }
    if (Date.now() > deadline) throw new Error(`MariaDB did not answer within ${timeoutMs}ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Restarts the local MariaDB server: `mysqladmin shutdown`, wait until its process is gone, start
 * it again (as scripts/services.sh does) and wait until it answers. Returns how long it was down.
 */
export async function restartMariadb(): Promise<{downMs: number}> {
  const {stdout} = await run('mysql', [...ADMIN, '-N', '-e', 'SELECT @@pid_file']);
  const pid = Number(readFileSync(stdout.trim(), 'utf8').trim());
  const t0 = Date.now();
  try {
    await run('mysqladmin', [...ADMIN, 'shutdown'], {timeout: 60_000});
    await waitFor(`mariadbd ${pid} to exit`, () => !pidAlive(pid), 60_000);
  } finally {
    await ensureMariadbUp();
  }
  return {downMs: Date.now() - t0};
}
