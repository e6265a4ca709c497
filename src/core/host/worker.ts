/**
 * The worker as one hosted `Service` (core/lifecycle.ts): the workers of every cell served, with
 * their handlers module's onStart/onStop (startWorkerService), so the daemon host (host.ts) runs
 * `ax worker` like any other daemon.
 */
import type {Broker} from '../broker/types.js';
import type {Service, StopOptions} from '../lifecycle.js';
import {startWorkerService, type RunningWorker, type WorkerServiceOptions} from '../worker/service.js';
import type {Worker} from '../worker/worker.js';

/** The summary line's fields: the stats of every cell's worker, summed. */
export function sumWorkerStats(workers: Worker[]): Record<string, number> {
  const out: Record<string, number> = {inFlight: 0};
  for (const w of workers) {
    out.inFlight = (out.inFlight ?? 0) + w.inFlight;
    for (const [k, v] of Object.entries(w.stats)) if (typeof v === 'number') out[k] = (out[k] ?? 0) + v;
  }
  return out;
}

/**
 * `startWorkerService` as a Service. Ready while started and every cell's RabbitMQ connection is
 * up (tracked from the brokers' connected/disconnected events). `stop()` drains with the grace
 * period given (default AX_SHUTDOWN_GRACE) and records whether the module's onStop failed.
 */
export class WorkerHostService implements Service {
  private running: RunningWorker | undefined;
  private readonly brokerUp: boolean[];
  /** The handlers module's onStop threw or outlasted its budget (exit 1). */
  onStopFailed = false;

  constructor(
    private readonly o: WorkerServiceOptions,
    brokers: Broker[],
  ) {
    this.brokerUp = brokers.map(() => true);
    brokers.forEach((b, i) => {
      b.on('connected', () => (this.brokerUp[i] = true));
      b.on('disconnected', () => (this.brokerUp[i] = false));
    });
  }

  /** The started workers (one per cell; empty before the start). */
  get workers(): Worker[] {
    return this.running?.workers ?? [];
  }

  get worker(): Worker | undefined {
    return this.running?.worker;
  }

  /** Loads the handlers module, awaits onStart and starts every cell's worker (throws as startWorkerService). Idempotent. */
  async start(): Promise<void> {
    this.running ??= await startWorkerService(this.o);
  }

  ready(): boolean {
    return this.running !== undefined && this.brokerUp.every(Boolean);
  }

  async stop(options: StopOptions = {}): Promise<void> {
    if (!this.running) return;
    const {onStopFailed} = await this.running.stop(options.graceMs ?? this.o.config.shutdownGraceMs);
    this.onStopFailed ||= onStopFailed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
