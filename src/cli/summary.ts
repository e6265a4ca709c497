/** Flags shared by the long-running commands (`ax worker`, `ax scheduler`, `ax relay`): the endpoint, --fail-fast and the summary line's period. */
import {Flags} from '@oclif/core';
import {parseDuration} from '../core/duration.js';
import type {Logger} from '../core/log.js';
import type {AxConfig} from '../core/config/config.js';
import {startHealthServer, type HealthServer, type HealthServerOptions} from '../health.js';
import {MetricsRegistry} from '../core/metrics/registry.js';

export const summaryEveryFlag = Flags.string({description: 'log a summary line this often (0 to disable)', default: '1m'});

/** `--fail-fast`: the connection retries at start are off (connectFailFast). */
export const failFastFlag = Flags.boolean({description: 'exit 5 at once when MySQL or RabbitMQ is down at start (AX_CONNECT_FAIL_FAST)'});

/**
 * `--health-port` (serving `what` and /metrics; 0: any free port; default AX_METRICS_PORT, whose 0
 * means none) and `--health-host` (default AX_METRICS_HOST, 127.0.0.1).
 */
export function healthFlags(what: string) {
  return {
    'health-port': Flags.integer({
      description: `serve ${what} and GET /metrics (Prometheus) on this port (0: any free port; default AX_METRICS_PORT)`,
      min: 0,
      max: 65_535,
    }),
    'health-host': Flags.string({description: 'address for --health-port (default AX_METRICS_HOST, 127.0.0.1)'}),
  };
}

/** The endpoint of a long-running command: its server and the registry `/metrics` serves. */
export interface Endpoint extends HealthServer {
  url: string;
  metrics: MetricsRegistry;
}

/**
 * Starts the endpoint of a long-running command (/healthz, /readyz, /metrics) where its flags or
 * the configuration say (the flags win; AX_METRICS_PORT=0 and no flag: none, resolves undefined)
 * with a new metrics registry for the command to subscribe, and logs its URL. Rejects as
 * startHealthServer does (conflict: the port is in use; invalid_input: the address cannot be bound).
 */
export async function startEndpoint(
  rt: {config: Pick<AxConfig, 'metricsHost' | 'metricsPort' | 'cell'>; logger: Logger},
  flags: {'health-port'?: number | undefined; 'health-host'?: string | undefined},
  o: Pick<HealthServerOptions, 'ready' | 'details'>,
): Promise<Endpoint | undefined> {
  const port = flags['health-port'] ?? (rt.config.metricsPort > 0 ? rt.config.metricsPort : undefined);
  if (port === undefined) return undefined;
  const host = flags['health-host'] ?? rt.config.metricsHost;
  const metrics = new MetricsRegistry({cell: rt.config.cell});
  const server = await startHealthServer({...o, host, port, metrics: () => metrics.text()});
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${server.port}`;
  rt.logger.info('health endpoints listening', {url, metrics: `${url}/metrics`});
  return {...server, url, metrics};
}

/** Parses `--summary-every` at once (a bad value is invalid_input before anything starts): the summary line's period in ms (0: off). */
export function summaryEveryMs(flag: string): number {
  return parseDuration(flag, '--summary-every');
}
