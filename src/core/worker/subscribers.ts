/** The worker's own subscribers of its event stream: the counters and the failure log lines. */
import type {AxEvents} from '../events.js';
import type {Logger} from '../log.js';

/** Counters of one worker process, for logs, tests and metrics. */
export interface WorkerStats {
  claimed: number;
  succeeded: number;
  failed: number;
  dead: number;
  released: number;
  staleOutcomes: number;
  /** Doorbells for tasks already running, finished or not due: acked and dropped. */
  staleDeliveries: number;
  /** Extra doorbells for a task claimed in the same batch by another one: acked with the claim. */
  duplicateDeliveries: number;
  poisoned: number;
  leasesLost: number;
}

/** Counts the worker events on `events` into a live stats object (read it at any time). */
export function countWorkerEvents(events: AxEvents): WorkerStats {
  const s: WorkerStats = {
    claimed: 0,
    succeeded: 0,
    failed: 0,
    dead: 0,
    released: 0,
    staleOutcomes: 0,
    staleDeliveries: 0,
    duplicateDeliveries: 0,
    poisoned: 0,
    leasesLost: 0,
  };
  events.on('task:claimed', () => s.claimed++);
  events.on('task:succeeded', () => s.succeeded++);
  events.on('task:failed', () => s.failed++);
  events.on('task:dead', () => s.dead++);
  events.on('task:released', () => s.released++);
  events.on('outcome:stale', (e) => (s.staleOutcomes += e.count));
  events.on('doorbell:stale', () => s.staleDeliveries++);
  events.on('doorbell:duplicate', (e) => (s.duplicateDeliveries += e.extra));
  events.on('doorbell:poisoned', () => s.poisoned++);
  events.on('lease:lost', () => s.leasesLost++);
  return s;
}

/** The first `n` lines of a stack trace (the message line and the innermost frames). */
export function stackHead(stack: string, n = 6): string {
  return stack.split('\n', n).join('\n');
}

/**
 * Logs each failed attempt at warn (type, id, attempt, the retry delay, the error and the first
 * lines of its stack when it has one) and each dead-letter at error. Returns the unsubscribe.
 */
export function logTaskFailures(events: AxEvents, log: Logger): () => void {
  const offFailed = events.on('task:failed', (e) =>
    log.warn('task failed; will retry', {
      type: e.type,
      id: e.id,
      attempt: e.attempt,
      durationMs: Math.round(e.durationMs),
      retryInMs: e.retryDelayMs,
      error: e.error,
      ...(e.stack === undefined ? {} : {stack: stackHead(e.stack)}),
    }),
  );
  const offDead = events.on('task:dead', (e) =>
    log.error('task dead-lettered', {
      type: e.type,
      id: e.id,
      attempt: e.attempt,
      durationMs: Math.round(e.durationMs),
      error: e.error,
      ...(e.stack === undefined ? {} : {stack: stackHead(e.stack)}),
    }),
  );
  return () => {
    offFailed();
    offDead();
  };
}
