/**
 * RabbitMQ as a 3-node cluster on this machine (issue 24): ax's processes — two workers and a
 * scheduler as `bin/run.js`, and a producer (the SDK client in this process) — get AX_AMQP_URL
 * listing the three nodes, and ax's quorum queues have a replica on each. Under a steady stream of
 * submits, the node holding most of ax's connections is killed with kill -9; once it is back (its
 * replicas online again), the busiest of the other two is killed too and stays down. Every process
 * that was on a killed node reconnects to a live one within seconds; nothing is lost, the backlog
 * drains, and the witness checks hold. The cluster is started once (test/helpers/rabbit-cluster.ts);
 * if RabbitMQ cannot be started the test fails, saying why.
 *
 *   npx vitest run --project faults test/faults/rabbit-cluster.test.ts      (short form)
 *   AX_FAULTS_FULL=1 npx vitest run --project faults test/faults/rabbit-cluster.test.ts
 */
import {existsSync, readdirSync, readFileSync} from 'node:fs';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import type {AmqpBroker} from '../../src/core/broker/amqp/broker.js';
import {createClient, type AxClient} from '../../src/core/client.js';
import {createTestEnv, eventually, type TestEnv} from '../helpers/env.js';
import {logLines} from '../helpers/processes.js';
import {startRabbitCluster, type RabbitCluster} from '../helpers/rabbit-cluster.js';
import {spawnAx, type Spawned} from '../helpers/spawn.js';
import {cleanWitnesses, readWitnesses} from '../helpers/witness.js';
import {flushedLoad} from './load.js';
import {FULL, len} from './scale.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One ax connection as RabbitMQ lists it: the node (index) it is on and the process it belongs to. */
interface AxConnection {
  node: number;
  pid: number;
}

describe('RabbitMQ cluster: kill -9 of a node under load', () => {
  let cluster: RabbitCluster;
  let env: TestEnv;
  let broker: AmqpBroker;
  let client: AxClient;
  const procs: Array<{role: string; p: Spawned}> = [];
  const figures: Record<string, unknown> = {full: FULL};
  /** When the in-process producer's broker (re)connected, ms since the epoch. */
  const producerConnected: number[] = [];

  beforeAll(async () => {
    const t0 = Date.now();
    cluster = await startRabbitCluster();
    figures.clusterBootMs = Date.now() - t0;
    figures.nodeMemoryMbAtBoot = mb(cluster.memoryKb());
    env = await createTestEnv({submitFlushMs: 20}, {amqpUrl: cluster.url});
    broker = await env.broker({reconnect: true});
    broker.on('connected', () => void producerConnected.push(Date.now()));
    client = createClient({...env.rt, store: await env.store(), broker, release: async () => undefined});
  });

  afterAll(async () => {
    for (const {p} of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await client?.close();
    await env?.dispose();
    await cluster?.stop();
    console.log(`rabbit-cluster figures: ${JSON.stringify(figures)}`);
  });

  /** ax's connections, by node (from the AMQP port each arrived on) and process ("ax <pid>"). */
  const axConnections = async (via: number): Promise<AxConnection[]> => {
    const rows = JSON.parse(
      await cluster.ctl(via, ['-q', 'list_connections', 'port', 'client_properties', '--formatter', 'json']),
    ) as Array<{
      port: number;
      client_properties: Array<[string, string, unknown]>;
    }>;
    const out: AxConnection[] = [];
    for (const r of rows) {
      const name = r.client_properties.find(([k]) => k === 'connection_name')?.[2];
      const m = typeof name === 'string' ? /^ax (\d+)$/.exec(name) : null;
      const node = cluster.nodes.findIndex((n) => n.amqpPort === r.port);
      if (m && node >= 0) out.push({node, pid: Number(m[1])});
    }
    return out;
  };

  /** ax's quorum queues as node `via` lists them: members and online replicas. */
  const axQueues = async (via: number) => {
    const rows = JSON.parse(
      await cluster.ctl(via, ['-q', 'list_queues', 'name', 'type', 'members', 'online', '--formatter', 'json']),
    ) as Array<{name: string; type: string; members: string[]; online: string[]}>;
    return rows.filter((q) => q.name.startsWith(`${env.config.amqpPrefix}.`));
  };

  /** The live node other than `not` with most of ax's connections, and the pids connected to it. */
  const busiest = async (live: number[]): Promise<{node: number; pids: number[]}> => {
    const conns = await axConnections(live[0]!);
    const per = live.map((node) => ({node, pids: conns.filter((c) => c.node === node).map((c) => c.pid)}));
    per.sort((a, b) => b.pids.length - a.pids.length);
    return per[0]!;
  };

  /**
   * Kills `node` and waits until every process that had a connection on it has reconnected; returns
   * how long each took (from the kill to its "amqp reconnected" line or, for this process, its broker's
   * `connected` event), keyed by role.
   */
  const killAndWatch = async (node: number, pids: number[]) => {
    const killedAt = Date.now();
    await cluster.kill(node);
    const watched = [
      ...procs.filter(({p}) => pids.includes(p.child.pid!)),
      ...(pids.includes(process.pid) ? [{role: 'producer', p: undefined}] : []),
    ];
    const reconnects: Record<string, {ms: number; attempt: number | null; node: string | null}> = {};
    await eventually(
      async () => {
        for (const w of watched) {
          if (reconnects[w.role]) continue;
          if (!w.p) {
            const at = producerConnected.find((t) => t > killedAt);
            if (at) reconnects[w.role] = {ms: at - killedAt, attempt: null, node: null};
            continue;
          }
          const line = logLines(w.p.stderr()).find((l) => l.msg === 'amqp reconnected' && Date.parse(l.time) > killedAt);
          if (line) reconnects[w.role] = {ms: Date.parse(line.time) - killedAt, attempt: line.attempt, node: line.node};
        }
        return Object.keys(reconnects).length === watched.length;
      },
      30_000,
      `every process on node ${node + 1} to reconnect (${watched.map((w) => w.role).join(', ')})`,
    );
    return reconnects;
  };

  it('ax reconnects to a live node, nothing is lost, the backlog drains', async () => {
    const vars = {...env.env, AX_LOG_LEVEL: 'info', AX_LOG_FORMAT: 'json'};
    const worker = ['worker', '--handlers', 'test/fixtures/handlers.js', '--pools', 'io'];
    procs.push({role: 'worker-a', p: spawnAx(worker, vars)}, {role: 'worker-b', p: spawnAx(worker, vars)});
    procs.push({role: 'scheduler', p: spawnAx(['scheduler'], vars)});

    // ax's queues are quorum queues with a replica on each of the three nodes.
    const queues = await axQueues(0);
    expect(queues.length).toBeGreaterThanOrEqual(7);
    const names = cluster.nodes.map((n) => n.name).sort();
    for (const q of queues)
      expect({name: q.name, type: q.type, members: [...q.members].sort()}).toEqual({name: q.name, type: 'quorum', members: names});

    // Every process is up and connected before the load starts.
    await eventually(async () => new Set((await axConnections(0)).map((c) => c.pid)).size === 4, 30_000, 'four ax processes connected');

    // 80 % run now, 20 % in 0.5-2.5 s (the scheduler rings them, through the faults too).
    const load = flushedLoad(client, {
      perTick: 20,
      tickMs: 100,
      make: (n) =>
        n % 5 === 0 ? {type: 'test_sleep', payload: {ms: 20}, delay: 500 + (n % 2000)} : {type: 'test_sleep', payload: {ms: 20}},
    });
    const t0 = Date.now();
    try {
      await sleep(len(4_000, 60_000));

      // First fault: the busiest node (four connections over three nodes: it holds two or more), then back.
      const first = await busiest([0, 1, 2]);
      expect(first.pids.length).toBeGreaterThanOrEqual(2);
      figures.firstKill = {node: first.node + 1, axConnections: first.pids.length, tasksSoFar: load.ids.length};
      const reconnects1 = await killAndWatch(first.node, first.pids);
      const restartAt = Date.now();
      await cluster.start(first.node);
      const others = [0, 1, 2].filter((i) => i !== first.node);
      await eventually(
        async () => (await axQueues(others[0]!)).every((q) => q.online.includes(cluster.nodes[first.node]!.name)),
        30_000,
        `node ${first.node + 1}'s replicas online again`,
      );
      figures.firstKill = {...(figures.firstKill as object), reconnects: reconnects1, backMs: Date.now() - restartAt};
      await sleep(len(3_000, 60_000));

      // Second fault: the busiest of the other two (connections do not move back to a returned node:
      // the four are on these two); it stays down to the end.
      const second = await busiest(others);
      expect(second.pids.length).toBeGreaterThanOrEqual(2);
      figures.secondKill = {node: second.node + 1, axConnections: second.pids.length, tasksSoFar: load.ids.length};
      const reconnects2 = await killAndWatch(second.node, second.pids);
      figures.secondKill = {...(figures.secondKill as object), reconnects: reconnects2};
      await sleep(len(4_000, 60_000));
      // The producer kept going on the nodes left.
      expect(load.ids.length).toBeGreaterThan((figures.secondKill as {tasksSoFar: number}).tasksSoFar);

      // Each process on a killed node is back within seconds, on another node.
      for (const [kill, node] of [
        [reconnects1, first.node],
        [reconnects2, second.node],
      ] as const)
        for (const r of Object.values(kill)) {
          expect(r.ms).toBeLessThan(10_000);
          if (r.node !== null) expect(r.node).not.toContain(`:${cluster.nodes[node]!.amqpPort}`);
        }
    } finally {
      await load.stop();
    }
    figures.loadMs = Date.now() - t0;
    figures.maxFlushMs = load.maxFlushMs;
    figures.tasks = load.ids.length;
    expect(load.failures).toEqual([]);

    // The backlog drains on the two nodes left.
    const stoppedAt = Date.now();
    await eventually(
      async () => {
        const open = await env.sql<Record<string, unknown>>(
          `SELECT id, state, attempt, run_at, published_at, updated_at, worker FROM tasks
            WHERE state NOT IN ('succeeded', 'dead', 'cancelled') ORDER BY updated_at LIMIT 5`,
        );
        // Thrown, so that a timeout says which tasks were left and how.
        if (open.length > 0) throw new Error(`tasks still open, the oldest: ${JSON.stringify(open)}`);
        return true;
      },
      len(60_000, 300_000),
      'the backlog to drain',
    );
    figures.drainMs = Date.now() - stoppedAt;
    figures.nodeMemoryMbAtEnd = mb(cluster.memoryKb());

    expect(await readWitnesses(env, load.ids, load.dueAt)).toEqual(cleanWitnesses(load.ids.length));
    const [succeeded] = await env.sql<{n: number}>("SELECT COUNT(*) AS n FROM tasks WHERE state = 'succeeded'");
    expect(Number(succeeded!.n)).toBe(load.ids.length);
  });

  it('tears the cluster down: no process of it left, no directory', async () => {
    const tag = cluster.nodes[0]!.name.split('_')[1]!;
    await cluster.stop();
    expect(existsSync(cluster.dir)).toBe(false);
    await eventually(async () => processesWith(`axc_${tag}_`).length === 0, 10_000, 'no process of the cluster');
  });
});

/** MB per node, rounded. */
const mb = (kb: Record<string, number>) => Object.fromEntries(Object.entries(kb).map(([k, v]) => [k, Math.round(v / 1024)]));

/** Pids of processes whose command line contains `text`. */
function processesWith(text: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(text)) out.push(Number(d));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}
