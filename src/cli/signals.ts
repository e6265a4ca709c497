import type {Logger} from '../core/log.js';

/**
 * Resolves with the name of the first SIGTERM or SIGINT. Long-running commands keep `run()`
 * pending on this (oclif exits soon after run() resolves). A second signal exits at once.
 */
export function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const onSignal = (s: NodeJS.Signals): void => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      process.once('SIGTERM', () => process.exit(143));
      process.once('SIGINT', () => process.exit(130));
      resolve(s);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}

/**
 * `waitForSignal()` as an AbortSignal too: services that are still connecting (connectWithRetry)
 * stop waiting when it aborts, so a SIGTERM during an outage exits 0 instead of killing the process.
 */
export function signalController(): {signal: AbortSignal; signalled: Promise<NodeJS.Signals>} {
  const ac = new AbortController();
  const signalled = waitForSignal().then((s) => {
    ac.abort();
    return s;
  });
  return {signal: ac.signal, signalled};
}

/** Exit code of a worker that stopped after an uncaught exception (README "Exit codes"). */
export const CRASH_EXIT_CODE = 7;

/** Why a guarded process is stopping. */
export type StopReason = {kind: 'signal'; signal: NodeJS.Signals} | {kind: 'crash'; error: unknown};

export interface ProcessGuard {
  /** Resolves with the first SIGTERM/SIGINT or uncaught exception. */
  readonly stop: Promise<StopReason>;
  /** Aborted when `stop` resolves: ends waits such as the connection retries at start. */
  readonly signal: AbortSignal;
  /** Unhandled promise rejections seen so far (logged, not fatal), CPU worker threads' included. */
  readonly unhandledRejections: number;
  /** Uncaught exceptions in CPU worker threads so far (each failed its job; the thread was replaced). */
  readonly threadExceptions: number;
  /** Counts a stray error a CPU worker thread reported (the pool has logged it). */
  noteThreadStray(kind: 'unhandledRejection' | 'uncaughtException'): void;
  /** Removes the process listeners. */
  dispose(): void;
}

/**
 * Guards a long-running process against stray errors in code it runs (handlers):
 * - an unhandled promise rejection is logged at error with its stack and counted; the process
 *   keeps running;
 * - an uncaught exception is logged at error and resolves `stop` with `crash`, so the caller
 *   drains and exits with CRASH_EXIT_CODE; a second one while stopping exits at once with it;
 * - SIGTERM/SIGINT resolve `stop` with `signal`; a second signal exits at once (143/130).
 */
export function guardProcess(logger: Logger): ProcessGuard {
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
    if (ac.signal.aborted) process.exit(signal === 'SIGINT' ? 130 : 143);
    request({kind: 'signal', signal});
  };
  const onRejection = (reason: unknown): void => {
    rejections++;
    logger.error('unhandled promise rejection (the process keeps running)', {error: reason, unhandledRejections: rejections});
  };
  const onException = (error: unknown): void => {
    if (ac.signal.aborted) {
      logger.error('uncaught exception while stopping; exiting now', {error, exitCode: CRASH_EXIT_CODE});
      process.exit(CRASH_EXIT_CODE);
    }
    logger.error('uncaught exception; draining in-flight work, then exiting', {error, exitCode: CRASH_EXIT_CODE});
    request({kind: 'crash', error});
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
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
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      process.off('unhandledRejection', onRejection);
      process.off('uncaughtException', onException);
    },
  };
}

/**
 * Ends the process `afterMs` after the command returns, even if something it loaded (a handlers
 * module's pool, a socket) still holds the event loop. The timer does not itself keep the
 * process alive: with nothing else pending it exits at once, with `process.exitCode`.
 */
export function exitSoon(afterMs = 500): void {
  setTimeout(() => process.exit(), afterMs).unref();
}
