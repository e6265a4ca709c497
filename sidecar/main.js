#!/usr/bin/env node
/**
 * The relay sidecar: `node sidecar/main.js`. Runs exactly what `ax relay` runs (runRelayDaemon from
 * the package's own `ax-executor/relay` export: the daemon host of src/core/host) plus the /healthz, /readyz and /metrics (Prometheus)
 * endpoints on AX_RELAY_HEALTH_HOST:AX_RELAY_HEALTH_PORT, configured from
 * the environment only (AX_MYSQL_URL, AX_OUTBOX_MYSQL_URL, AX_AMQP_URL, AX_RELAY_*, …; see
 * sidecar/README.md). Logs are JSON lines on stderr.
 *
 * A server that cannot be reached at start is waited for: each attempt is logged, the backoff is
 * jittered and capped (AX_CONNECT_RETRY_MAX), /readyz answers 503 meanwhile, and SIGTERM ends the
 * waiting (exit 0). AX_CONNECT_FAIL_FAST=true exits 5 at once instead.
 *
 * Exit codes: 0 after SIGTERM/SIGINT and a clean stop; 2 bad configuration; 5 a server is
 * unreachable with AX_CONNECT_FAIL_FAST, refuses the credentials, or ax's schema is not migrated at
 * start; 1 anything else, or a stop that outlasted AX_SHUTDOWN_GRACE. A start-up failure is one JSON
 * line on stderr saying what and why.
 */
import {fileURLToPath} from 'node:url';
import {createLogger, loadConfig, logOptions, MetricsRegistry, runRelayDaemon, startHealthServer} from 'ax-executor/relay';

/** The CLI's exit codes (docs/reference/cli.md, "Exit codes"), for the AxError codes a start can end with. */
const EXIT_CODES = {invalid_input: 2, not_found: 3, conflict: 4, unavailable: 5, timeout: 6};

/** One JSON line on stderr whatever AX_LOG_LEVEL says: the reason the process is about to exit. */
function fatal(msg, e) {
  const error = e instanceof Error ? e.message : String(e);
  const code = typeof e?.code === 'string' ? e.code : 'internal';
  process.stderr.write(
    `${JSON.stringify({time: new Date().toISOString(), level: 'error', msg: `${msg}: ${error}`, code, pid: process.pid})}\n`,
  );
  return EXIT_CODES[code] ?? 1;
}

async function main() {
  // Environment only: AX_CONFIG is dropped and `cwd` is this file, under which no ax.config.json can
  // exist (a file has no entries), so no configuration file is ever read.
  const {AX_CONFIG, ...env} = process.env;
  let config;
  try {
    config = loadConfig({env, cwd: fileURLToPath(import.meta.url)});
  } catch (e) {
    return fatal('ax relay sidecar: bad configuration', e);
  }
  const log = createLogger(config.logLevel, {service: 'ax-relay-sidecar', pid: process.pid}, undefined, logOptions(config));
  if (AX_CONFIG) log.warn('AX_CONFIG is ignored: the sidecar is configured from the environment only', {AX_CONFIG});

  // The cell it relays for (AX_RELAY_CELL; default: the default cell, AX_CELL): the outbox rows of
  // the types AX_CELLS routes there. One sidecar per cell; an unknown cell exits 2.
  const cell = env.AX_RELAY_CELL || config.cell;
  // No endpoint, no metrics: nothing would read them.
  const serve =
    config.relayHealthPort > 0
      ? async (probe) => {
          const metrics = new MetricsRegistry({cell});
          const server = await startHealthServer({
            ...probe,
            metrics: () => metrics.text(),
            host: config.relayHealthHost,
            port: config.relayHealthPort,
          });
          return {...server, url: `http://${config.relayHealthHost}:${server.port}`, metrics};
        }
      : undefined;
  let hang;
  let outcome;
  try {
    // The daemon host (as `ax relay`): SIGTERM/SIGINT (a second one exits at once), the endpoint
    // first, the servers waited for during an outage (SIGTERM ends the waiting), the graceful stop.
    outcome = await runRelayDaemon(config, log, {
      cells: [cell],
      serve,
      connecting: () => ({starting: true}),
      onRunning: (relays, h) => log.info('relay sidecar running', {relay: relays[0].id, health: h.endpoint?.url ?? null}),
      stoppingMsg: 'stopping',
      // The relay finishes its batch in progress; a stop that hangs must not outlive the grace period.
      onStopping: () => {
        hang = setTimeout(() => {
          fatal('ax relay sidecar: stop took too long', new Error(`still stopping after ${config.shutdownGraceMs}ms (AX_SHUTDOWN_GRACE)`));
          process.exit(1);
        }, config.shutdownGraceMs);
        hang.unref();
      },
      result: (relays) => ({relayed: relays[0].stats.relayed, failedRows: relays[0].stats.failedRows}),
    });
  } catch (e) {
    return fatal('ax relay sidecar cannot start', e);
  } finally {
    clearTimeout(hang);
  }
  if (outcome.value.stoppedBeforeStart) {
    log.info('stopped before the relay could start', {signal: outcome.value.signal});
    return 0;
  }
  log.info('relay sidecar stopped', outcome.value);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e) => process.exit(fatal('ax relay sidecar crashed', e)),
);
