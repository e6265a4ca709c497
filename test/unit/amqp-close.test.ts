/**
 * Bounded closes (src/core/broker/amqp/close.ts): amqplib's close() never settles when the server
 * stops answering mid-close, so ax waits for it at most the confirm timeout, returns early when the
 * socket fails (amqplib emits 'close' without settling the close), and then destroys the socket.
 */
import {EventEmitter} from 'node:events';
import {describe, expect, it} from 'vitest';
import {type Closable, closeConnection, settleWithin} from '../../src/core/broker/amqp/close.js';
import {fakeClock} from '../helpers/clock.js';

const never = (): Promise<void> => new Promise<void>(() => undefined);
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('settleWithin', () => {
  it('a close the server answers: true, no timer left', async () => {
    const clock = fakeClock();
    expect(await settleWithin(new EventEmitter(), async () => undefined, 1000, clock)).toBe(true);
    expect(clock.pending()).toBe(0);
  });

  it('a close that fails (already closed): closed all the same', async () => {
    expect(await settleWithin(new EventEmitter(), () => Promise.reject(new Error('Connection closed')), 1000, fakeClock())).toBe(true);
  });

  it('a close nobody answers: false once the time is up, not before', async () => {
    const clock = fakeClock();
    let result: boolean | undefined;
    void settleWithin(new EventEmitter(), never, 1000, clock).then((r) => (result = r));
    clock.advance(999);
    await tick();
    expect(result).toBeUndefined();
    clock.advance(1);
    await tick();
    expect(result).toBe(false);
  });

  it('the socket fails meanwhile (a close event, the close still pending): true at once', async () => {
    const clock = fakeClock();
    const target = new EventEmitter();
    const p = settleWithin(target, never, 1000, clock);
    target.emit('close', new Error('write ECONNRESET'));
    expect(await p).toBe(true);
    expect(clock.pending()).toBe(0);
    expect(target.listenerCount('close')).toBe(0);
  });
});

describe('closeConnection', () => {
  it('destroys the socket of a connection whose close is never answered', async () => {
    const clock = fakeClock();
    const destroyed: Error[] = [];
    const conn = Object.assign(new EventEmitter(), {
      close: never,
      connection: {stream: {destroy: (e: Error) => void destroyed.push(e)}},
    }) as Closable & {connection: unknown};
    const p = closeConnection(conn, 500, clock);
    clock.advance(500);
    await p;
    expect(destroyed.map((e) => e.message)).toEqual(['RabbitMQ did not answer the close of the connection within 500ms']);
  });
});
