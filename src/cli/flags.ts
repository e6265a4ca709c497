import {Flags} from '@oclif/core';
import {MAX_RETRIES_LIMIT} from '../core/task/validate.js';

/**
 * `--limit`: a whole number from 1 to `max`, checked by oclif at parse time (exit 2, nothing done).
 * `defaultText` names the default in the help; the command applies it when the flag is absent.
 */
export const limitFlag = (o: {max: number; what: string; defaultText: string; char?: 'n'}) =>
  Flags.integer({
    ...(o.char ? {char: o.char} : {}),
    min: 1,
    max: o.max,
    description: `most ${o.what}, 1 to ${o.max} (default ${o.defaultText})`,
  });

/** `--max-retries`: 0 to MAX_RETRIES_LIMIT, checked by oclif at parse time; `defaultText` names the default. */
export const maxRetriesFlag = (o: {what: string; defaultText: string}) =>
  Flags.integer({
    min: 0,
    max: MAX_RETRIES_LIMIT,
    description: `retries ${o.what} after the first attempt before it is dead, 0 to ${MAX_RETRIES_LIMIT} (default ${o.defaultText})`,
  });
