#!/usr/bin/env node
/**
 * Liveness probe for the container (Dockerfile HEALTHCHECK, or a Kubernetes exec probe): GET /healthz
 * (or the path given as the first argument, e.g. /readyz) on AX_RELAY_HEALTH_HOST:AX_RELAY_HEALTH_PORT,
 * from inside the container, so the 127.0.0.1 default works. Exit 0 on 200, 1 otherwise (2 s timeout).
 * With AX_RELAY_HEALTH_PORT=0 there is no endpoint to ask and it exits 0.
 */
const path = process.argv[2] ?? '/healthz';
const port = Number(process.env.AX_RELAY_HEALTH_PORT || 8081);
const bound = process.env.AX_RELAY_HEALTH_HOST || '127.0.0.1';
// A wildcard bind is reachable on loopback; anything else is asked where it listens.
const host = bound === '0.0.0.0' ? '127.0.0.1' : bound === '::' ? '[::1]' : bound.includes(':') ? `[${bound}]` : bound;
if (port === 0) process.exit(0);
try {
  const res = await fetch(`http://${host}:${port}${path}`, {signal: AbortSignal.timeout(2000)});
  process.exit(res.status === 200 ? 0 : 1);
} catch (e) {
  process.stderr.write(`health check failed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
}
