import type {Broker} from '../../src/core/broker/types.js';
import {Producer, type ProducerOptions} from '../../src/core/producer/producer.js';
import type {TestEnv} from './env.js';

/**
 * A producer on `env`'s clock, randomness and logger with the configuration's defaults (batches
 * of 500, 1 s flush, a 10,000-task buffer), writing to `store` and ringing on `broker`; `o`
 * replaces any option.
 */
export function testProducer(env: TestEnv, store: ProducerOptions['store'], broker: Broker, o: Partial<ProducerOptions> = {}): Producer {
  return new Producer({
    store,
    broker,
    clock: env.rt.clock,
    random: env.rt.random,
    logger: env.rt.logger,
    defaults: {maxRetries: 5, payloadLimitBytes: 65_536, cell: 'default'},
    batchSize: 500,
    flushMs: 1000,
    bufferLimit: 10_000,
    actor: 'test:producer',
    ...o,
  });
}
