/**
 * The outbox relay as a runnable unit, shared by `ax relay` and the sidecar (sidecar/main.js):
 * one composition of the very same code. Exported as `ax-executor/relay`.
 */
import {type AxConfig} from './core/config/config.js';
import type {Logger} from './core/log.js';
import {createRelayService} from './core/outbox/service.js';
import type {Relay} from './core/outbox/relay.js';
import {createRuntime, openBroker, openOutbox, openStore} from './cli/runtime.js';

export type {Relay, RelayStats} from './core/outbox/relay.js';
export {loadConfig} from './core/config/config.js';
export {createLogger} from './core/log.js';
export {startHealthServer, type HealthServer} from './cli/health.js';

export interface RunningRelay {
  relay: Relay;
  /** Stops the relay, then closes its connections. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Connects to ax's database, the business database (outbox) and RabbitMQ, and starts a relay.
 * Throws AxError('unavailable') when a server cannot be reached or ax's schema is not migrated.
 */
export async function startRelay(config: AxConfig, logger?: Logger): Promise<RunningRelay> {
  const rt = createRuntime(config, logger);
  const store = await openStore(rt);
  const closers: Array<() => Promise<unknown>> = [() => store.close()];
  try {
    const outbox = await openOutbox(rt);
    closers.unshift(() => outbox.close());
    const broker = await openBroker(rt, {reconnect: true});
    closers.unshift(() => broker.close());
    const relay = createRelayService({...rt, outbox, store, broker});
    relay.start();
    let stopping: Promise<void> | undefined;
    return {
      relay,
      stop: () =>
        (stopping ??= (async () => {
          await relay.stop();
          for (const c of closers) await c().catch(() => undefined);
        })()),
    };
  } catch (e) {
    for (const c of closers) await c().catch(() => undefined);
    throw e;
  }
}
