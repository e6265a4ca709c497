import {execFileSync} from 'node:child_process';
import amqp from 'amqplib';
import {brokerConformance} from '../conformance/broker.js';
import {AMQP_URL, createTestEnv} from '../helpers/env.js';

brokerConformance('RabbitMQ', async () => {
  const env = await createTestEnv({doorbellBatch: 1});
  const broker = await env.broker({reconnect: true});
  const other = await env.broker({reconnect: true});
  const batchedEnv = await createTestEnv({doorbellBatch: 3});
  const batched = await batchedEnv.broker();
  const undeclaredEnv = await createTestEnv();
  const undeclared = await undeclaredEnv.broker({declare: false});
  const conn = await amqp.connect(AMQP_URL);
  const ch = await conn.createConfirmChannel();
  const names = broker.names;
  return {
    broker,
    other,
    batched,
    undeclared,
    async takePoison() {
      const out: Array<{body: string; reason: string}> = [];
      for (let m = await ch.get(names.poisonQueue); m; m = await ch.get(names.poisonQueue)) {
        out.push({body: m.content.toString(), reason: String(m.properties.headers?.['x-ax-reason'])});
        ch.ack(m);
      }
      return out;
    },
    async publishRaw(pool, body) {
      ch.publish(names.exchange, names.routingKey(pool), body, {persistent: true});
      await ch.waitForConfirms();
    },
    async killConnections() {
      // Only ax's connections (named "ax <pid>"), not the harness's own.
      const list = execFileSync('rabbitmqctl', ['-q', 'list_connections', 'pid', 'client_properties'], {encoding: 'utf8'});
      for (const line of list.split('\n')) {
        // The closing quote: pid 12 must not match another test process's "ax 1234".
        if (!line.includes(`"ax ${process.pid}"`)) continue;
        const pid = line.split('\t')[0];
        if (pid) execFileSync('rabbitmqctl', ['-q', 'close_connection', pid, 'test: server-side close'], {encoding: 'utf8'});
      }
    },
    async dispose() {
      await conn.close().catch(() => undefined);
      await batchedEnv.dispose();
      await undeclaredEnv.dispose();
      await env.dispose();
    },
  };
});
