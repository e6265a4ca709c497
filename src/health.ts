/**
 * The HTTP endpoint of the long-running processes (ax worker, ax scheduler, ax relay, the relay
 * sidecar): /healthz, /readyz and /metrics on one port. Outside src/cli so the sidecar entry
 * (src/relay.ts) imports no CLI code.
 */
import {createServer, type Server} from 'node:http';
import type {AddressInfo} from 'node:net';
import {AxError, errorMessage} from './core/errors.js';

export interface HealthServer {
  /** The port actually bound (useful with port 0 in tests). */
  port: number;
  close(): Promise<void>;
}

export interface HealthServerOptions {
  host: string;
  port: number;
  ready: () => boolean;
  details: () => unknown;
  /** The Prometheus exposition text for `GET /metrics` (absent: 404). */
  metrics?: () => Promise<{contentType: string; body: string}>;
}

/**
 * Serves `GET /healthz` (200 while the process runs) and `GET /readyz` (200 when `ready()` says so,
 * else 503), each with a small JSON body from `details()`, and `GET /metrics` (the registry's text;
 * 500 with the error when rendering failed). Binds to `host` (127.0.0.1 by default in
 * configuration: nothing here is for the network unless you say so). Rejects with
 * AxError('conflict') when the port is in use and AxError('invalid_input') when the address cannot
 * be bound (not local, a privileged port, a bad host); nothing listens then.
 */
export function startHealthServer(opts: HealthServerOptions): Promise<HealthServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path === '/metrics' && opts.metrics) {
      opts.metrics().then(
        (m) => res.writeHead(200, {'content-type': m.contentType}).end(m.body),
        (e: unknown) => res.writeHead(500, {'content-type': 'text/plain'}).end(`metrics failed: ${errorMessage(e)}\n`),
      );
      return;
    }
    if (req.method !== 'GET' || (path !== '/healthz' && path !== '/readyz')) {
      res.writeHead(404, {'content-type': 'application/json'}).end('{"error":"not found"}');
      return;
    }
    const ok = path === '/healthz' || opts.ready();
    res.writeHead(ok ? 200 : 503, {'content-type': 'application/json'}).end(JSON.stringify({ok, ...((opts.details() as object) ?? {})}));
  });
  return new Promise((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => reject(listenError(e, opts.host, opts.port)));
    server.listen(opts.port, opts.host, () => {
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () => new Promise<void>((r) => server.close(() => r())),
      });
    });
  });
}

/** A listen failure as an AxError that says what to change. */
function listenError(e: NodeJS.ErrnoException, host: string, port: number): AxError {
  const where = `${host}:${port}`;
  const fix = 'choose another with --health-port / --health-host (AX_METRICS_PORT / AX_METRICS_HOST; the sidecar: AX_RELAY_HEALTH_*)';
  if (e.code === 'EADDRINUSE')
    return new AxError('conflict', `cannot serve /metrics and health on ${where}: the port is in use; ${fix}`, {cause: e});
  return new AxError('invalid_input', `cannot serve /metrics and health on ${where}: ${e.code ?? errorMessage(e)}; ${fix}`, {cause: e});
}
