/**
 * The outbox relay as a runnable unit, shared by `ax relay` and the sidecar (sidecar/main.js):
 * one composition of the very same code. Exported as `ax-executor/relay`.
 */
import {type AxConfig} from './core/config/config.js';
import type {Logger} from './core/log.js';
import {connectWithRetry} from './core/connect-retry.js';
import {createRelayService} from './core/outbox/service.js';
import type {Relay} from './core/outbox/relay.js';
import type {MetricsRegistry} from './core/metrics/registry.js';
import {relayMetrics} from './core/metrics/relay.js';
import {createRuntime, openBroker, openOutbox, openStore} from './compose.js';
import {typeSelector} from './core/cells/cells.js';
import {hostname} from 'node:os';

export type {Relay, RelayStats} from './core/outbox/relay.js';
export {loadConfig} from './core/config/config.js';
export {createLogger, isoTimes, logOptions} from './core/log.js';
export {startHealthServer, type HealthServer} from './health.js';
export {MetricsRegistry} from './core/metrics/registry.js';

export interface RunningRelay extends AsyncDisposable {
  relay: Relay;
  /** Stops the relay, then closes its connections. Idempotent; also what `await using` calls. */
  stop(): Promise<void>;
}

/**
 * Connects to ax's database, the business database (outbox) and RabbitMQ, and starts a relay. A
 * server that cannot be reached is waited for (connectWithRetry: each attempt logged, jittered
 * backoff) unless `config.connectFailFast`. Throws AxError('unavailable') when a server cannot be
 * reached with connectFailFast, refuses the credentials, or ax's schema is not migrated, and
 * AxError('closed') when `opts.signal` aborts the waiting. With `opts.metrics`, the relay's series
 * (outbox relayed, failed, lag; see core/metrics/relay.ts) are registered there and fed by its events.
 * `opts.cell` (default: the default cell, AX_CELL) is the cell it relays for: it takes the outbox
 * rows whose types AX_CELLS routes there, into that cell's database and RabbitMQ (AxError
 * 'invalid_input' for an unknown cell).
 */
export async function startRelay(
  config: AxConfig,
  logger?: Logger,
  opts: {signal?: AbortSignal; metrics?: MetricsRegistry; cell?: string} = {},
): Promise<RunningRelay> {
  const base = createRuntime(config, logger);
  const cell = opts.cell ?? config.cell;
  const rt = base.forCell(cell);
  const retry = opts.signal ? {signal: opts.signal} : {};
  const store = await connectWithRetry(rt, 'MySQL (ax)', () => openStore(rt), retry);
  const closers: Array<() => Promise<unknown>> = [() => store.close()];
  try {
    const outbox = await connectWithRetry(rt, 'MySQL (outbox)', () => openOutbox(rt), retry);
    closers.unshift(() => outbox.close());
    const broker = await connectWithRetry(rt, 'RabbitMQ', () => openBroker(rt, {reconnect: true}), retry);
    closers.unshift(() => broker.close());
    // The outbox is shared by every cell: this relay takes the rows of its cell's types only.
    const relay = createRelayService({
      ...rt,
      outbox,
      store,
      broker,
      types: typeSelector(rt.cells, [cell]),
      ...(cell === config.cell ? {} : {id: `relay:${hostname()}:${process.pid}/${cell}`}),
    });
    if (opts.metrics) relayMetrics(opts.metrics, relay.events);
    await relay.start();
    let stopping: Promise<void> | undefined;
    const stop = (): Promise<void> =>
      (stopping ??= (async () => {
        await relay.stop();
        for (const c of closers) await c().catch(() => undefined);
      })());
    return {relay, stop, [Symbol.asyncDispose]: stop};
  } catch (e) {
    for (const c of closers) await c().catch(() => undefined);
    throw e;
  }
}
