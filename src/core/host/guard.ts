/**
 * The process guard of a daemon (src/core/host): SIGTERM/SIGINT, and optionally the stray errors of
 * code it runs (handlers), turned into one stop request. The process is injected (`HostProcess`) so
 * the host is tested without signalling the test runner.
 */
import type {Logger} from '../log.js';

/** Exit code of a daemon that stopped after an uncaught exception (docs/reference/cli.md, "Exit codes"). */
export const CRASH_EXIT_CODE = 7;

/** What the guard needs of the process: its events and its exit (node's `process` fits). */
export interface HostProcess {
  on(event: 'SIGTERM' | 'SIGINT', listener: (signal: NodeJS.Signals) => void): unknown;
  on(event: 'unhandledRejection' | 'uncaughtException', listener: (error: unknown) => void): unknown;
  off(event: 'SIGTERM' | 'SIGINT', listener: (signal: NodeJS.Signals) => void): unknown;
  off(event: 'unhandledRejection' | 'uncaughtException', listener: (error: unknown) => void): unknown;
  exit(code?: number): unknown;
}

/** Why a guarded process is stopping. */
export type StopReason = {kind: 'signal'; signal: NodeJS.Signals} | {kind: 'crash'; error: unknown};

export interface ProcessGuard {
  /** Resolves with the first SIGTERM/SIGINT or (with the crash guard) uncaught exception. */
  readonly stop: Promise<StopReason>;
  /** Aborted when `stop` resolves: ends waits such as the connection retries at start. */
  readonly signal: AbortSignal;
  /** Unhandled promise rejections seen so far (logged, not fatal), CPU worker threads' included. */
  readonly unhandledRejections: number;
  /** Uncaught exceptions in CPU worker threads so far (each failed its job; the thread was replaced). */
  readonly threadExceptions: number;
  /** Counts a stray error a CPU worker thread reported (the pool has logged it). */
  noteThreadStray(kind: 'unhandledRejection' | 'uncaughtException'): void;
  /** Removes the process listeners. Idempotent. */
  dispose(): void;
}

export interface GuardOptions {
  logger: Logger;
  /** The process (default: node's). */
  process?: HostProcess;
  /**
   * Intercept stray errors (default true): an unhandled rejection is logged and counted (the
   * process keeps running), an uncaught exception requests a `crash` stop. False leaves node's own
   * handling (the process dies at once, exit 1).
   */
  crash?: boolean;
}

/**
 * Guards a long-running process:
 * - SIGTERM/SIGINT resolve `stop` with `signal`; a second signal exits at once (143/130);
 * - with `crash` (default): an unhandled promise rejection is logged at error with its stack and
 *   counted, and the process keeps running; an uncaught exception is logged at error and resolves
 *   `stop` with `crash`, so the host drains and exits with CRASH_EXIT_CODE; a second one while
 *   stopping exits at once with it.
 */
export function guardProcess(o: GuardOptions): ProcessGuard {
  const proc: HostProcess = o.process ?? process;
  const logger = o.logger;
  const ac = new AbortController();
  let rejections = 0;
  let threadExceptions = 0;
  let settle!: (r: StopReason) => void;
  const stop = new Promise<StopReason>((resolve) => (settle = resolve));
  const request = (r: StopReason): void => {
    if (ac.signal.aborted) return;
    ac.abort(r);
    settle(r);
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    if (ac.signal.aborted) {
      proc.exit(signal === 'SIGINT' ? 130 : 143);
      return;
    }
    request({kind: 'signal', signal});
  };
  const onRejection = (reason: unknown): void => {
    rejections++;
    logger.error('unhandled promise rejection (the process keeps running)', {error: reason, unhandledRejections: rejections});
  };
  const onException = (error: unknown): void => {
    if (ac.signal.aborted) {
      logger.error('uncaught exception while stopping; exiting now', {error, exitCode: CRASH_EXIT_CODE});
      proc.exit(CRASH_EXIT_CODE);
      return;
    }
    logger.error('uncaught exception; draining in-flight work, then exiting', {error, exitCode: CRASH_EXIT_CODE});
    request({kind: 'crash', error});
  };
  const crash = o.crash ?? true;
  proc.on('SIGTERM', onSignal);
  proc.on('SIGINT', onSignal);
  if (crash) {
    proc.on('unhandledRejection', onRejection);
    proc.on('uncaughtException', onException);
  }
  let disposed = false;
  return {
    stop,
    signal: ac.signal,
    get unhandledRejections() {
      return rejections;
    },
    get threadExceptions() {
      return threadExceptions;
    },
    noteThreadStray(kind) {
      if (kind === 'unhandledRejection') rejections++;
      else threadExceptions++;
    },
    dispose() {
      if (disposed) return;
      disposed = true;
      proc.off('SIGTERM', onSignal);
      proc.off('SIGINT', onSignal);
      if (crash) {
        proc.off('unhandledRejection', onRejection);
        proc.off('uncaughtException', onException);
      }
    },
  };
}
