/**
 * Closing amqplib channels and connections without waiting forever. amqplib's close() sends
 * Close and settles when the server answers CloseOk; when the server stops answering mid-close
 * (a node killed whose socket has not failed yet, a silently dropped network) the promise never
 * settles — not even after the heartbeat declares the connection dead. A shutdown, a cancelled
 * consumer or a failed connect that awaited it would hang for good.
 */
import type {EventEmitter} from 'node:events';
import type {Clock} from '../../time.js';

/** An amqplib channel or connection, as far as closing goes (amqplib itself is imported by broker.ts only). */
export interface Closable extends EventEmitter {
  close(): Promise<void>;
}

/**
 * Waits for `close()` at most `ms`, or until `target` emits 'close' (amqplib does when the socket
 * fails, without settling a close in progress); a failed close() counts as closed (the channel or
 * connection is gone either way). Resolves true when it closed in time, false when it did not.
 */
export function settleWithin(target: EventEmitter, close: () => Promise<void>, ms: number, clock: Clock): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (closed: boolean): void => {
      clock.clearTimeout(t);
      target.removeListener('close', onClose);
      resolve(closed);
    };
    const onClose = (): void => done(true);
    const t = clock.setTimeout(() => done(false), ms);
    target.once('close', onClose);
    close().then(
      () => done(true),
      () => done(true),
    );
  });
}

/** Closes a channel, waiting at most `ms` for the server's answer. */
export async function closeChannel(ch: Closable, ms: number, clock: Clock): Promise<void> {
  await settleWithin(ch, () => ch.close(), ms, clock);
}

/**
 * Closes a connection, waiting at most `ms` for the server's answer; past that its socket is
 * destroyed, which amqplib sees as a socket error: it emits 'error' and 'close' and stops its heartbeat.
 */
export async function closeConnection(conn: Closable & {readonly connection: unknown}, ms: number, clock: Clock): Promise<void> {
  if (await settleWithin(conn, () => conn.close(), ms, clock)) return;
  const socket = (conn.connection as unknown as {stream?: {destroy(e?: Error): void}}).stream;
  socket?.destroy(new Error(`RabbitMQ did not answer the close of the connection within ${ms}ms`));
}
