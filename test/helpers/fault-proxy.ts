/**
 * A small TCP proxy on loopback that injects network faults between an ax process and MariaDB or
 * RabbitMQ (issue 24; no such tool is packaged for this machine). Point a process at `proxy.url(…)`
 * and change the network under it while it runs:
 *
 * - `latency`: every chunk, both ways, is delivered `ms` after it arrived, in order;
 * - `blackhole`: bytes are accepted and held, never delivered while it lasts — the connection neither
 *   works nor fails, as in a partition. Lifting it delivers what was held, in order (TCP would
 *   retransmit it once the path heals); a process that gave up meanwhile has closed its socket;
 * - `refuse`: new connections are accepted and closed at once (a server that is down or restarting);
 * - `closeAfter`: a connection is closed (FIN both ways) once `bytes` more bytes have passed;
 * - `reset()`: every open connection is reset (RST) now;
 * - `freezeOn`: forward normally until a client chunk contains `pattern` (an SQL text such as
 *   `COMMIT`: mysql2's text protocol carries it as is), then hold everything of every connection,
 *   both ways — the process stands at that exact step as seen from the server. With `deliver` the
 *   matching chunk still reaches the server (the statement runs, its answer is held); without, it is
 *   held too (the statement never ran). `frozen()` resolves when it happens; the fault then reads
 *   as a blackhole. Meant for kill -9 at a chosen step: kill, then `reset()` drops what was held,
 *   as the dead process's unsent bytes would be.
 *
 * A fault applies to every connection (`set`) or to one (`connections()[i].set`); `set` on the proxy
 * replaces the per-connection ones. A side's FIN travels like its bytes (a blackhole holds it too, as
 * a partition would); a side's error or reset closes the other at once. Backpressure is not
 * modelled: fine for test volumes.
 */
import {createConnection, createServer, type AddressInfo, type Server, type Socket} from 'node:net';

export type Fault =
  | {kind: 'none'}
  | {kind: 'latency'; ms: number}
  | {kind: 'blackhole'}
  | {kind: 'refuse'}
  | {kind: 'closeAfter'; bytes: number}
  | {kind: 'freezeOn'; pattern: string; deliver: boolean};

export interface ProxiedConnection {
  readonly id: number;
  /** Bytes delivered client → server and server → client. */
  readonly bytes: {up: number; down: number};
  /** Bytes accepted from either side (delivered or still held). */
  readonly received: {up: number; down: number};
  /** The local port of the proxy's connection to the server: how the server names this client (e.g. MariaDB's PROCESSLIST.HOST). */
  readonly upstreamPort: number | undefined;
  /** This connection's own fault (until the proxy's `set` replaces it). */
  set(fault: Fault): void;
  /** Resets this connection (RST to the client, the server side destroyed). */
  reset(): void;
}

export interface FaultProxy {
  readonly port: number;
  /** Connections accepted so far (refused ones included). */
  readonly accepted: number;
  /** `base` (a mysql:// or amqp:// URL) with its host and port replaced by the proxy's. */
  url(base: string): string;
  /** The fault for every connection, open and new. */
  set(fault: Fault): void;
  /** No fault: deliver what a blackhole held and forward normally. */
  heal(): void;
  /** The server "goes down": refuse new connections and reset the open ones. */
  down(): void;
  /** Resets every open connection now. */
  reset(): void;
  /** Resolves when a `freezeOn` fault (set before or after this call) matched and froze the proxy. */
  frozen(): Promise<void>;
  /** The open connections. */
  connections(): ProxiedConnection[];
  close(): Promise<void>;
}

/** A `host:port` target from a URL such as mysql://root@127.0.0.1:3306/db. */
export function targetOf(url: string): {host: string; port: number} {
  const u = new URL(url);
  return {host: u.hostname, port: Number(u.port) || (u.protocol.startsWith('amqp') ? 5672 : 3306)};
}

const NONE: Fault = {kind: 'none'};

/** One direction of a connection: chunks queued with the time they may be delivered. */
class Direction {
  /** `null`: the sender's FIN, delivered as an end after the bytes before it. */
  private readonly queue: Array<{at: number; chunk: Buffer | null}> = [];
  private timer: NodeJS.Timeout | undefined;
  delivered = 0;
  received = 0;

  /** The last bytes of the previous chunk, so that a pattern cut between two chunks is still seen. */
  private tail = Buffer.alloc(0);

  constructor(
    private readonly to: Socket,
    private readonly conn: Conn,
    private readonly upstream: boolean,
  ) {}

  push(chunk: Buffer | null): void {
    this.received += chunk?.length ?? 0;
    const f = this.conn.fault();
    if (f.kind === 'freezeOn' && this.upstream && chunk && this.queue.length === 0 && this.matches(chunk, f.pattern)) {
      this.conn.freeze();
      if (f.deliver && !this.to.destroyed) {
        this.to.write(chunk);
        this.delivered += chunk.length;
      } else this.queue.push({at: Date.now(), chunk});
      return;
    }
    this.queue.push({at: Date.now() + (f.kind === 'latency' ? f.ms : 0), chunk});
    this.pump();
  }

  private matches(chunk: Buffer, pattern: string): boolean {
    const seen = Buffer.concat([this.tail, chunk]);
    this.tail = seen.subarray(Math.max(0, seen.length - pattern.length + 1));
    return seen.includes(pattern);
  }

  pump(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.conn.fault().kind === 'blackhole') return;
    while (this.queue.length > 0 && !this.to.destroyed) {
      const head = this.queue[0]!;
      const wait = head.at - Date.now();
      if (wait > 0) {
        this.timer = setTimeout(() => this.pump(), wait);
        return;
      }
      this.queue.shift();
      if (head.chunk === null) {
        this.to.end();
        continue;
      }
      const room = this.conn.budget();
      const chunk = room < head.chunk.length ? head.chunk.subarray(0, room) : head.chunk;
      if (chunk.length > 0) this.to.write(chunk);
      this.delivered += chunk.length;
      this.conn.spent(chunk.length);
      if (this.conn.budget() <= 0) {
        this.conn.end();
        return;
      }
    }
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.queue.length = 0;
  }
}

class Conn implements ProxiedConnection {
  private own: Fault | undefined;
  private left = Infinity;
  readonly up: Direction;
  readonly down: Direction;

  constructor(
    readonly id: number,
    private readonly client: Socket,
    private readonly server: Socket,
    private readonly proxyFault: () => Fault,
    /** Turns the proxy's fault into a blackhole for every connection (a `freezeOn` matched). */
    readonly freeze: () => void,
  ) {
    this.up = new Direction(server, this, true);
    this.down = new Direction(client, this, false);
    this.arm(this.fault());
  }

  get bytes() {
    return {up: this.up.delivered, down: this.down.delivered};
  }

  get received() {
    return {up: this.up.received, down: this.down.received};
  }

  get upstreamPort() {
    return this.server.localPort;
  }

  fault(): Fault {
    return this.own ?? this.proxyFault();
  }

  set(fault: Fault): void {
    this.own = fault;
    this.arm(fault);
  }

  /** The proxy-wide fault changed: this connection follows it again. */
  follow(): void {
    this.own = undefined;
    this.arm(this.fault());
  }

  budget(): number {
    return this.left;
  }

  spent(n: number): void {
    this.left -= n;
  }

  end(): void {
    this.up.stop();
    this.down.stop();
    this.client.end();
    this.server.end();
  }

  reset(): void {
    this.up.stop();
    this.down.stop();
    this.client.resetAndDestroy();
    this.server.resetAndDestroy();
  }

  private arm(f: Fault): void {
    this.left = f.kind === 'closeAfter' ? f.bytes : Infinity;
    this.up.pump();
    this.down.pump();
  }
}

/** Starts a proxy on 127.0.0.1 (a free port) to `target`, forwarding with no fault. */
export async function startFaultProxy(target: {host: string; port: number}, initial: Fault = NONE): Promise<FaultProxy> {
  let fault = initial;
  let accepted = 0;
  const onFrozen: Array<() => void> = [];
  const freeze = (): void => {
    proxy.set({kind: 'blackhole'});
    for (const f of onFrozen.splice(0)) f();
  };
  const open = new Map<number, Conn>();
  const sockets = new Set<Socket>();
  const track = (s: Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const server: Server = createServer({allowHalfOpen: true}, (client) => {
    const id = ++accepted;
    track(client);
    if (fault.kind === 'refuse') {
      client.destroy();
      return;
    }
    const upstream = createConnection({...target, allowHalfOpen: true});
    track(upstream);
    const conn = new Conn(id, client, upstream, () => fault, freeze);
    open.set(id, conn);
    client.on('data', (d: Buffer) => conn.up.push(d));
    upstream.on('data', (d: Buffer) => conn.down.push(d));
    client.on('end', () => conn.up.push(null));
    upstream.on('end', () => conn.down.push(null));
    let closed = 0;
    const gone = (hadError: boolean): void => {
      if (hadError || ++closed === 2) {
        open.delete(id);
        conn.up.stop();
        conn.down.stop();
        client.destroy();
        upstream.destroy();
      }
    };
    client.on('close', gone);
    upstream.on('close', gone);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const proxy: FaultProxy = {
    port,
    get accepted() {
      return accepted;
    },
    url(base) {
      const u = new URL(base);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    set(f) {
      fault = f;
      for (const c of open.values()) c.follow();
    },
    heal: () => proxy.set(NONE),
    down() {
      proxy.set({kind: 'refuse'});
      proxy.reset();
    },
    reset() {
      for (const c of [...open.values()]) c.reset();
    },
    connections: () => [...open.values()],
    frozen: () => new Promise<void>((resolve) => onFrozen.push(resolve)),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  return proxy;
}
