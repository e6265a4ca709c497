/**
 * The interactive side of scripts/rabbit-cluster.sh: starts a test cluster (rabbit-cluster.ts),
 * prints its AX_AMQP_URL, and runs `kill N`, `start N`, `status` and `quit` from stdin. The cluster
 * is torn down on quit, end of input, SIGINT or SIGTERM.
 */
import {createInterface} from 'node:readline';
import {startRabbitCluster} from './rabbit-cluster.js';

const say = (s: string): void => void process.stdout.write(`${s}\n`);

say('starting a 3-node RabbitMQ cluster (about 30 s)…');
const cluster = await startRabbitCluster();
const live = (): number[] => cluster.nodes.map((_, i) => i).filter((i) => cluster.pid(i) !== undefined);
say(`nodes: ${cluster.nodes.map((n) => `${n.name} (AMQP ${n.amqpPort})`).join(', ')}`);
say(`export AX_AMQP_URL='${cluster.url}'`);
say('commands: kill N | start N | status | quit');

let stopping = false;
const stop = async (): Promise<void> => {
  if (stopping) return;
  stopping = true;
  await cluster.stop();
  say('cluster stopped, its directory removed');
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());

const nodeArg = (arg: string | undefined): number => {
  const n = Number(arg);
  if (!Number.isInteger(n) || n < 1 || n > cluster.nodes.length) throw new Error(`give a node number from 1 to ${cluster.nodes.length}`);
  return n - 1;
};

const rl = createInterface({input: process.stdin});
rl.on('close', () => void stop());
for await (const line of rl) {
  const [cmd, arg] = line.trim().split(/\s+/);
  try {
    if (cmd === 'quit' || cmd === 'exit') break;
    else if (cmd === 'kill') {
      await cluster.kill(nodeArg(arg));
      say(`node ${arg} killed`);
    } else if (cmd === 'start') {
      await cluster.start(nodeArg(arg));
      say(`node ${arg} is back`);
    } else if (cmd === 'status') {
      const via = live()[0];
      if (via === undefined) say('no node running');
      else {
        say(`running: ${(await cluster.running(via)).join(', ')}`);
        say((await cluster.ctl(via, ['-q', 'list_queues', 'name', 'type', 'members', 'online', 'leader'])).trim() || '(no queues)');
      }
      say(
        `memory (MB): ${JSON.stringify(Object.fromEntries(Object.entries(cluster.memoryKb()).map(([k, v]) => [k, Math.round(v / 1024)])))}`,
      );
    } else if (cmd) say('commands: kill N | start N | status | quit');
  } catch (e) {
    say(`error: ${e instanceof Error ? e.message : String(e)}`);
  }
}
await stop();
