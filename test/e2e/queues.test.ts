/**
 * `ax queues` against the real RabbitMQ: depth and consumers of each pool queue and the poison
 * queue of the configured cell, a cell whose queues were never declared shown as missing (and
 * still missing afterwards: the command declares nothing), and RabbitMQ down as exit 5.
 */
import {tmpdir} from 'node:os';
import {afterAll, beforeAll, describe, expect, test} from 'vitest';
import {runCli} from '../helpers/spawn.js';
import {createTestEnv, type TestEnv} from '../helpers/env.js';
import {createIdGenerator} from '../../src/core/task/id.js';

const newId = createIdGenerator(() => Date.now());
let declared: TestEnv;
let bare: TestEnv;

beforeAll(async () => {
  // One message per task, so messages count tasks here.
  [declared, bare] = await Promise.all([createTestEnv({doorbellBatch: 1}), createTestEnv()]);
});
afterAll(async () => {
  await declared?.dispose();
  await bare?.dispose();
});

const ax = (env: TestEnv, args: string[], extra: Record<string, string> = {}) => runCli(args, {cwd: tmpdir(), env: {...env.env, ...extra}});

describe('ax queues', () => {
  test('messages and consumers per pool queue and the poison queue', async () => {
    const broker = await declared.broker();
    await broker.publish([
      {id: newId(), type: 'queue_probe', pool: 'cpu'},
      {id: newId(), type: 'queue_probe', pool: 'cpu'},
      {id: newId(), type: 'queue_probe', pool: 'cpu'},
      {id: newId(), type: 'queue_probe', pool: 'cpu', priority: 'high'},
    ]);
    const sub = await broker.consume('io', 5, () => undefined);
    const r = await ax(declared, ['queues', '--json']);
    await sub.cancel();
    expect(r.code, r.stderr).toBe(0);
    const prefix = `${declared.config.amqpPrefix}.${declared.config.cell}`;
    expect(r.json).toEqual({
      cell: declared.config.cell,
      queues: [
        {name: `${prefix}.io.high`, role: 'pool', pool: 'io', priority: 'high', exists: true, messages: 0, consumers: 0},
        {name: `${prefix}.io`, role: 'pool', pool: 'io', priority: 'normal', exists: true, messages: 0, consumers: 1},
        {name: `${prefix}.io.low`, role: 'pool', pool: 'io', priority: 'low', exists: true, messages: 0, consumers: 0},
        {name: `${prefix}.cpu.high`, role: 'pool', pool: 'cpu', priority: 'high', exists: true, messages: 1, consumers: 0},
        {name: `${prefix}.cpu`, role: 'pool', pool: 'cpu', priority: 'normal', exists: true, messages: 3, consumers: 0},
        {name: `${prefix}.cpu.low`, role: 'pool', pool: 'cpu', priority: 'low', exists: true, messages: 0, consumers: 0},
        {name: `${prefix}.poison`, role: 'poison', pool: null, priority: null, exists: true, messages: 0, consumers: 0},
      ],
    });
    const human = await ax(declared, ['queues']);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^QUEUE\s+ROLE\s+MESSAGES\s+CONSUMERS$/m);
    expect(human.stdout).toMatch(new RegExp(`^${prefix.replace(/\./g, '\\.')}\\.cpu\\s+pool cpu normal\\s+3\\s+0$`, 'm'));
    expect(human.stdout).toMatch(new RegExp(`^${prefix.replace(/\./g, '\\.')}\\.cpu\\.high\\s+pool cpu high\\s+1\\s+0$`, 'm'));
    expect(human.stdout).not.toMatch(/missing/);
  });

  test('queues nobody declared are reported missing, and the command does not create them', async () => {
    const human = await ax(bare, ['queues']);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/\.io\s+pool io normal\s+missing\s+-$/m);
    expect(human.stdout).toMatch(/\.io\.low\s+pool io low\s+missing\s+-$/m);
    expect(human.stdout).toMatch(/\.poison\s+poison\s+missing\s+-$/m);
    expect(human.stdout).toMatch(/7 queues are missing: start a worker or producer of cell default/);
    const again = await ax(bare, ['queues', '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.json.queues.map((q: {exists: boolean}) => q.exists)).toEqual(Array(7).fill(false));
  });

  test('exit 5 when RabbitMQ is unreachable, exit 2 on an unexpected argument', async () => {
    const down = await ax(bare, ['queues', '--json'], {AX_AMQP_URL: 'amqp://guest:guest@127.0.0.1:1'});
    expect(down.code, down.stderr).toBe(5);
    expect(down.json.error.message).toMatch(/unavailable/);
    const extra = await ax(bare, ['queues', 'extra']);
    expect(extra.code).toBe(2);
  });
});
