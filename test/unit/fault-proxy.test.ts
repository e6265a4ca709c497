/**
 * The fault proxy the fault scenarios put between ax and its servers (test/helpers/fault-proxy.ts),
 * against an echo server on loopback: each fault does what the scenarios rely on.
 */
import {createConnection, createServer, type AddressInfo, type Server, type Socket} from 'node:net';
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest';
import {startFaultProxy, targetOf, type FaultProxy} from '../helpers/fault-proxy.js';
import {eventually} from '../helpers/env.js';

describe('fault proxy', () => {
  let echo: Server;
  let received = 0;
  let proxy: FaultProxy;
  const clients: Socket[] = [];

  beforeAll(async () => {
    echo = createServer((s) => {
      s.on('data', (d: Buffer) => {
        received += d.length;
        s.write(d);
      });
      s.on('error', () => undefined);
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  });
  afterAll(async () => new Promise<void>((r) => echo.close(() => r())));
  afterEach(async () => {
    for (const c of clients.splice(0)) c.destroy();
    await proxy?.close();
    received = 0;
  });

  const start = async () => (proxy = await startFaultProxy({host: '127.0.0.1', port: (echo.address() as AddressInfo).port}));

  /** A client on the proxy; `got()` is what came back so far. */
  const client = async () => {
    const s = createConnection({host: '127.0.0.1', port: proxy.port});
    clients.push(s);
    let data = '';
    let error: string | undefined;
    let closed = false;
    s.on('data', (d: Buffer) => (data += d.toString()));
    s.on('error', (e: NodeJS.ErrnoException) => (error = e.code));
    s.on('close', () => (closed = true));
    await new Promise<void>((r) => s.once('connect', () => r()));
    return {s, got: () => data, error: () => error, closed: () => closed};
  };

  it('forwards both ways and counts the bytes', async () => {
    await start();
    const c = await client();
    c.s.write('hello');
    await eventually(async () => c.got() === 'hello', 5000, 'the echo');
    expect(proxy.connections()[0]!.bytes).toEqual({up: 5, down: 5});
  });

  it('latency delays every chunk each way, in order', async () => {
    await start();
    proxy.set({kind: 'latency', ms: 150});
    const c = await client();
    const t0 = Date.now();
    for (const part of ['a', 'b', 'c']) c.s.write(part);
    await eventually(async () => c.got() === 'abc', 5000, 'the delayed echo');
    // Up and down are each held 150 ms: nothing can come back sooner than 300 ms.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(295);
  });

  it('a blackhole accepts bytes and delivers none until healed, then all of them in order', async () => {
    await start();
    const c = await client();
    proxy.set({kind: 'blackhole'});
    c.s.write('one,');
    c.s.write('two');
    const conn = proxy.connections()[0]!;
    await eventually(async () => conn.received.up === 7, 5000, 'the proxy to accept the bytes');
    expect(received).toBe(0);
    expect(conn.bytes.up).toBe(0);
    expect(c.closed()).toBe(false);
    proxy.heal();
    await eventually(async () => c.got() === 'one,two', 5000, 'the held bytes');
  });

  it('refuse closes new connections at once; down also resets the open ones', async () => {
    await start();
    const before = await client();
    proxy.down();
    await eventually(async () => before.closed(), 5000, 'the open connection to be reset');
    expect(before.error()).toBe('ECONNRESET');
    const s = createConnection({host: '127.0.0.1', port: proxy.port});
    clients.push(s);
    s.on('error', () => undefined);
    await new Promise<void>((r) => s.once('close', () => r()));
    expect(proxy.accepted).toBe(2);
    proxy.heal();
    const after = await client();
    after.s.write('back');
    await eventually(async () => after.got() === 'back', 5000, 'forwarding after heal');
  });

  it('closeAfter lets N more bytes through, then closes the connection', async () => {
    await start();
    const c = await client();
    proxy.set({kind: 'closeAfter', bytes: 4});
    c.s.write('0123456789');
    await eventually(async () => c.closed(), 5000, 'the close');
    expect(received).toBe(4);
  });

  it('a fault on one connection leaves the others alone; the proxy-wide set replaces it', async () => {
    await start();
    const a = await client();
    const b = await client();
    await eventually(async () => proxy.connections().length === 2, 5000, 'both connections');
    const [ca] = proxy.connections().sort((x, y) => x.id - y.id);
    ca!.set({kind: 'blackhole'});
    a.s.write('A');
    b.s.write('B');
    await eventually(async () => b.got() === 'B', 5000, 'the healthy connection');
    expect(a.got()).toBe('');
    proxy.heal();
    await eventually(async () => a.got() === 'A', 5000, 'the held byte after heal');
  });

  it('freezeOn with deliver: the matching chunk reaches the server, then every connection is held both ways', async () => {
    await start();
    const a = await client();
    const b = await client();
    proxy.set({kind: 'freezeOn', pattern: 'COMMIT', deliver: true});
    const frozen = proxy.frozen();
    // The pattern cut between two chunks is still seen (the first chunk is echoed before the second is sent).
    a.s.write('INSERT;COM');
    await eventually(async () => a.got() === 'INSERT;COM', 5000, 'the first chunk through');
    a.s.write('MIT');
    await frozen;
    await eventually(async () => received === 'INSERT;COMMIT'.length, 5000, 'the matching chunk at the server');
    b.s.write('late');
    await eventually(
      async () => proxy.connections().every((c) => c.received.up + c.received.down > 0),
      5000,
      'the late bytes at the proxy',
    );
    expect(a.got()).toBe('INSERT;COM'); // the server's echo of MIT is held
    expect(b.got()).toBe('');
    expect(received).toBe('INSERT;COMMIT'.length);
    proxy.reset();
    await eventually(async () => a.closed() && b.closed(), 5000, 'the reset');
  });

  it('freezeOn without deliver holds the matching chunk itself: the server never sees it', async () => {
    await start();
    const c = await client();
    proxy.set({kind: 'freezeOn', pattern: 'COMMIT', deliver: false});
    const frozen = proxy.frozen();
    c.s.write('INSERT');
    await eventually(async () => c.got() === 'INSERT', 5000, 'the statement before');
    c.s.write('COMMIT');
    await frozen;
    expect(received).toBe('INSERT'.length);
    proxy.heal();
    await eventually(async () => c.got() === 'INSERTCOMMIT', 5000, 'what was held, after heal');
  });

  it('rewrites a URL to go through it', async () => {
    await start();
    expect(proxy.url('mysql://root@127.0.0.1:3306/ax_test')).toBe(`mysql://root@127.0.0.1:${proxy.port}/ax_test`);
    expect(proxy.url('amqp://guest:guest@localhost:5672/vh')).toBe(`amqp://guest:guest@127.0.0.1:${proxy.port}/vh`);
    expect(targetOf('amqp://guest:guest@localhost/vh')).toEqual({host: 'localhost', port: 5672});
  });
});
