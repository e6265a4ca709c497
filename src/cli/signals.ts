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
