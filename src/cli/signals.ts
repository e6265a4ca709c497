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

// The daemons' guard lives with the daemon host (src/core/host/guard.ts).
export {CRASH_EXIT_CODE, type ProcessGuard, type StopReason} from '../core/host/guard.js';

/**
 * Ends the process `afterMs` after the command returns, even if something it loaded (a handlers
 * module's pool, a socket) still holds the event loop. The timer does not itself keep the
 * process alive: with nothing else pending it exits at once, with `process.exitCode`.
 */
export function exitSoon(afterMs = 500): void {
  setTimeout(() => process.exit(), afterMs).unref();
}
