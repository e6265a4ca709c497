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
  return spawnNode(['bin/run.js', ...args], env, input);
}

/**
 * Starts `node ...args` in the checkout (a script of test/fixtures, say) with `env` added,
 * NODE_ENV=production. `input`: written to its stdin, which is then closed; `null`: stdin is a pipe
 * left open (write to `child.stdin`); none: no stdin.
 */
export function spawnNode(args: string[], env: Record<string, string>, input?: string | null): Spawned {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {...process.env, ...env, NODE_ENV: 'production'},
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  if (typeof input === 'string') child.stdin?.end(input);
  const exited = new Promise<{code: number | null; signal: NodeJS.Signals | null}>((resolve) =>
    child.on('exit', (code, signal) => resolve({code, signal})),
  );
  return {child, stdout: () => out, stderr: () => err, exited};
}

/** What one CLI run left behind. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON, when it is JSON. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

/**
 * Runs the built CLI to completion with `env` on top of this process's (NODE_ENV=production: load
 * dist; AX_CONFIG cleared), in `cwd`; stdin is closed unless `stdin` is given.
 */
export function runCli(args: string[], opts: {env: Record<string, string | undefined>; cwd: string; stdin?: string}): Promise<CliRun> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [`${ROOT}/bin/run.js`, ...args], {
      cwd: opts.cwd,
      env: {...process.env, NODE_ENV: 'production', AX_CONFIG: '', ...opts.env},
      stdio: [opts.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', fail);
    child.on('close', (code) => {
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      done({code, stdout, stderr, json});
    });
    if (opts.stdin !== undefined) child.stdin?.end(opts.stdin);
  });
}
