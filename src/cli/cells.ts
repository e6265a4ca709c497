/** Command plumbing for the processes that serve several cells (`ax worker|scheduler|relay --cell a,b`). */
import {invalid} from '../core/errors.js';
import {connectWithRetry, type ConnectRetryOptions} from '../core/connect-retry.js';
import type {Broker} from '../core/broker/types.js';
import type {AxStore} from '../core/store/types.js';
import {openBroker, openStore, type Runtime} from './runtime.js';

/**
 * The runtime whose settings the process-wide parts (logs, the health endpoint) use: the first
 * cell's. Metrics carry one cell as a label on every series, so a health port (--health-port or
 * AX_METRICS_PORT) with several cells is refused (invalid_input): run one process per cell then.
 */
export function oneCellPerEndpoint(rts: Runtime[], flags: {'health-port'?: number | undefined}): Runtime {
  const rt = rts[0] as Runtime;
  if (rts.length > 1 && (flags['health-port'] !== undefined || rt.config.metricsPort > 0))
    throw invalid(
      `a process serving several cells (${rts.map((r) => r.config.cell).join(', ')}) has no health endpoint: its metrics are per cell. Run one process per cell with --health-port, or unset --health-port and AX_METRICS_PORT`,
    );
  return rt;
}

/** The store and broker of each cell served; disposing closes them all. */
export interface CellConnections extends AsyncDisposable {
  cells: Array<{rt: Runtime; store: AxStore; broker: Broker}>;
}

/**
 * Connects to every cell's MySQL and RabbitMQ, side by side, each waited for as connectWithRetry
 * does (each attempt logged, labelled with its cell). On a failure everything opened is closed and
 * the error thrown (AxError('closed') when `retry.signal` aborted the waiting).
 */
export async function connectCells(rts: Runtime[], retry: ConnectRetryOptions): Promise<CellConnections> {
  const opened: Array<{close(): Promise<unknown>}> = [];
  const closeAll = async (): Promise<void> => {
    for (const c of opened.reverse()) await c.close().catch(() => undefined);
  };
  const label = (rt: Runtime, what: string) => (rts.length > 1 ? `${what} (cell ${rt.config.cell})` : what);
  // One cell failing for good stops the others' waiting too.
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  retry.signal?.addEventListener('abort', onAbort, {once: true});
  if (retry.signal?.aborted) stop.abort();
  const each = {...retry, signal: stop.signal};
  let firstError: unknown;
  const results = await Promise.allSettled(
    rts.map(async (rt) => {
      try {
        const store = await connectWithRetry(rt, label(rt, 'MySQL'), () => openStore(rt), each);
        opened.push(store);
        const broker = await connectWithRetry(rt, label(rt, 'RabbitMQ'), () => openBroker(rt, {reconnect: true}), each);
        opened.push(broker);
        return {rt, store, broker};
      } catch (e) {
        firstError ??= e;
        stop.abort();
        throw e;
      }
    }),
  );
  retry.signal?.removeEventListener('abort', onAbort);
  if (results.some((r) => r.status === 'rejected')) {
    await closeAll();
    throw firstError;
  }
  return {
    cells: results.map((r) => (r as PromiseFulfilledResult<{rt: Runtime; store: AxStore; broker: Broker}>).value),
    [Symbol.asyncDispose]: closeAll,
  };
}
