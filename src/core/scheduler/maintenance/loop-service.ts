/**
 * A loop (start, runOnce, stop) as a `Service` (core/lifecycle.ts): the shape every part of the
 * scheduler's maintenance shares. `start()` and `stop()` are idempotent; `ready()` is true between
 * them; `stop()` waits for the running pass; `runOnce()` runs a pass now (tests, the scheduler).
 */
import type {Service} from '../../lifecycle.js';

export interface Loop {
  start(): void;
  runOnce(): Promise<void>;
  stop(): Promise<void>;
}

export class LoopService implements Service {
  protected state: 'new' | 'running' | 'stopped' = 'new';

  constructor(protected readonly loop: Loop) {}

  async start(): Promise<void> {
    if (this.state !== 'new') return;
    this.state = 'running';
    this.loop.start();
  }

  runOnce(): Promise<void> {
    return this.loop.runOnce();
  }

  ready(): boolean {
    return this.state === 'running';
  }

  async stop(): Promise<void> {
    if (this.state === 'stopped') return;
    this.state = 'stopped';
    await this.loop.stop();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
