/**
 * A tiny TCP proxy on loopback for "server down" tests that must not stop the shared MariaDB or
 * RabbitMQ: while `down`, it accepts each connection and closes it at once (the client sees the
 * connection reset/closed, as from a server that is restarting); `up()` makes it forward new
 * connections to the target.
 */
import {createConnection, createServer, type Server, type Socket} from 'node:net';
import type {AddressInfo} from 'node:net';

export interface TcpProxy {
  port: number;
  /** Connections accepted so far (refused ones included). */
  readonly connections: number;
  up(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: {host: string; port: number}): Promise<TcpProxy> {
  let forwarding = false;
  let connections = 0;
  const sockets = new Set<Socket>();
  const track = (s: Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const server: Server = createServer((client) => {
    connections++;
    track(client);
    if (!forwarding) {
      client.destroy();
      return;
    }
    const upstream = createConnection(target);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return connections;
    },
    up: () => void (forwarding = true),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
