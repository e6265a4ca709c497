/**
 * How a worker stops the running attempts an operator cancelled (see core/inspect/cancel.ts for
 * the whole path). The cancel has already committed in MySQL (running → cancelled, fence moved
 * on), so nothing here decides anything: it only stops the handler promptly.
 *
 * - Control messages: the worker consumes the cell's control exchange on a queue of its own; a
 *   `cancel` naming a task this worker holds at that fence stops it: the pool aborts the handler's
 *   AbortSignal (IO pool; in a CPU thread the handler's own signal), and a handler still running
 *   after `graceMs` is stopped like a timeout (IO: the attempt ends and its slot is freed; CPU:
 *   the thread is terminated and replaced). A task still waiting in a local queue just leaves it.
 * - Fallback, a lost message: the worker's lease renewal finds the row no longer its own and
 *   aborts the handler (Worker.renew, `lease:lost`).
 * Either way the attempt's outcome, written as usual, is stale (its fence is old) and changes
 * nothing; no retry follows. A control consumer that cannot start is logged and the fallback
 * remains.
 */
import {errorMessage} from '../errors.js';
import type {Logger} from '../log.js';
import type {Broker, ControlMessage, Subscription} from '../broker/types.js';
import type {AxEvents} from '../events.js';
import type {PoolName} from '../task/model.js';
import type {ExecutionPool} from './pool.js';

/** What the watch needs to know of a task the worker holds. */
export interface HeldRef {
  fence: number;
  attempt: number;
  type: string;
  pool: PoolName;
}

export interface CancelWatchOptions {
  broker: Pick<Broker, 'consumeControl'>;
  logger: Logger;
  events: AxEvents;
  /** How long a cancelled handler gets after its signal (AX_CANCEL_GRACE). */
  graceMs: number;
  /** The task the worker holds under `id` (claimed, outcome not yet written), if any. */
  held(id: string): HeldRef | undefined;
  /** The pool as the worker runs it (with its local per-level queues): aborts what waits there. */
  pool(name: PoolName): ExecutionPool | undefined;
  /** The pool itself (its `cancel` stops a running job gracefully). */
  inner(name: PoolName): ExecutionPool | undefined;
}

export class CancelWatch {
  private sub: Subscription | undefined;
  /** Ids being stopped, so a repeated message stops a task once. */
  private readonly stopping = new Set<string>();

  constructor(private readonly o: CancelWatchOptions) {}

  /** Starts consuming control messages; a failure is logged (lease renewal remains the fallback). */
  async start(): Promise<void> {
    try {
      this.sub = await this.o.broker.consumeControl((m) => this.onControl(m));
    } catch (e) {
      this.o.logger.warn('control messages unavailable: cancelled tasks stop at the next lease renewal', {error: errorMessage(e)});
    }
  }

  async stop(): Promise<void> {
    await this.sub?.cancel();
    this.sub = undefined;
  }

  /** Forgets a task whose outcome is written (its id may be claimed again after a replay). */
  done(id: string): void {
    this.stopping.delete(id);
  }

  /** Stops the attempts of `m` this worker holds at the fence named. */
  onControl(m: ControlMessage): void {
    for (const t of m.tasks) {
      const h = this.o.held(t.id);
      if (!h || h.fence !== t.fence || this.stopping.has(t.id)) continue;
      this.stopping.add(t.id);
      const reason = `cancelled by ${m.by}${m.reason ? `: ${m.reason}` : ''}`;
      this.o.events.emit('task:cancelled', {
        id: t.id,
        type: h.type,
        attempt: h.attempt,
        by: m.by,
        reason: m.reason,
        graceMs: this.o.graceMs,
      });
      this.o.logger.info('stopping a cancelled task', {taskId: t.id, type: h.type, attempt: h.attempt, by: m.by, graceMs: this.o.graceMs});
      const running = this.o.inner(h.pool)?.cancel?.(t.id, reason, this.o.graceMs) ?? false;
      // Not in the pool itself: it waits in a local queue (or the pool cannot stop gently): abort.
      if (!running) this.o.pool(h.pool)?.abort(t.id, reason);
    }
  }
}
