// The durable floor of the latency benchmark (bench/latency.js): what submit → start costs on this
// machine with the fewest durable steps a MySQL + RabbitMQ queue can take, written with the raw
// drivers — one autocommit INSERT of the row, one publish awaited for its confirm (a quorum queue
// unless told otherwise, persistent), and on delivery one autocommit claim UPDATE guarded by the state, then "start".
// No batching, no flow step, no history, a three-column table, the consumer in the bench process:
// each choice makes it faster than ax can be, so it bounds ax from below. Same handle as the
// consumers (arm, count, latencies) so measure() runs it like the others.
import amqp from 'amqplib';
import mysql from 'mysql2/promise';
import {epochMs} from './latency-sink.js';

/** Opens the floor's table (in `mysqlUrl`'s database) and queue; `dispose()` removes both. */
export async function openRawFloor({mysqlUrl, amqpUrl, queue, queueType = 'quorum'}) {
  const pool = mysql.createPool({uri: mysqlUrl, connectionLimit: 8});
  await pool.query('CREATE TABLE raw_lat (id BIGINT PRIMARY KEY, state VARCHAR(16) NOT NULL, payload JSON NOT NULL) ENGINE=InnoDB');
  // TCP_NODELAY as ax's broker sets it: without it, Nagle holds each lone publish and ack ~40 ms.
  const conn = await amqp.connect(amqpUrl, {noDelay: true});
  const pub = await conn.createConfirmChannel();
  await pub.assertQueue(queue, {durable: true, arguments: {'x-queue-type': queueType}});
  const sub = await conn.createChannel();
  await sub.prefetch(500);
  let starts = [];
  let count = 0;
  let seq = 0;
  await sub.consume(queue, (m) => {
    if (!m) return;
    const {id, t, n} = JSON.parse(m.content.toString());
    void pool
      .query("UPDATE raw_lat SET state = 'running' WHERE id = ? AND state = 'submitted'", [id])
      .then(([r]) => {
        if (r.affectedRows === 1) {
          starts.push([id, t, epochMs(), n]);
          count++;
        }
        sub.ack(m);
      })
      .catch((e) => console.error('raw floor claim failed:', e?.message ?? e));
  });
  return {
    /** One task: INSERT (autocommit), then publish and wait for its confirm. */
    async submit(n, t) {
      const id = ++seq;
      await pool.query("INSERT INTO raw_lat (id, state, payload) VALUES (?, 'submitted', ?)", [id, JSON.stringify({t, n})]);
      await new Promise((resolve, reject) =>
        pub.publish('', queue, Buffer.from(JSON.stringify({id, t, n})), {persistent: true}, (err) => (err ? reject(err) : resolve())),
      );
    },
    worker: {
      arm: async () => {
        count = 0;
        starts = [];
        await pool.query('TRUNCATE TABLE raw_lat');
      },
      count: async () => count,
      latencies: async () => {
        const out = starts;
        starts = [];
        return {starts: out, claims: []};
      },
    },
    async dispose() {
      await pub.deleteQueue(queue).catch(() => undefined);
      await conn.close().catch(() => undefined);
      await pool.query('DROP TABLE IF EXISTS raw_lat').catch(() => undefined);
      await pool.end();
    },
  };
}
