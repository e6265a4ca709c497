/**
 * One periodic maintenance loop as a `Service` (core/lifecycle.ts): what every part of the
 * scheduler's maintenance (rescuer, reconciler, dead-letter scan, archiver, cell metrics) is, so
 * `ax scheduler` hosts them side by side and `--only` starts any of them alone.
 */
import {errorMessage} from '../../errors.js';
import {Periodic, type PeriodicOptions} from '../../lifecycle.js';
import {LoopService} from './loop-service.js';
import type {Logger} from '../../log.js';
import type {Clock, Random} from '../../time.js';

export interface PeriodicServiceOptions {
  /** Names the loop in logs ("<name> failed"). */
  name: string;
  clock: Clock;
  logger: Logger;
  everyMs: number;
  /** One pass; what it throws is logged at warn as "<name> failed" (see `onError` to change that). */
  run(): Promise<void>;
  /** Runs once before the loop starts (e.g. the dead-letter scan's watermark). Throws: the start throws. */
  begin?: () => Promise<void>;
  /** When the first pass runs after the start (default: one period; 0: at once). */
  firstInMs?: number;
  /** The period is 0: the loop never starts (off), but the service counts as started and ready. */
  offWhenZero?: boolean;
  jitter?: number;
  random?: Random;
  /** Reports a pass's failure (default: warn "<name> failed"). */
  onError?: PeriodicOptions['onError'];
}

/**
 * A Periodic loop as a Service: `start()` runs `begin` once, then schedules the passes; `stop()`
 * waits for the running pass; `ready()` is true between start and stop; `runOnce()` runs a pass now
 * (tests, and the scheduler's own runOnce). Idempotent start and stop.
 */
export class PeriodicService extends LoopService {
  private readonly periodic: Periodic;
  private begun = false;

  constructor(private readonly o: PeriodicServiceOptions) {
    const periodic = new Periodic({
      name: o.name,
      clock: o.clock,
      everyMs: o.everyMs,
      ...(o.jitter === undefined ? {} : {jitter: o.jitter}),
      ...(o.random === undefined ? {} : {random: o.random}),
      run: () => o.run(),
      onError: o.onError ?? ((e) => o.logger.warn(`${o.name} failed`, {error: errorMessage(e)})),
    });
    super(periodic);
    this.periodic = periodic;
  }

  get name(): string {
    return this.o.name;
  }

  /** Passes completed. */
  get passes(): number {
    return this.periodic.count;
  }

  /** Runs `begin` if it has not run yet (the scheduler calls it early, before its first load). */
  async begin(): Promise<void> {
    if (this.begun) return;
    await this.o.begin?.();
    this.begun = true;
  }

  override async start(): Promise<void> {
    if (this.state !== 'new') return;
    await this.begin();
    if (this.state !== 'new') return;
    this.state = 'running';
    if (!(this.o.offWhenZero && this.o.everyMs === 0)) this.periodic.start(this.o.firstInMs);
  }
}
