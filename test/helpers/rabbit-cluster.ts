/**
 * A RabbitMQ cluster of its own on this machine, for fault tests (test/faults/rabbit-cluster.test.ts)
 * and by hand (scripts/rabbit-cluster.sh): three nodes of the installed RabbitMQ (Debian's
 * /usr/lib/rabbitmq), each with its own node name (`axc_<tag>_<n>@localhost`), AMQP and Erlang
 * distribution ports (free ones, picked below the ephemeral range), config, data and log
 * directories under one temporary directory, and an Erlang cookie of its own (HOME points at it).
 * The machine's own node (rabbit@localhost, port 5672) is never touched: not stopped, not joined,
 * its cookie and /etc/rabbitmq never read (RABBITMQ_CONF_ENV_FILE points at an empty file).
 *
 * The nodes are started together and form the cluster by peer discovery from the config file
 * (classic_config: each lists all three; RabbitMQ 3.10 takes a lock so exactly one cluster forms),
 * which is one boot per node instead of a boot, stop_app, join_cluster and start_app. The server
 * script runs directly (not Debian's wrapper, which would `su rabbitmq`), so it works as root or as
 * any user who can write the temporary directory.
 *
 * kill(i) is `kill -9` of node i's Erlang VM (beam.smp, its pid from RABBITMQ_PID_FILE); start(i)
 * boots it again on the same data: it rejoins the cluster and its quorum queue replicas catch up.
 * stop() kills every node and removes the directory; nothing is left running (epmd, the shared
 * port mapper of the machine's own node, is not ours and stays).
 */
import {execFile, spawn, type ChildProcess} from 'node:child_process';
import {chmodSync, existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync, writeFileSync} from 'node:fs';
import {createServer, connect as tcpConnect} from 'node:net';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {randomBytes} from 'node:crypto';
import amqp from 'amqplib';

/** Where Debian's package puts the server and CLI scripts (overridable for other layouts). */
export const RABBITMQ_BIN = process.env.AX_TEST_RABBITMQ_BIN ?? '/usr/lib/rabbitmq/bin';

export interface RabbitNode {
  /** 1-based, as in the node name. */
  n: number;
  name: string;
  amqpPort: number;
  distPort: number;
  /** amqp://guest:guest@127.0.0.1:<port> (guest may log in from loopback). */
  url: string;
  dir: string;
}

export interface RabbitCluster {
  nodes: RabbitNode[];
  /** Every node's URL, comma-separated: what AX_AMQP_URL gets. */
  url: string;
  dir: string;
  /** The pid of node i's Erlang VM (0-based i), or undefined when it is not running. */
  pid(i: number): number | undefined;
  /** kill -9 of node i's Erlang VM; resolves once it is gone and its AMQP port refuses connections. */
  kill(i: number): Promise<void>;
  /** Boots node i again on its data; resolves once it takes AMQP connections (it has rejoined). */
  start(i: number): Promise<void>;
  /** rabbitmqctl against node i (0-based); its stdout. */
  ctl(i: number, args: string[]): Promise<string>;
  /** The running members as node i sees them. */
  running(i: number): Promise<string[]>;
  /** Resident memory (kB) of each running node's VM, by node name. */
  memoryKb(): Record<string, number>;
  /** Kills every node and removes the directory. Safe to call twice. */
  stop(): Promise<void>;
}

export interface RabbitClusterOptions {
  size?: number;
  /** How long the boot (and each restart) may take. */
  bootTimeoutMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether something accepts TCP connections on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tcpConnect({host: '127.0.0.1', port});
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

/** Whether 127.0.0.1:port can be bound now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/**
 * `count` distinct free ports in 20000-31999: below Linux's ephemeral range (32768+), so no outgoing
 * connection takes one between the pick and the node's bind.
 */
async function freePorts(count: number): Promise<number[]> {
  const out: number[] = [];
  for (let tries = 0; out.length < count && tries < 1000; tries++) {
    const p = 20_000 + Math.floor(Math.random() * 12_000);
    if (!out.includes(p) && (await bindable(p)) && !(await listening(p))) out.push(p);
  }
  if (out.length < count) throw new Error(`rabbit-cluster: could not find ${count} free ports in 20000-31999`);
  return out;
}

/** Whether a process with this pid exists (and is not a zombie). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

/**
 * Starts a `size`-node cluster (default 3) and resolves once every node takes AMQP connections and
 * node 1 lists them all as running. Throws, with the end of the failing node's log and nothing left
 * running, when RabbitMQ is not installed or a node does not boot within `bootTimeoutMs`.
 */
export async function startRabbitCluster(o: RabbitClusterOptions = {}): Promise<RabbitCluster> {
  const size = o.size ?? 3;
  const bootTimeoutMs = o.bootTimeoutMs ?? 120_000;
  const server = join(RABBITMQ_BIN, 'rabbitmq-server');
  const ctlBin = join(RABBITMQ_BIN, 'rabbitmqctl');
  if (!existsSync(server) || !existsSync(ctlBin))
    throw new Error(`rabbit-cluster: RabbitMQ is not installed (${server} missing; Debian: apt-get install rabbitmq-server)`);

  const tag = randomBytes(3).toString('hex');
  const dir = mkdtempSync(join(tmpdir(), `axc-${tag}-`));
  const home = join(dir, 'home');
  mkdirSync(home);
  const cookie = join(home, '.erlang.cookie');
  writeFileSync(cookie, randomBytes(16).toString('hex').toUpperCase());
  chmodSync(cookie, 0o400);
  const envFile = join(dir, 'rabbitmq-env.conf');
  writeFileSync(envFile, '# empty: the nodes of this cluster do not read /etc/rabbitmq/rabbitmq-env.conf\n');

  const ports = await freePorts(2 * size);
  const nodes: RabbitNode[] = Array.from({length: size}, (_, i) => {
    const n = i + 1;
    const amqpPort = ports[2 * i]!;
    return {
      n,
      name: `axc_${tag}_${n}@localhost`,
      amqpPort,
      distPort: ports[2 * i + 1]!,
      url: `amqp://guest:guest@127.0.0.1:${amqpPort}`,
      dir: join(dir, `n${n}`),
    };
  });
  for (const node of nodes) {
    mkdirSync(node.dir);
    writeFileSync(join(node.dir, 'enabled_plugins'), '[].\n');
    writeFileSync(
      join(node.dir, 'rabbitmq.conf'),
      [
        `listeners.tcp.default = 127.0.0.1:${node.amqpPort}`,
        'cluster_formation.peer_discovery_backend = classic_config',
        ...nodes.map((m) => `cluster_formation.classic_config.nodes.${m.n} = ${m.name}`),
        // Bounds the memory of the quorum queues' write-ahead log (default 512 MB before a flush).
        'raft.wal_max_size_bytes = 64000000',
        '',
      ].join('\n'),
    );
  }

  /** The environment of the server and CLI scripts for `node` (the rest of ours minus RabbitMQ/Erlang settings). */
  const envOf = (node: RabbitNode): NodeJS.ProcessEnv => {
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(RABBITMQ_|ERL_)/.test(k)));
    return {
      ...base,
      HOME: home,
      RABBITMQ_CONF_ENV_FILE: envFile,
      RABBITMQ_NODENAME: node.name,
      RABBITMQ_NODE_PORT: String(node.amqpPort),
      RABBITMQ_DIST_PORT: String(node.distPort),
      RABBITMQ_CONFIG_FILE: join(node.dir, 'rabbitmq.conf'),
      RABBITMQ_ENABLED_PLUGINS_FILE: join(node.dir, 'enabled_plugins'),
      RABBITMQ_MNESIA_BASE: join(node.dir, 'mnesia'),
      RABBITMQ_LOG_BASE: join(node.dir, 'log'),
      RABBITMQ_PID_FILE: join(node.dir, 'pid'),
      RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: '-kernel inet_dist_use_interface {127,0,0,1}',
      // Only used if no port mapper runs yet (the machine's own node normally started one).
      ERL_EPMD_ADDRESS: '127.0.0.1',
    };
  };

  const scripts: Array<ChildProcess | undefined> = nodes.map(() => undefined);
  const pidOf = (i: number): number | undefined => {
    const f = join(nodes[i]!.dir, 'pid');
    if (!existsSync(f)) return undefined;
    const pid = Number(readFileSync(f, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 && alive(pid) ? pid : undefined;
  };
  const logTail = (i: number): string => {
    const f = join(nodes[i]!.dir, 'out.log');
    return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').slice(-15).join('\n') : '(no output)';
  };

  /** Spawns node i's server script, its output appended to <node>/out.log. */
  const launch = (i: number): void => {
    const node = nodes[i]!;
    rmSync(join(node.dir, 'pid'), {force: true});
    const out = openSync(join(node.dir, 'out.log'), 'a');
    // Its own process group: stop() can kill the script and everything it started at once.
    const child = spawn(join(RABBITMQ_BIN, 'rabbitmq-server'), [], {env: envOf(node), detached: true, stdio: ['ignore', out, out]});
    closeSync(out);
    child.on('error', () => undefined);
    scripts[i] = child;
  };

  /** Resolves once node i takes an AMQP connection; throws when its script exits first or time runs out. */
  const ready = async (i: number): Promise<void> => {
    const node = nodes[i]!;
    const script = scripts[i]!;
    const deadline = Date.now() + bootTimeoutMs;
    for (;;) {
      if (script.exitCode !== null || script.signalCode !== null)
        throw new Error(`rabbit-cluster: node ${node.name} exited while booting:\n${logTail(i)}`);
      if (await listening(node.amqpPort)) {
        const conn = await amqp.connect(node.url).catch(() => undefined);
        if (conn) {
          await conn.close().catch(() => undefined);
          return;
        }
      }
      if (Date.now() > deadline)
        throw new Error(`rabbit-cluster: node ${node.name} did not boot within ${bootTimeoutMs} ms:\n${logTail(i)}`);
      await sleep(200);
    }
  };

  const ctl = (i: number, args: string[]): Promise<string> =>
    new Promise((resolve, reject) => {
      execFile(ctlBin, ['-n', nodes[i]!.name, ...args], {env: envOf(nodes[i]!), timeout: 60_000}, (err, stdout, stderr) =>
        err ? reject(new Error(`rabbitmqctl -n ${nodes[i]!.name} ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
      );
    });

  let stopped = false;
  const killAll = (): void => {
    for (let i = 0; i < nodes.length; i++) {
      const pid = pidOf(i);
      if (pid) process.kill(pid, 'SIGKILL');
      const s = scripts[i];
      if (s?.pid && s.exitCode === null && s.signalCode === null) {
        try {
          process.kill(-s.pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
    }
  };
  // A test process that dies without stop() must not leave three Erlang VMs behind.
  const onExit = (): void => {
    if (!stopped) killAll();
  };
  process.once('exit', onExit);

  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    process.removeListener('exit', onExit);
    const pids = nodes.map((_, i) => pidOf(i)).filter((p): p is number => p !== undefined);
    killAll();
    const deadline = Date.now() + 15_000;
    while (pids.some(alive) && Date.now() < deadline) await sleep(50);
    rmSync(dir, {recursive: true, force: true});
  };

  try {
    nodes.forEach((_, i) => launch(i));
    await Promise.all(nodes.map((_, i) => ready(i)));
    const running = await runningOn(0);
    if (running.length !== size)
      throw new Error(`rabbit-cluster: the nodes did not form one cluster (node 1 sees ${running.join(', ') || 'none'} running)`);
  } catch (e) {
    await stop();
    throw e;
  }

  async function runningOn(i: number): Promise<string[]> {
    const status = JSON.parse(await ctl(i, ['cluster_status', '--formatter', 'json'])) as {running_nodes: string[]};
    return [...status.running_nodes].sort();
  }

  return {
    nodes,
    url: nodes.map((n) => n.url).join(','),
    dir,
    pid: pidOf,
    async kill(i) {
      const pid = pidOf(i);
      if (pid === undefined) throw new Error(`rabbit-cluster: node ${nodes[i]!.name} is not running`);
      process.kill(pid, 'SIGKILL');
      const deadline = Date.now() + 15_000;
      while ((alive(pid) || (await listening(nodes[i]!.amqpPort))) && Date.now() < deadline) await sleep(20);
      if (alive(pid)) throw new Error(`rabbit-cluster: node ${nodes[i]!.name} (pid ${pid}) survived kill -9`);
    },
    async start(i) {
      if (pidOf(i) !== undefined) throw new Error(`rabbit-cluster: node ${nodes[i]!.name} is already running`);
      launch(i);
      await ready(i);
    },
    ctl,
    running: runningOn,
    memoryKb() {
      const out: Record<string, number> = {};
      nodes.forEach((node, i) => {
        const pid = pidOf(i);
        if (pid === undefined) return;
        const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
        if (m) out[node.name] = Number(m[1]);
      });
      return out;
    },
    stop,
  };
}
