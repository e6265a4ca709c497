/** Spawning the built CLI (`bin/run.js`) as a real process, the way operators run it. */
import {spawn, type ChildProcess} from 'node:child_process';
import {fileURLToPath} from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface Spawned {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{code: number | null; signal: NodeJS.Signals | null}>;
}

/** Starts `node bin/run.js ...args` with the test environment (NODE_ENV=production: load dist). */
export function spawnAx(args: string[], env: Record<string, string>, input?: string): Spawned {
  const child = spawn(process.execPath, ['bin/run.js', ...args], {
    cwd: ROOT,
    env: {...process.env, ...env, NODE_ENV: 'production'},
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  if (input !== undefined) child.stdin?.end(input);
  const exited = new Promise<{code: number | null; signal: NodeJS.Signals | null}>((resolve) =>
    child.on('exit', (code, signal) => resolve({code, signal})),
  );
  return {child, stdout: () => out, stderr: () => err, exited};
}
