/**
 * The archive loop of `ax scheduler`: one archive run every AX_ARCHIVE_EVERY (0: off) on the
 * lifecycle's Periodic. Every scheduler may run it: the cell's archive lock lets one work at a time
 * and the others' runs return at once.
 */
import {errorMessage} from '../errors.js';
import {Periodic} from '../lifecycle.js';
import type {Logger} from '../log.js';
import type {Clock, Random} from '../time.js';
import type {Archiver, ArchiveRunReport} from './archiver.js';

export interface ArchiveLoopOptions {
  archiver: Archiver;
  clock: Clock;
  random: Random;
  logger: Logger;
  everyMs: number;
  onRun?: (r: ArchiveRunReport) => void;
}

/** The loop: `start()` (a no-op when everyMs is 0), `runOnce()`, and `stop()`, which aborts a running pass between batches. */
export interface ArchiveLoop {
  start(): void;
  runOnce(): Promise<void>;
  stop(): Promise<void>;
}

export function archiveLoop(o: ArchiveLoopOptions): ArchiveLoop {
  let abort = new AbortController();
  const loop = new Periodic({
    name: 'archive',
    clock: o.clock,
    everyMs: o.everyMs,
    jitter: 0.1,
    random: o.random,
    run: async () => {
      const r = await o.archiver.run({signal: abort.signal});
      o.onRun?.(r);
      const n = r.tasks.succeeded + r.tasks.dead + r.tasks.cancelled;
      if (n > 0 || r.recovered > 0)
        o.logger.info('archived finished tasks', {...r.tasks, history: r.history, parts: r.parts, recovered: r.recovered});
    },
    onError: (e) => {
      if (!abort.signal.aborted) o.logger.warn('archive failed', {error: errorMessage(e)});
    },
  });
  return {
    start: () => {
      if (o.everyMs > 0) loop.start();
    },
    runOnce: () => loop.runOnce(),
    stop: async () => {
      abort.abort(new Error('stopping'));
      await loop.stop();
      abort = new AbortController();
    },
  };
}
