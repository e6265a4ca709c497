/**
 * openDb leaves nothing open when its first query fails: a connect-retry loop must not pile up
 * sockets that keep the process alive. The server here completes the MySQL handshake (through a
 * loopback relay to the real MariaDB) and then stops answering, at the probe `SELECT 1`.
 * And a transaction its process abandons (cut off mid-transaction) frees its locks.
 */
import {createConnection, createServer, type Socket} from 'node:net';
import type {AddressInfo} from 'node:net';
import {afterEach, describe, expect, it} from 'vitest';
import {exec, openDb, select} from '../../src/core/store/mysql/db.js';

const target = new URL(process.env.AX_TEST_MYSQL_ROOT ?? 'mysql://root@127.0.0.1:3306');

describe('openDb when the server stops answering after the handshake', () => {
  const open = new Set<Socket>();
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    for (const s of open) s.destroy();
    await close?.();
  });

  it('fails with unavailable and closes every socket it opened', async () => {
    let accepted = 0;
    let clientClosed!: () => void;
    const closed = new Promise<void>((r) => (clientClosed = r));
    const server = createServer((client) => {
      accepted++;
      open.add(client);
      client.on('close', () => {
        open.delete(client);
        clientClosed();
      });
      client.on('error', () => client.destroy());
      const upstream = createConnection({host: target.hostname, port: Number(target.port || 3306)});
      upstream.on('error', () => upstream.destroy());
      client.on('close', () => upstream.destroy());
      let stalled = false;
      client.on('data', (d: Buffer) => {
        if (d.includes('SELECT 1')) stalled = true;
        if (!stalled) upstream.write(d);
      });
      upstream.on('data', (d: Buffer) => client.write(d));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    close = () => new Promise((r) => server.close(() => r()));
    const port = (server.address() as AddressInfo).port;
    const url = `mysql://${target.username || 'root'}@127.0.0.1:${port}/mysql`;
    await expect(openDb({url, createDatabase: false, queryTimeoutMs: 300})).rejects.toMatchObject({code: 'unavailable'});
    expect(accepted).toBe(1);
    // The client side of the stalled connection is gone: nothing keeps the process alive.
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      closed.then(() => 'closed'),
      new Promise((r) => (timer = setTimeout(() => r('still open after 2 s'), 2000))),
    ]);
    clearTimeout(timer);
    expect(outcome).toBe('closed');
    expect(open.size).toBe(0);
  });
});

describe('a transaction its process abandons', () => {
  it('is rolled back by MariaDB after idleTxTimeoutMs, so the rows it locked are free again', async () => {
    const name = `axt_idle_${process.pid}_${Date.now()}`;
    const url = `mysql://${target.username || 'root'}@${target.host}/${name}`;
    const holder = await openDb({url, createDatabase: true, queryTimeoutMs: 30_000, idleTxTimeoutMs: 1000, connectionLimit: 1});
    const other = await openDb({url, createDatabase: false, queryTimeoutMs: 30_000, connectionLimit: 1});
    let c: Awaited<ReturnType<typeof holder.pool.getConnection>> | undefined;
    try {
      await exec(holder, holder.pool, 'CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL)');
      await exec(holder, holder.pool, 'INSERT INTO t VALUES (1, 0)');
      // The holder locks the row and then goes silent, as a process cut off from MariaDB does.
      c = await holder.pool.getConnection();
      await c.query('START TRANSACTION');
      await c.query('SELECT v FROM t WHERE id = 1 FOR UPDATE');
      const [setting] = await select(holder, c, 'SELECT @@session.idle_transaction_timeout AS s');
      expect(Number(setting!.s)).toBe(1);
      // Another session waits for the lock (up to 10 s): without the timeout it would time out.
      const wc = await other.pool.getConnection();
      await wc.query('SET SESSION innodb_lock_wait_timeout = 10');
      const res = await exec(other, wc, 'UPDATE t SET v = v + 1 WHERE id = 1');
      expect(res.affectedRows).toBe(1);
      wc.release();
    } finally {
      c?.destroy();
      await exec(other, other.pool, `DROP DATABASE \`${name}\``).catch(() => undefined);
      await holder.pool.end().catch(() => undefined);
      await other.pool.end().catch(() => undefined);
    }
  });
});
