/** The health endpoints of the long-running processes (ax worker, ax scheduler, the relay sidecar): outside src/cli so the sidecar entry (src/relay.ts) imports no CLI code. */
import {createServer, type Server} from 'node:http';
import type {AddressInfo} from 'node:net';

export interface HealthServer {
  /** The port actually bound (useful with port 0 in tests). */
  port: number;
  close(): Promise<void>;
}

/**
 * Serves `GET /healthz` (200 while the process runs) and `GET /readyz` (200 when `ready()` says so,
 * else 503), each with a small JSON body from `details()`. Binds to `host` (127.0.0.1 by default in
 * configuration: health is not for the network unless you say so).
 */
export function startHealthServer(opts: {host: string; port: number; ready: () => boolean; details: () => unknown}): Promise<HealthServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || (path !== '/healthz' && path !== '/readyz')) {
      res.writeHead(404, {'content-type': 'application/json'}).end('{"error":"not found"}');
      return;
    }
    const ok = path === '/healthz' || opts.ready();
    res.writeHead(ok ? 200 : 503, {'content-type': 'application/json'}).end(JSON.stringify({ok, ...((opts.details() as object) ?? {})}));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () => new Promise<void>((r) => server.close(() => r())),
      });
    });
  });
}
