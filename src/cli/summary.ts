/** Flags shared by the long-running commands (`ax worker`, `ax scheduler`, `ax relay`) and their periodic summary line. */
import {Flags} from '@oclif/core';
import {parseDuration} from '../core/duration.js';
import {Periodic} from '../core/lifecycle.js';
import {isoTimes, type Logger} from '../core/log.js';
import {systemClock} from '../core/time.js';

export const summaryEveryFlag = Flags.string({description: 'log a summary line this often (0 to disable)', default: '1m'});

/** `--fail-fast`: the connection retries at start are off (connectFailFast). */
export const failFastFlag = Flags.boolean({description: 'exit 5 at once when MySQL or RabbitMQ is down at start (AX_CONNECT_FAIL_FAST)'});

/** `--health-port` (serving `what`; 0: any free port) and `--health-host` (127.0.0.1 by default). */
export function healthFlags(what: string) {
  return {
    'health-port': Flags.integer({description: `serve ${what} on this port (0: any free port)`, min: 0, max: 65_535}),
    'health-host': Flags.string({description: 'address for --health-port', default: '127.0.0.1'}),
  };
}

/**
 * Parses `--summary-every` at once (a bad value is invalid_input before anything starts) and
 * returns a starter: `start()` logs `msg` with `fields()` (times in ISO 8601) at that period and
 * returns the stop.
 */
export function summaryEvery(flag: string, logger: Logger, msg: string): {start(fields: () => Record<string, unknown>): () => void} {
  const ms = parseDuration(flag, '--summary-every');
  return {
    start(fields) {
      if (ms === 0) return () => undefined;
      const loop = new Periodic({
        name: msg,
        clock: systemClock,
        everyMs: ms,
        run: () => logger.info(msg, isoTimes(fields())),
        onError: (e) => logger.warn(`${msg} failed`, {error: String(e)}),
      });
      loop.start();
      return () => void loop.stop();
    },
  };
}
