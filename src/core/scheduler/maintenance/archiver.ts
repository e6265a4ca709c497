/**
 * The archiver as a Service: one archive run every AX_ARCHIVE_EVERY (0: off; core/archive). Every
 * scheduler may run it: the cell's archive lock lets one work at a time.
 */
import {archiveLoop, type ArchiveLoopOptions} from '../../archive/service.js';
import type {Service} from '../../lifecycle.js';

/** archiveLoop as a Service: ready between start and stop (also when off); `stop()` aborts a running pass between batches. */
export class ArchiverService implements Service {
  private readonly loop;
  private state: 'new' | 'running' | 'stopped' = 'new';

  constructor(o: ArchiveLoopOptions) {
    this.loop = archiveLoop(o);
  }

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
