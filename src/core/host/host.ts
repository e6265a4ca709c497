/**
 * The daemon host: the one skeleton `ax worker`, `ax scheduler`, `ax relay` and the relay sidecar
 * run on. A daemon is a set of `Service`s (core/lifecycle.ts) built on connections; the host owns
 * everything around them:
 *
 * 1. the process guard (guard.ts): SIGTERM/SIGINT, and the crash guard (stray errors → exit 7);
 * 2. the health endpoint (`serve`, injected: /healthz, /readyz, /metrics), started before anything
 *    connects, so a port in use fails at once and /readyz answers 503 while connecting;
 * 3. the connections (`connect`, injected: each cell's store and broker, waited for with
 *    connectWithRetry during an outage; a stop request ends the waiting);
 * 4. the services, built on the connections and started in order (a start failure stops the
 *    started ones and closes the connections);
 * 5. the periodic summary line, until the first stop request;
 * 6. the graceful stop: services stopped in reverse order with the grace period, connections
 *    closed, endpoint closed, and the exit code (CRASH_EXIT_CODE after an uncaught exception; 1
 *    when a service's stop threw — logged, the others still stopped; else what the daemon's
 *    `result` says, default 0).
 *
 * Readiness is one rule for every daemon: running, and every hosted service `ready()`.
 * The host never imports an adapter: `serve` and `connect` come from the composition root's side.
 */
import type {ConnectRetryOptions} from '../connect-retry.js';
import {errorMessage, isAxError} from '../errors.js';
import {Periodic, type Service} from '../lifecycle.js';
import {isoTimes, type Logger} from '../log.js';
import type {MetricsRegistry} from '../metrics/registry.js';
import type {Clock} from '../time.js';
import {CRASH_EXIT_CODE, guardProcess, type HostProcess, type ProcessGuard, type StopReason} from './guard.js';

/** Where the host is: waiting for its servers, starting its services, running, stopping, stopped. */
export type HostPhase = 'connecting' | 'starting' | 'running' | 'stopping' | 'stopped';

/** The health endpoint of a daemon, as `serve` returns it. */
export interface HostEndpoint {
  /** Base URL (logged, and in the start line). */
  url: string;
  /** The registry `/metrics` serves: the daemon subscribes its series to it. */
  metrics: MetricsRegistry;
  close(): Promise<void>;
}

/** What /readyz and /healthz ask of the host. */
export interface HostProbe {
  ready(): boolean;
  details(): unknown;
}

/** The host's state as the daemon's callbacks see it. */
export interface HostState {
  readonly phase: HostPhase;
  /** The last failed connection attempt (connectWithRetry's onRetry), while connecting. */
  readonly connect: unknown;
  readonly guard: ProcessGuard;
  readonly endpoint: HostEndpoint | undefined;
}

/** Connections the services are built on; disposing closes them all. */
export interface HostConnections<C> extends AsyncDisposable {
  cells: C[];
}

export interface HostOptions<C> {
  /** Names the daemon in log lines ("stopping worker"). */
  name: string;
  clock: Clock;
  logger: Logger;
  /** The process to guard (default: node's). */
  process?: HostProcess;
  /** The crash guard (see guard.ts): default true. */
  crashGuard?: boolean;
  /** Grace period of the services' stop (AX_SHUTDOWN_GRACE). */
  graceMs: number;
  /** Starts the health endpoint with this probe (undefined: none configured). Rejects: nothing started. */
  serve?: (probe: HostProbe) => Promise<HostEndpoint | undefined>;
  /** /healthz and /readyz body while `phase` is what it is (default: `{state, connect}` before running). */
  details?: (h: HostState) => unknown;
  /**
   * Opens the connections, waiting for servers that are down (`retry`: its signal ends the waiting
   * with AxError('closed'); its onRetry feeds HostState.connect). Closes what it opened on failure.
   */
  connect(retry: ConnectRetryOptions): Promise<HostConnections<C>>;
  /** Builds the services on the connections, in start order (subscribe metrics here: before the start). */
  services(cells: C[], h: HostState): Service[] | Promise<Service[]>;
  /** After every service started (the start line, one-off checks). A throw is logged at warn. */
  onRunning?: (h: HostState) => void | Promise<void>;
  /** The periodic summary line: `msg` logged with `fields()` (times in ISO 8601) every `everyMs` (0: off). */
  summary?: {everyMs: number; msg: string; fields: () => Record<string, unknown>};
  /** Fields of the "stopping <name>" line, beyond the reason; called as the stop begins. */
  stopping?: () => Record<string, unknown>;
  /** That line's message (default "stopping <name>"). */
  stoppingMsg?: string;
  /** The daemon's result after its services stopped: the command's return value and exit code (default 0). */
  result(reason: StopReason, h: HostState): {value: unknown; exitCode?: number};
}

/** What a hosted run ended with: the value for the command to return and the process exit code. */
export interface HostOutcome {
  value: unknown;
  exitCode: number;
}

/**
 * Runs a daemon until a stop request, as the module comment says. Resolves with its outcome:
 * `{stoppedBeforeStart: true, signal | crashed}` when the stop came while still connecting; else
 * the daemon's `result`, with exit code CRASH_EXIT_CODE after an uncaught exception. Rejects (with
 * everything it started stopped and closed) when the endpoint cannot start (conflict: its port is
 * in use), a connection fails for good (unavailable), or a service's start throws.
 * The guard's listeners stay installed: a second signal while the process exits still exits at once.
 */
export async function runHost<C>(o: HostOptions<C>): Promise<HostOutcome> {
  const guard = guardProcess({logger: o.logger, ...(o.process ? {process: o.process} : {}), crash: o.crashGuard ?? true});
  let phase: HostPhase = 'connecting';
  let lastRetry: unknown;
  let services: Service[] = [];
  const state: HostState = {
    get phase() {
      return phase;
    },
    get connect() {
      return lastRetry;
    },
    guard,
    get endpoint() {
      return endpoint;
    },
  };
  const details = o.details ?? ((h: HostState) => (h.phase === 'connecting' ? {state: h.phase, connect: h.connect} : {state: h.phase}));
  // The endpoint first: if its port is taken nothing has started; /readyz is 503 until running.
  const endpoint: HostEndpoint | undefined = await o.serve?.({
    ready: () => phase === 'running' && services.every((s) => s.ready()),
    details: () => details(state),
  });
  try {
    let conns: HostConnections<C>;
    try {
      conns = await o.connect({signal: guard.signal, onRetry: (r) => (lastRetry = r)});
    } catch (e) {
      // Stopped (a signal, or a crash) while still waiting for a server: nothing ran.
      if (!(isAxError(e, 'closed') && guard.signal.aborted)) throw e;
      const reason = await guard.stop;
      phase = 'stopped';
      return {
        value: {stoppedBeforeStart: true, ...(reason.kind === 'signal' ? {signal: reason.signal} : {crashed: true})},
        exitCode: reason.kind === 'crash' ? CRASH_EXIT_CODE : 0,
      };
    }
    await using _conns = conns;
    phase = 'starting';
    const built = await o.services(conns.cells, state);
    const started: Service[] = [];
    try {
      for (const s of built) {
        started.push(s);
        await s.start();
      }
    } catch (e) {
      for (const s of started.reverse()) await s.stop({graceMs: 0}).catch(() => undefined);
      throw e;
    }
    services = built;
    phase = 'running';
    try {
      await o.onRunning?.(state);
    } catch (e) {
      o.logger.warn(`${o.name}: a start-up step failed`, {error: errorMessage(e)});
    }
    const summary = startSummary(o);
    const reason = await guard.stop;
    await summary?.stop();
    phase = 'stopping';
    o.logger.info(o.stoppingMsg ?? `stopping ${o.name}`, {
      ...(reason.kind === 'signal' ? {signal: reason.signal} : {reason: 'uncaught exception'}),
      ...o.stopping?.(),
    });
    // Every service gets its stop, even when one before it failed (a Service's stop should not throw).
    let stopFailed = false;
    for (const s of [...services].reverse()) {
      try {
        await s.stop({graceMs: o.graceMs});
      } catch (e) {
        stopFailed = true;
        o.logger.error(`${o.name}: a service failed to stop`, {error: errorMessage(e)});
      }
    }
    phase = 'stopped';
    const r = o.result(reason, state);
    return {value: r.value, exitCode: reason.kind === 'crash' ? CRASH_EXIT_CODE : stopFailed ? 1 : (r.exitCode ?? 0)};
  } finally {
    phase = 'stopped';
    await endpoint?.close();
  }
}

/** The summary line's loop, or undefined when off. */
function startSummary(o: Pick<HostOptions<unknown>, 'summary' | 'clock' | 'logger'>): Periodic | undefined {
  const s = o.summary;
  if (!s || s.everyMs === 0) return undefined;
  const loop = new Periodic({
    name: s.msg,
    clock: o.clock,
    everyMs: s.everyMs,
    run: () => o.logger.info(s.msg, isoTimes(s.fields())),
    onError: (e) => o.logger.warn(`${s.msg} failed`, {error: String(e)}),
  });
  loop.start();
  return loop;
}
