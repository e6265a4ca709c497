/**
 * The fixture of tests that spawn ax processes (`bin/run.js worker`, `scheduler`, the sidecar): a
 * fresh test environment, a producer client on it, and the processes to SIGKILL at the end.
 */
import {createClient, type AxClient} from '../../src/core/client.js';
import {createTestEnv, type TestEnv} from './env.js';
import {spawnAx, type Spawned} from './spawn.js';

export interface ProcessTestEnv {
  env: TestEnv;
  client: AxClient;
  /** Spawns `bin/run.js ...args` with `vars` (use env.env as the base); killed by dispose(). */
  spawn(args: string[], vars: Record<string, string>): Spawned;
  /** Keeps `p` to be killed by dispose() (processes started some other way). */
  track(p: Spawned): Spawned;
  /** SIGKILLs every process still running, closes the client and drops the environment. */
  dispose(): Promise<void>;
}

/** `amqpUrl`: AX_AMQP_URL of the environment (default the shared RabbitMQ), e.g. a test cluster's nodes. */
export async function createProcessTestEnv(o: {amqpUrl?: string} = {}): Promise<ProcessTestEnv> {
  const env = await createTestEnv({submitFlushMs: 20}, o.amqpUrl === undefined ? {} : {amqpUrl: o.amqpUrl});
  const client = createClient({
    ...env.rt,
    store: await env.store(),
    broker: await env.broker({reconnect: true}),
    release: async () => undefined,
  });
  const procs: Spawned[] = [];
  const track = (p: Spawned): Spawned => (procs.push(p), p);
  return {
    env,
    client,
    track,
    spawn: (args, vars) => track(spawnAx(args, vars)),
    async dispose() {
      for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await client.close();
      await env.dispose();
    },
  };
}

/** The JSON log lines in a process's stderr (other lines skipped). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const logLines = (stderr: string): any[] =>
  stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as unknown);
