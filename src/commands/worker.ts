import {Flags} from '@oclif/core';
import {AxCommand} from '../cli/base.js';
import {openBroker, openStore} from '../cli/runtime.js';
import {waitForSignal} from '../cli/signals.js';
import {createWorkerService} from '../core/worker/service.js';
import type {PoolName} from '../core/task/model.js';

export default class WorkerCommand extends AxCommand {
  static override summary = 'Run tasks: consume the pool queues and execute handlers until SIGTERM/SIGINT.';
  static override description = `Loads a handlers module (its default export, or its "handlers" export, must be
defineHandlers({...})), consumes the queue of each pool it runs, claims tasks in batches, runs them
and records the outcomes. IO handlers run on the event loop (concurrency cores × 2 × (1 + wait/compute)
unless --io-concurrency is given); CPU handlers run in worker threads (cores + 1 unless
--cpu-threads is given), terminated on timeout.

On SIGTERM or SIGINT the worker stops consuming, lets in-flight tasks finish for the grace period
(AX_SHUTDOWN_GRACE, default 30s), hands back what never started (no attempt used) and exits.`;
  static override examples = [
    '<%= config.bin %> worker --handlers ./dist/handlers.js',
    '<%= config.bin %> worker --handlers ./handlers.js --pools io --io-concurrency 500',
    'AX_LEASE=10s <%= config.bin %> worker --handlers ./handlers.js --pools cpu --cpu-threads 4',
  ];
  static override flags = {
    handlers: Flags.string({description: 'module exporting defineHandlers({...})', required: true}),
    pools: Flags.string({description: 'pools to run, comma-separated', default: 'io,cpu'}),
    'io-concurrency': Flags.integer({description: 'IO pool size (default from the formula)', min: 1, max: 100_000}),
    'cpu-threads': Flags.integer({description: 'CPU pool threads (default cores + 1)', min: 1, max: 256}),
    'queue-capacity': Flags.integer({description: 'local queue of each pool (default 2000)', min: 1, max: 60_000}),
  };

  async run(): Promise<unknown> {
    const {flags} = await this.parse(WorkerCommand);
    const pools = flags.pools.split(',').map((p) => p.trim()) as PoolName[];
    const rt = this.runtime(flags.config, {
      ...(flags['io-concurrency'] === undefined ? {} : {ioConcurrency: flags['io-concurrency']}),
      ...(flags['cpu-threads'] === undefined ? {} : {cpuThreads: flags['cpu-threads']}),
      ...(flags['queue-capacity'] === undefined ? {} : {poolQueueCapacity: flags['queue-capacity']}),
    });
    const store = await openStore(rt);
    try {
      const broker = await openBroker(rt, {reconnect: true});
      try {
        const worker = await createWorkerService({...rt, store, broker, handlersModule: flags.handlers, pools});
        await worker.start();
        if (!this.jsonEnabled()) this.logToStderr(`ax worker ${worker.id} running pools ${pools.join(', ')}; Ctrl-C to stop`);
        const signal = await waitForSignal();
        rt.logger.info('stopping worker', {signal, graceMs: rt.config.shutdownGraceMs});
        await worker.stop(rt.config.shutdownGraceMs);
        return {worker: worker.id, signal, ...worker.stats};
      } finally {
        await broker.close();
      }
    } finally {
      await store.close();
    }
  }
}
