#!/usr/bin/env node
/**
 * HEALTHCHECK of the ax image (deploy/Dockerfile): GET /healthz (or the path given as the first
 * argument, e.g. /readyz) on the health endpoint of the container's main process, asked from inside
 * the container so the 127.0.0.1 default works. Exit 0 on 200, 1 otherwise (2 s timeout).
 *
 * One image runs several roles, so the port is found from the main process itself: its
 * `--health-port` / `--health-host` flags (read from /proc/<pid>/cmdline, pid 1 unless
 * AX_HEALTHCHECK_PID says otherwise), else AX_METRICS_PORT / AX_METRICS_HOST (ax worker, ax
 * scheduler), else for the relay (`ax-relay`, sidecar/main.js) AX_RELAY_HEALTH_PORT (default 8081) /
 * AX_RELAY_HEALTH_HOST. No port, or port 0 (`ax migrate`, `ax --help`): nothing to ask, exit 0.
 */
import {readFileSync} from 'node:fs';

const path = process.argv[2] ?? '/healthz';
const env = process.env;

/** The main process's arguments, or [] when they cannot be read (not Linux, another pid namespace). */
function mainArgs() {
  try {
    return readFileSync(`/proc/${env.AX_HEALTHCHECK_PID || 1}/cmdline`, 'utf8')
      .split('\0')
      .filter(Boolean);
  } catch {
    return [];
  }
}

/** The value of `--name value` or `--name=value` in args. */
function flag(args, name) {
  for (const [i, a] of args.entries()) {
    if (a === `--${name}`) return args[i + 1];
    if (a.startsWith(`--${name}=`)) return a.slice(name.length + 3);
  }
  return undefined;
}

const args = mainArgs();
const relay = args.some((a) => a.endsWith('sidecar/main.js'));
const port = Number(flag(args, 'health-port') ?? (relay ? env.AX_RELAY_HEALTH_PORT || 8081 : env.AX_METRICS_PORT || 0));
const bound = flag(args, 'health-host') ?? (relay ? env.AX_RELAY_HEALTH_HOST : env.AX_METRICS_HOST) ?? '127.0.0.1';
// A wildcard bind is reachable on loopback; anything else is asked where it listens.
const host = bound === '0.0.0.0' || bound === '' ? '127.0.0.1' : bound === '::' ? '[::1]' : bound.includes(':') ? `[${bound}]` : bound;
if (!Number.isInteger(port) || port <= 0) process.exit(0);
try {
  const res = await fetch(`http://${host}:${port}${path}`, {signal: AbortSignal.timeout(2000)});
  process.exit(res.status === 200 ? 0 : 1);
} catch (e) {
  process.stderr.write(`health check of http://${host}:${port}${path} failed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
}
