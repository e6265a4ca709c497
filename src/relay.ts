/**
 * The outbox relay as a runnable unit, shared by `ax relay` and the sidecar (sidecar/main.js):
 * one composition of the very same code, hosted by the one daemon host (core/host). Exported as
 * `ax-executor/relay`.
 */
import {type AxConfig} from './core/config/config.js';
import {isoTimes, type Logger} from './core/log.js';
import {connectWithRetry, type ConnectRetryOptions} from './core/connect-retry.js';
import {createRelayService} from './core/outbox/service.js';
import type {Relay} from './core/outbox/relay.js';
import type {MetricsRegistry} from './core/metrics/registry.js';
import {relayMetrics} from './core/metrics/relay.js';
import {createRuntime, openBroker, openOutbox, openStore, type Runtime} from './compose.js';
import {typeSelector} from './core/cells/cells.js';
import {runHost, type HostConnections, type HostOptions, type HostOutcome, type HostState} from './core/host/host.js';
import type {StopReason} from './core/host/guard.js';
import type {AxStore, OutboxStore} from './core/store/types.js';
import type {Broker} from './core/broker/types.js';
import {hostname} from 'node:os';

export type {Relay, RelayStats} from './core/outbox/relay.js';
export {loadConfig} from './core/config/config.js';
export {createLogger, isoTimes, logOptions} from './core/log.js';
export {startHealthServer, type HealthServer} from './health.js';
export {MetricsRegistry} from './core/metrics/registry.js';
export type {HostEndpoint, HostOutcome, HostProbe, HostState} from './core/host/host.js';

export interface RunningRelay extends AsyncDisposable {
  relay: Relay;
  /** Stops the relay, then closes its connections. Idempotent; also what `await using` calls. */
  stop(): Promise<void>;
}

/** One cell's relay connections: ax's database, the business database (outbox) and RabbitMQ. */
interface RelayConnections {
  cell: string;
  rt: Runtime;
  store: AxStore;
  outbox: OutboxStore;
  broker: Broker;
}

/**
 * Opens one cell's three connections, each waited for as connectWithRetry does (logged, jittered
 * backoff; none with connectFailFast). Closes what it opened and throws on failure:
 * AxError('unavailable') (unreachable with connectFailFast, credentials refused, not migrated),
 * AxError('closed') when `retry.signal` aborted the waiting.
 */
async function connectRelayCell(base: Runtime, cell: string, retry: ConnectRetryOptions): Promise<RelayConnections & AsyncDisposable> {
  const rt = base.forCell(cell);
  const store = await connectWithRetry(rt, 'MySQL (ax)', () => openStore(rt), retry);
  const closers: Array<() => Promise<unknown>> = [() => store.close()];
  const close = async (): Promise<void> => {
    for (const c of closers) await c().catch(() => undefined);
  };
  try {
    const outbox = await connectWithRetry(rt, 'MySQL (outbox)', () => openOutbox(rt), retry);
    closers.unshift(() => outbox.close());
    const broker = await connectWithRetry(rt, 'RabbitMQ', () => openBroker(rt, {reconnect: true}), retry);
    closers.unshift(() => broker.close());
    return {cell, rt, store, outbox, broker, [Symbol.asyncDispose]: close};
  } catch (e) {
    await close();
    throw e;
  }
}

/**
 * Every cell's connections, side by side; one failing (or `retry.signal` aborting) stops the
 * others' waiting, closes everything opened and throws the first error.
 */
async function connectRelayCells(base: Runtime, cells: string[], retry: ConnectRetryOptions): Promise<HostConnections<RelayConnections>> {
  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  retry.signal?.addEventListener('abort', onAbort, {once: true});
  if (retry.signal?.aborted) stop.abort();
  let firstError: unknown;
  const results = await Promise.allSettled(
    cells.map((cell) =>
      connectRelayCell(base, cell, {...retry, signal: stop.signal}).catch((e: unknown) => {
        firstError ??= e;
        stop.abort();
        throw e;
      }),
    ),
  );
  retry.signal?.removeEventListener('abort', onAbort);
  const opened = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const closeAll = async (): Promise<void> => {
    for (const c of opened.reverse()) await c[Symbol.asyncDispose]();
  };
  if (opened.length < cells.length) {
    await closeAll();
    throw firstError;
  }
  return {cells: opened, [Symbol.asyncDispose]: closeAll};
}

/** The relay of one cell on its connections: the outbox rows of its cell's types (shared outbox). */
function relayOf(c: RelayConnections, defaultCell: string, metrics?: MetricsRegistry): Relay {
  const relay = createRelayService({
    ...c.rt,
    outbox: c.outbox,
    store: c.store,
    broker: c.broker,
    types: typeSelector(c.rt.cells, [c.cell]),
    ...(c.cell === defaultCell ? {} : {id: `relay:${hostname()}:${process.pid}/${c.cell}`}),
  });
  if (metrics) relayMetrics(metrics, relay.events);
  return relay;
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
 * 'invalid_input' for an unknown cell). For a whole process (signals, endpoint, summary), use runRelayDaemon.
 */
export async function startRelay(
  config: AxConfig,
  logger?: Logger,
  opts: {signal?: AbortSignal; metrics?: MetricsRegistry; cell?: string} = {},
): Promise<RunningRelay> {
  const base = createRuntime(config, logger);
  const conns = await connectRelayCell(base, opts.cell ?? config.cell, opts.signal ? {signal: opts.signal} : {});
  try {
    const relay = relayOf(conns, config.cell, opts.metrics);
    await relay.start();
    let stopping: Promise<void> | undefined;
    const stop = (): Promise<void> =>
      (stopping ??= (async () => {
        await relay.stop();
        await conns[Symbol.asyncDispose]();
      })());
    return {relay, stop, [Symbol.asyncDispose]: stop};
  } catch (e) {
    await conns[Symbol.asyncDispose]();
    throw e;
  }
}

/** How `ax relay` and the sidecar differ: the endpoint, the lines they log, their result. */
export interface RelayDaemonOptions {
  /** The cells to relay for, one relay each (default: the default cell, AX_CELL). */
  cells?: string[];
  /** Starts the health endpoint with the host's probe (undefined: none). */
  serve?: HostOptions<unknown>['serve'];
  /** /healthz and /readyz body before the relays run (default `{state: 'connecting'}`). */
  connecting?: () => unknown;
  /** The relays' summary line period (0 or absent: off) and message. */
  summary?: {everyMs: number; msg: string};
  onRunning?: (relays: Relay[], h: HostState) => void | Promise<void>;
  stoppingMsg?: string;
  /** Called as the stop begins (the sidecar arms its hang timer here). */
  onStopping?: () => void;
  /** The value the run resolves with (default: the relays' stats, see runRelayDaemon). */
  result?: (relays: Relay[], reason: StopReason) => unknown;
}

/**
 * Runs the relay daemon on the daemon host (core/host): SIGTERM/SIGINT, the endpoint (/healthz,
 * /readyz: 200 while every relay's passes succeed, /metrics: the relay series), the connections
 * of every cell waited for during an outage, one relay per cell, the summary line and the graceful
 * stop. Resolves with the host's outcome (value: `{signal, relay, ...stats}`, or per cell
 * `{signal, cells: [...]}`, or `{stoppedBeforeStart, signal}`); rejects as runHost does
 * (conflict: the health port is in use; unavailable; invalid_input: an unknown cell).
 */
export async function runRelayDaemon(config: AxConfig, logger: Logger | undefined, o: RelayDaemonOptions = {}): Promise<HostOutcome> {
  const base = createRuntime(config, logger);
  const cells = o.cells ?? [config.cell];
  // An unknown cell fails here, before anything connects.
  for (const c of cells) base.forCell(c);
  const many = cells.length > 1;
  let relays: Relay[] = [];
  const stats = (r: Relay, i: number) => ({...(many ? {cell: cells[i]} : {}), relay: r.id, ...r.stats});
  return runHost<RelayConnections>({
    name: 'relay',
    clock: base.clock,
    logger: base.logger,
    // The relay runs no user code: node's own handling of stray errors stays.
    crashGuard: false,
    graceMs: config.shutdownGraceMs,
    ...(o.serve ? {serve: o.serve} : {}),
    details: () => (relays[0] ? isoTimes({relay: relays[0].id, ...relays[0].stats}) : (o.connecting?.() ?? {state: 'connecting'})),
    connect: (retry) => connectRelayCells(base, cells, retry),
    services: (conns, h) => (relays = conns.map((c) => relayOf(c, config.cell, h.endpoint?.metrics))),
    ...(o.onRunning ? {onRunning: (h: HostState) => o.onRunning?.(relays, h)} : {}),
    ...(o.summary
      ? {
          summary: {
            ...o.summary,
            fields: () =>
              many ? {cells: relays.map((r, i) => ({...stats(r, i), ready: r.ready()}))} : {...relays[0]?.stats, ready: relays[0]?.ready()},
          },
        }
      : {}),
    ...(o.stoppingMsg ? {stoppingMsg: o.stoppingMsg} : {}),
    stopping: () => {
      o.onStopping?.();
      return {};
    },
    result: (reason) => ({
      value:
        o.result?.(relays, reason) ??
        isoTimes({
          ...(reason.kind === 'signal' ? {signal: reason.signal} : {}),
          ...(many ? {cells: relays.map(stats)} : stats(relays[0] as Relay, 0)),
        }),
    }),
  });
}
