/**
 * The failover order over a cluster's nodes (src/core/broker/amqp/nodes.ts) with a fake connect:
 * a round tries each URL once from its start and keeps the first that works; the first round
 * starts at a random node, the one after a lost node at the next; a round in which every node
 * fails says why for each, and a refusal of ax's topology ends the round at once.
 */
import {describe, expect, it} from 'vitest';
import {connectFirstLive, firstNode, nodeAfter, noLiveNode} from '../../src/core/broker/amqp/nodes.js';
import {amqpConnectError} from '../../src/core/broker/amqp/errors.js';
import {isRetryableConnectError} from '../../src/core/connect-retry.js';
import {AxError, isAxError} from '../../src/core/errors.js';

const URLS = ['amqp://ax:pw@mq1:5672', 'amqp://ax:pw@mq2:5672', 'amqp://ax:pw@mq3:5672'];
const REFUSED = 'connect ECONNREFUSED 127.0.0.1:5672';

/** A fake connect: the URLs in `dead` fail as an unreachable node does; the calls are recorded. */
function fakeConnect(dead: Set<string>, fail: (url: string) => unknown = (url) => amqpConnectError(new Error(REFUSED), url)) {
  const tried: string[] = [];
  const connect = async (url: string): Promise<string> => {
    tried.push(url);
    if (dead.has(url)) throw fail(url);
    return `connection to ${url}`;
  };
  return {tried, connect};
}

describe('connectFirstLive: one round over the nodes', () => {
  it('connects to the start node when it is live, trying no other', async () => {
    const {tried, connect} = fakeConnect(new Set());
    expect(await connectFirstLive(URLS, 1, connect)).toEqual({value: `connection to ${URLS[1]}`, index: 1});
    expect(tried).toEqual([URLS[1]]);
  });

  it('skips dead nodes in order, wrapping round the list, and reports each failure', async () => {
    const {tried, connect} = fakeConnect(new Set([URLS[2]!, URLS[0]!]));
    const failures: number[] = [];
    const r = await connectFirstLive(URLS, 2, connect, (f) => failures.push(f.index));
    expect(r.index).toBe(1);
    expect(tried).toEqual([URLS[2], URLS[0], URLS[1]]);
    expect(failures).toEqual([2, 0]);
  });

  it('all nodes dead: one retryable error naming every node, passwords redacted', async () => {
    const {tried, connect} = fakeConnect(new Set(URLS));
    const e = await connectFirstLive(URLS, 0, connect).catch((x: unknown) => x);
    expect(tried).toEqual(URLS);
    expect(isAxError(e, 'unavailable')).toBe(true);
    const err = e as AxError;
    expect(err.message).toMatch(/^none of the 3 RabbitMQ nodes could be used: /);
    for (const host of ['mq1', 'mq2', 'mq3']) expect(err.message).toContain(`RabbitMQ at amqp://ax:***@${host}:5672 is unavailable`);
    expect(err.message).not.toContain(':pw@');
    expect(err.details).toEqual({reason: 'unreachable', scope: 'amqp'});
    // Services waiting at start (connectWithRetry) keep retrying it.
    expect(isRetryableConnectError(err)).toBe(true);
  });

  it('one URL that fails: its own error, as before clusters', async () => {
    const {connect} = fakeConnect(new Set([URLS[0]!]));
    const e = await connectFirstLive([URLS[0]!], 0, connect).catch((x: unknown) => x);
    expect((e as Error).message).toBe(`RabbitMQ at amqp://ax:***@mq1:5672 is unavailable: ${REFUSED}`);
  });

  it('a login refused by one node, the others down: the refusal (not retryable) rather than the list', async () => {
    const denied = amqpConnectError(new Error('Handshake terminated by server: 403 (ACCESS-REFUSED)'), URLS[1]!);
    const {connect} = fakeConnect(new Set(URLS), (url) => (url === URLS[1] ? denied : amqpConnectError(new Error(REFUSED), url)));
    const e = await connectFirstLive(URLS, 0, connect).catch((x: unknown) => x);
    expect(e).toBe(denied);
    expect(isRetryableConnectError(e)).toBe(false);
  });

  it('ax’s topology refused (invalid_input): the round ends at once, the error as is', async () => {
    const topo = new AxError('invalid_input', 'RabbitMQ refused ax’s topology');
    const {tried, connect} = fakeConnect(new Set(URLS), () => topo);
    await expect(connectFirstLive(URLS, 0, connect)).rejects.toBe(topo);
    expect(tried).toEqual([URLS[0]]);
  });

  it('noLiveNode of one failure is that failure', () => {
    const e = new Error('x');
    expect(noLiveNode([{url: URLS[0]!, index: 0, error: e}])).toBe(e);
  });
});

describe('where a round starts', () => {
  it('the first round: a random node, from the injected randomness', () => {
    expect(firstNode(3, () => 0)).toBe(0);
    expect(firstNode(3, () => 0.34)).toBe(1);
    expect(firstNode(3, () => 0.67)).toBe(2);
    expect(firstNode(3, () => 0.999_999)).toBe(2);
    expect(firstNode(1, () => 0.9)).toBe(0);
  });

  it('after losing a node: the next one, so the lost node is tried last', () => {
    expect(nodeAfter(0, 3)).toBe(1);
    expect(nodeAfter(2, 3)).toBe(0);
    expect(nodeAfter(0, 1)).toBe(0);
  });

  it('a node lost, then the next: every reconnect goes on round the cluster', async () => {
    // Node 0 is lost: the round starts at 1. Node 1 is then lost with 0 still down: the round
    // starts at 2, the live one, without waiting on either dead node first.
    const dead = new Set([URLS[0]!]);
    const {tried, connect} = fakeConnect(dead);
    const a = await connectFirstLive(URLS, nodeAfter(0, 3), connect);
    expect(a.index).toBe(1);
    dead.add(URLS[1]!);
    const b = await connectFirstLive(URLS, nodeAfter(a.index, 3), connect);
    expect(b.index).toBe(2);
    expect(tried).toEqual([URLS[1], URLS[2]]);
  });
});
