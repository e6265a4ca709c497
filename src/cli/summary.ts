/** The periodic summary line of long-running commands (`ax scheduler`, `ax relay`). */
import {Flags} from '@oclif/core';
import {parseDuration} from '../core/duration.js';
import {isoTimes, type Logger} from '../core/log.js';

export const summaryEveryFlag = Flags.string({description: 'log a summary line this often (0 to disable)', default: '1m'});

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
      const timer = setInterval(() => logger.info(msg, isoTimes(fields())), ms);
      return () => clearInterval(timer);
    },
  };
}
