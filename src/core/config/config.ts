import {readFileSync, existsSync} from 'node:fs';
import {availableParallelism} from 'node:os';
import {resolve} from 'node:path';
import {invalid} from '../errors.js';
import {parseDuration} from '../duration.js';
import {parseMysqlUrl} from './mysql-url.js';
import {parseAmqpUrls} from './amqp-urls.js';

export {redactUrl} from './redact-url.js';
import {type CellsSetting, cellMap, parseCells} from '../cells/cells.js';

/** Every setting of ax. docs/reference/configuration.md lists the same keys, env variables and defaults. */
export interface AxConfig {
  /** MySQL/MariaDB URL of ax's own database (secret: env or file only). */
  mysqlUrl: string;
  /**
   * RabbitMQ URL, or the nodes of one cluster as a comma-separated list, tried in turn on connect and
   * on every reconnect (secret: env or file only).
   */
  amqpUrl: string;
  /** The business database holding `task_outbox` (relay); empty: the same as mysqlUrl. */
  outboxMysqlUrl: string;
  relayIntervalMs: number;
  relayBatchSize: number;
  relayLeaseMs: number;
  outboxRetentionMs: number;
  /** Health endpoint of the relay sidecar: host and port (0: none). */
  relayHealthHost: string;
  relayHealthPort: number;
  /** Address of the /healthz, /readyz and /metrics endpoint of ax worker, scheduler and relay. */
  metricsHost: string;
  /** Port of that endpoint (0: none, unless --health-port is given). */
  metricsPort: number;
  /** How often the scheduler refreshes the cell gauges (backlog, workers) from the database. */
  metricsCellEveryMs: number;
  /** Create the database named in mysqlUrl when it is missing and the user may. */
  createDatabase: boolean;
  /** Resource-isolation cell; queues and rows are scoped by it. The default cell of routing (AX_CELLS). */
  cell: string;
  /** The other cells: the types each takes, and its own database/RabbitMQ when it has them (secret: URLs). */
  cells: CellsSetting;
  /** Prefix of the exchange and queue names. */
  amqpPrefix: string;
  /** `quorum` or `classic` RabbitMQ queues. */
  queueType: 'quorum' | 'classic';
  /** Most tasks one published doorbell message carries (1: one message per task). */
  doorbellBatch: number;
  maxRetries: number;
  retryBaseMs: number;
  retryMaxMs: number;
  taskTimeoutMs: number;
  payloadLimitBytes: number;
  /** Payloads longer than this (UTF-8 bytes) are stored apart from the hot task row, compressed. */
  payloadInlineBytes: number;
  submitBatchSize: number;
  submitFlushMs: number;
  submitLingerMs: number;
  submitBufferLimit: number;
  poolQueueCapacity: number;
  /** IO pool concurrency; 0 = derive from cores × 2 × (1 + ioWaitRatio). */
  ioConcurrency: number;
  /** Expected wait/compute ratio of IO handlers, used to size the IO pool. */
  ioWaitRatio: number;
  /** CPU pool threads; 0 = cores + 1. */
  cpuThreads: number;
  leaseMs: number;
  shutdownGraceMs: number;
  /** How long a cancelled running handler gets to stop after its AbortSignal before it is stopped like a timeout. */
  cancelGraceMs: number;
  /** How often a worker writes its registry row (in-flight, per-type counters); stale after 3 of them. */
  heartbeatMs: number;
  /** A published-but-unclaimed due task is rung again after this long. */
  republishAfterMs: number;
  /** At most this many tasks re-published per reconcile run. */
  reconcileLimit: number;
  /** Re-publish rate cap of the reconciler, tasks per second. */
  reconcileRate: number;
  queryTimeoutMs: number;
  /**
   * MariaDB ends a session that leaves its transaction idle this long (idle_transaction_timeout,
   * whole seconds): a process cut off mid-transaction otherwise keeps its row and gap locks for as
   * long as the server keeps its socket, and every INSERT and claim behind them waits.
   */
  dbIdleTxTimeoutMs: number;
  confirmTimeoutMs: number;
  schedulerTickMs: number;
  schedulerHorizonMs: number;
  schedulerLoadEveryMs: number;
  schedulerHoldMs: number;
  schedulerMaxHeld: number;
  rescueEveryMs: number;
  dlqScanEveryMs: number;
  reconcileEveryMs: number;
  /** Finished tasks older than this (by finish time) are archived. */
  retentionMs: number;
  /** Cold-storage directory of the archive (relative: to the working directory). */
  archiveDir: string;
  /** How often each scheduler runs the archiver (0: never). */
  archiveEveryMs: number;
  archiveBatch: number;
  archivePauseMs: number;
  /** How often a worker reads the type registry (pause, breaker, live handlers) for its admission step. */
  flowRefreshMs: number;
  /** A paused type's task is looked at again after this long (a resume releases it earlier). */
  pausedRecheckMs: number;
  /** A task no live worker handles is looked at again after this long (a registering worker rings it earlier). */
  unhandledRecheckMs: number;
  /** A task no live worker handles goes dead after waiting this long. */
  unhandledDeadAfterMs: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
  /** `json` lines, `pretty` (pino-pretty), or `auto`: pretty when stderr is a terminal. */
  logFormat: 'auto' | 'json' | 'pretty';
  /** Extra field names whose values logs redact, comma-separated (URL passwords always are). */
  logRedact: string;
  /** Exit at once (code 5) when MySQL or RabbitMQ cannot be reached at start, instead of retrying. */
  connectFailFast: boolean;
  /** Longest wait between two connection attempts at start (the backoff's cap before jitter). */
  connectRetryMaxMs: number;
  /** Address of the console (ax web); anything but loopback needs webTokens. */
  webHost: string;
  webPort: number;
  /** The console's tokens: `name:role:sha256:<hex>`, comma-separated (secret: env or file only). */
  webTokens: string;
  /** A console login lasts this long. */
  webSessionTtlMs: number;
  /** Largest request body the console's API takes. */
  webBodyLimitBytes: number;
  /** Mark the console's session cookie Secure (served over HTTPS by a proxy). */
  webSecureCookies: boolean;
}

/**
 * Default of AX_PAYLOAD_INLINE: from the store's insert and claim cost per payload size, inline and
 * stored apart, measured on the development machine (docs/benchmarks.md, "Payloads stored apart").
 */
export const DEFAULT_PAYLOAD_INLINE_BYTES = 4096;

type Kind = 'string' | 'bool' | 'int' | 'duration' | 'bytes' | 'cells';
interface Setting {
  env: string;
  kind: Kind;
  default: unknown;
  secret?: boolean;
  min?: number;
  /** Largest value (int settings). */
  max?: number;
  choices?: readonly string[];
  doc: string;
}

/** The settings table: key → env variable, kind, default and a one-line description. */
export const SETTINGS: Record<keyof AxConfig, Setting> = {
  mysqlUrl: {
    env: 'AX_MYSQL_URL',
    kind: 'string',
    default: 'mysql://root@127.0.0.1:3306/ax',
    secret: true,
    doc: "ax's MySQL/MariaDB database",
  },
  amqpUrl: {
    env: 'AX_AMQP_URL',
    kind: 'string',
    default: 'amqp://guest:guest@127.0.0.1:5672',
    secret: true,
    doc: 'RabbitMQ server, or the nodes of one cluster as a comma-separated list of URLs: ax connects to the first live one from a random start and, when it is lost, to the next; docs/operating/rabbitmq-cluster.md',
  },
  outboxMysqlUrl: {
    env: 'AX_OUTBOX_MYSQL_URL',
    kind: 'string',
    default: '',
    secret: true,
    doc: 'business database with task_outbox (empty: AX_MYSQL_URL)',
  },
  relayIntervalMs: {
    env: 'AX_RELAY_INTERVAL',
    kind: 'duration',
    default: 1000,
    min: 10,
    doc: 'an idle relay looks for outbox rows every interval/3 (3 staggered passes); after rows, at once, then every 20 ms for one interval',
  },
  relayBatchSize: {env: 'AX_RELAY_BATCH', kind: 'int', default: 500, min: 1, doc: 'outbox rows per relay claim'},
  relayLeaseMs: {
    env: 'AX_RELAY_LEASE',
    kind: 'duration',
    default: 30_000,
    min: 100,
    doc: "a dead relay's claimed rows are retaken after this",
  },
  outboxRetentionMs: {
    env: 'AX_OUTBOX_RETENTION',
    kind: 'duration',
    default: 7 * 86_400_000,
    min: 0,
    doc: 'sent outbox rows are deleted after this (0: never)',
  },
  relayHealthHost: {
    env: 'AX_RELAY_HEALTH_HOST',
    kind: 'string',
    default: '127.0.0.1',
    doc: 'address of the relay sidecar health endpoints',
  },
  relayHealthPort: {
    env: 'AX_RELAY_HEALTH_PORT',
    kind: 'int',
    default: 8081,
    min: 0,
    max: 65_535,
    doc: 'port of /healthz and /readyz (0: none)',
  },
  metricsHost: {
    env: 'AX_METRICS_HOST',
    kind: 'string',
    default: '127.0.0.1',
    doc: 'address of /metrics, /healthz and /readyz of ax worker, scheduler and relay',
  },
  metricsPort: {
    env: 'AX_METRICS_PORT',
    kind: 'int',
    default: 0,
    min: 0,
    max: 65_535,
    doc: 'port of /metrics, /healthz and /readyz (0: none; --health-port overrides)',
  },
  metricsCellEveryMs: {
    env: 'AX_METRICS_CELL_EVERY',
    kind: 'duration',
    default: 5000,
    min: 1000,
    doc: 'the scheduler refreshes the cell gauges (backlog, workers) this often',
  },
  createDatabase: {env: 'AX_CREATE_DATABASE', kind: 'bool', default: true, doc: 'create the database if it is missing'},
  cell: {
    env: 'AX_CELL',
    kind: 'string',
    default: 'default',
    doc: 'the default cell (resource-isolation unit): takes every task type AX_CELLS does not route elsewhere; `--cell` picks another',
  },
  cells: {
    env: 'AX_CELLS',
    kind: 'cells',
    default: {},
    secret: true,
    doc: 'more cells, as JSON: `{"big": {"types": ["order_*", "invoice_render"], "mysqlUrl": "mysql://…/ax_big", "amqpUrl": "amqp://…/big"}}`; types are exact names or `domain_*` prefixes, amqpUrl may list the nodes of a cluster like AX_AMQP_URL, the URLs optional (default: AX_MYSQL_URL, AX_AMQP_URL); docs/operating/cells.md',
  },
  amqpPrefix: {env: 'AX_AMQP_PREFIX', kind: 'string', default: 'ax', doc: 'prefix of exchange and queue names'},
  queueType: {env: 'AX_QUEUE_TYPE', kind: 'string', default: 'quorum', choices: ['quorum', 'classic'], doc: 'RabbitMQ queue type'},
  doorbellBatch: {
    env: 'AX_DOORBELL_BATCH',
    kind: 'int',
    default: 50,
    min: 1,
    max: 1000,
    doc: 'most tasks of one pool per RabbitMQ message (1: a message per task)',
  },
  maxRetries: {env: 'AX_MAX_RETRIES', kind: 'int', default: 5, min: 0, max: 100, doc: 'retries after the first attempt before dead'},
  retryBaseMs: {env: 'AX_RETRY_BASE', kind: 'duration', default: 1000, min: 1, doc: 'delay before the first retry (doubles each retry)'},
  retryMaxMs: {env: 'AX_RETRY_MAX', kind: 'duration', default: 3_600_000, min: 1, doc: 'cap of the retry delay before jitter'},
  taskTimeoutMs: {env: 'AX_TASK_TIMEOUT', kind: 'duration', default: 600_000, min: 1, doc: 'default per-attempt timeout'},
  payloadLimitBytes: {env: 'AX_PAYLOAD_LIMIT', kind: 'bytes', default: 65_536, min: 2, doc: 'largest payload (JSON bytes)'},
  payloadInlineBytes: {
    env: 'AX_PAYLOAD_INLINE',
    kind: 'bytes',
    default: DEFAULT_PAYLOAD_INLINE_BYTES,
    min: 0,
    doc: 'payloads longer than this are stored apart from the task row, compressed (0: every payload)',
  },
  submitBatchSize: {env: 'AX_SUBMIT_BATCH', kind: 'int', default: 500, min: 1, doc: 'tasks per producer write'},
  submitFlushMs: {
    env: 'AX_SUBMIT_FLUSH',
    kind: 'duration',
    default: 1000,
    min: 1,
    doc: 'longest a submitted task waits in the producer while earlier writes are in flight (a ceiling, not a wait)',
  },
  submitLingerMs: {
    env: 'AX_SUBMIT_LINGER',
    kind: 'duration',
    default: 0,
    min: 0,
    doc: 'how long a partial batch waits for more tasks before it is written (0: at once, group commit)',
  },
  submitBufferLimit: {env: 'AX_SUBMIT_BUFFER', kind: 'int', default: 10_000, min: 1, doc: 'buffered tasks before submit() waits'},
  poolQueueCapacity: {env: 'AX_POOL_QUEUE', kind: 'int', default: 2000, min: 1, doc: 'local queue of each worker pool'},
  ioConcurrency: {env: 'AX_IO_CONCURRENCY', kind: 'int', default: 0, min: 0, doc: 'IO pool size (0: cores × 2 × (1 + ioWaitRatio))'},
  ioWaitRatio: {env: 'AX_IO_WAIT_RATIO', kind: 'int', default: 15, min: 0, doc: 'wait/compute ratio for IO pool sizing'},
  cpuThreads: {env: 'AX_CPU_THREADS', kind: 'int', default: 0, min: 0, doc: 'CPU pool threads (0: cores + 1)'},
  leaseMs: {env: 'AX_LEASE', kind: 'duration', default: 30_000, min: 100, doc: 'claim lease, renewed while a task runs'},
  shutdownGraceMs: {env: 'AX_SHUTDOWN_GRACE', kind: 'duration', default: 30_000, min: 0, doc: 'time in-flight work gets on SIGTERM'},
  cancelGraceMs: {
    env: 'AX_CANCEL_GRACE',
    kind: 'duration',
    default: 10_000,
    min: 0,
    doc: 'time a cancelled running handler gets after its AbortSignal before it is stopped like a timeout (a CPU thread terminated)',
  },
  heartbeatMs: {
    env: 'AX_HEARTBEAT',
    kind: 'duration',
    default: 5000,
    min: 100,
    doc: 'how often a worker writes its heartbeat and counters (ax workers, ax top, ax doctor, ax_workers); stale after 3 missed',
  },
  republishAfterMs: {
    env: 'AX_REPUBLISH_AFTER',
    kind: 'duration',
    default: 300_000,
    min: 1000,
    doc: 'ring again for due tasks published this long ago',
  },
  reconcileLimit: {env: 'AX_RECONCILE_LIMIT', kind: 'int', default: 10_000, min: 1, doc: 'most tasks one reconcile re-publishes'},
  reconcileRate: {env: 'AX_RECONCILE_RATE', kind: 'int', default: 5000, min: 1, doc: 're-publish rate cap (tasks/s)'},
  queryTimeoutMs: {env: 'AX_QUERY_TIMEOUT', kind: 'duration', default: 30_000, min: 100, doc: 'MySQL per-query timeout'},
  dbIdleTxTimeoutMs: {
    env: 'AX_DB_IDLE_TX_TIMEOUT',
    kind: 'duration',
    default: 5000,
    min: 1000,
    doc: 'MariaDB ends a session whose transaction stays idle this long (its locks are freed)',
  },
  confirmTimeoutMs: {env: 'AX_CONFIRM_TIMEOUT', kind: 'duration', default: 15_000, min: 100, doc: 'RabbitMQ publisher-confirm timeout'},
  schedulerTickMs: {env: 'AX_SCHEDULER_TICK', kind: 'duration', default: 100, min: 1, doc: 'timing-wheel tick of `ax scheduler`'},
  schedulerHorizonMs: {
    env: 'AX_SCHEDULER_HORIZON',
    kind: 'duration',
    default: 10_000,
    min: 100,
    doc: 'the scheduler holds tasks due within this',
  },
  schedulerLoadEveryMs: {
    env: 'AX_SCHEDULER_LOAD_EVERY',
    kind: 'duration',
    default: 1000,
    min: 10,
    doc: 'how often the scheduler loads due tasks',
  },
  schedulerHoldMs: {
    env: 'AX_SCHEDULER_HOLD',
    kind: 'duration',
    default: 3000,
    min: 100,
    doc: "a dead scheduler's tasks are taken over this long after they are due",
  },
  schedulerMaxHeld: {env: 'AX_SCHEDULER_MAX_HELD', kind: 'int', default: 200_000, min: 1, doc: 'most tasks one scheduler holds in memory'},
  rescueEveryMs: {env: 'AX_RESCUE_EVERY', kind: 'duration', default: 5000, min: 100, doc: 'how often the scheduler rescues expired leases'},
  dlqScanEveryMs: {
    env: 'AX_DLQ_SCAN_EVERY',
    kind: 'duration',
    default: 300_000,
    min: 1000,
    doc: 'how often the scheduler reports new dead tasks per type (a warn log line and a dlq:new event)',
  },
  reconcileEveryMs: {
    env: 'AX_RECONCILE_EVERY',
    kind: 'duration',
    default: 300_000,
    min: 1000,
    doc: 'how often the scheduler runs the reconciler',
  },
  retentionMs: {
    env: 'AX_RETENTION',
    kind: 'duration',
    default: 30 * 86_400_000,
    min: 3_600_000,
    doc: 'finished tasks (succeeded, dead, cancelled) are archived this long after they finished',
  },
  archiveDir: {env: 'AX_ARCHIVE_DIR', kind: 'string', default: 'ax-archive', doc: 'archive directory (relative: to the working directory)'},
  archiveEveryMs: {
    env: 'AX_ARCHIVE_EVERY',
    kind: 'duration',
    default: 3_600_000,
    min: 0,
    doc: 'how often the scheduler archives (0: never; `ax archive run` by hand)',
  },
  archiveBatch: {env: 'AX_ARCHIVE_BATCH', kind: 'int', default: 500, min: 1, max: 5000, doc: 'tasks per archive batch (one transaction)'},
  archivePauseMs: {
    env: 'AX_ARCHIVE_PAUSE',
    kind: 'duration',
    default: 100,
    min: 0,
    doc: 'pause between two archive batches, so live traffic does not notice',
  },
  flowRefreshMs: {
    env: 'AX_FLOW_REFRESH',
    kind: 'duration',
    default: 1000,
    min: 100,
    doc: 'how often a worker reads the type registry (pause, breaker, live handlers): a pause takes effect within it',
  },
  pausedRecheckMs: {
    env: 'AX_PAUSED_RECHECK',
    kind: 'duration',
    default: 300_000,
    min: 1000,
    doc: "how long a paused type's task waits before a worker looks at it again (ax types resume releases it at once)",
  },
  unhandledRecheckMs: {
    env: 'AX_UNHANDLED_RECHECK',
    kind: 'duration',
    default: 60_000,
    min: 100,
    doc: 'how long a task no live worker has a handler for waits before it is looked at again (a worker registering the type rings it at once)',
  },
  unhandledDeadAfterMs: {
    env: 'AX_UNHANDLED_DEAD_AFTER',
    kind: 'duration',
    default: 3_600_000,
    min: 1000,
    doc: 'a task no live worker has a handler for goes dead after waiting this long',
  },
  logLevel: {
    env: 'AX_LOG_LEVEL',
    kind: 'string',
    default: 'info',
    choices: ['debug', 'info', 'warn', 'error', 'silent'],
    doc: 'log level (logs go to stderr)',
  },
  logFormat: {
    env: 'AX_LOG_FORMAT',
    kind: 'string',
    default: 'auto',
    choices: ['auto', 'json', 'pretty'],
    doc: 'log lines: json, pretty, or auto (pretty when stderr is a terminal)',
  },
  logRedact: {
    env: 'AX_LOG_REDACT',
    kind: 'string',
    default: '',
    doc: 'more field names logs redact, comma-separated (passwords in URLs always are)',
  },
  connectFailFast: {
    env: 'AX_CONNECT_FAIL_FAST',
    kind: 'bool',
    default: false,
    doc: 'worker, scheduler, relay: exit 5 at once when a server is down at start instead of retrying',
  },
  connectRetryMaxMs: {
    env: 'AX_CONNECT_RETRY_MAX',
    kind: 'duration',
    default: 30_000,
    min: 10,
    doc: 'longest wait between connection attempts at start (jittered backoff from 250ms)',
  },
  webHost: {
    env: 'AX_WEB_HOST',
    kind: 'string',
    default: '127.0.0.1',
    doc: 'address of the console and HTTP API (ax web); anything but loopback needs AX_WEB_TOKENS',
  },
  webPort: {
    env: 'AX_WEB_PORT',
    kind: 'int',
    default: 8080,
    min: 0,
    max: 65_535,
    doc: 'port of the console and HTTP API (0: any free port)',
  },
  webTokens: {
    env: 'AX_WEB_TOKENS',
    kind: 'string',
    default: '',
    secret: true,
    doc: 'console tokens, comma-separated `name:role:sha256:<hex>` (roles viewer, operator, producer); make one with `ax web token`; empty: no login, loopback only',
  },
  webSessionTtlMs: {
    env: 'AX_WEB_SESSION_TTL',
    kind: 'duration',
    default: 8 * 3_600_000,
    min: 60_000,
    doc: 'a console login lasts this long',
  },
  webBodyLimitBytes: {
    env: 'AX_WEB_BODY_LIMIT',
    kind: 'bytes',
    default: 4 * 1024 * 1024,
    min: 1024,
    doc: 'largest request body of the HTTP API (413 above)',
  },
  webSecureCookies: {
    env: 'AX_WEB_SECURE_COOKIES',
    kind: 'bool',
    default: false,
    doc: 'mark the session cookie Secure (the console is behind HTTPS)',
  },
};

export const DEFAULT_CONFIG_FILE = 'ax.config.json';

function coerce(key: string, s: Setting, raw: unknown, from: string): unknown {
  const where = `${key} (${from})`;
  switch (s.kind) {
    case 'string': {
      if (raw === '' && s.default === '') return raw;
      if (typeof raw !== 'string' || raw.length === 0) throw invalid(`${where} must be a non-empty string`);
      if (s.choices && !s.choices.includes(raw)) throw invalid(`${where} must be one of ${s.choices.join(', ')}`);
      return raw;
    }
    case 'bool': {
      if (typeof raw === 'boolean') return raw;
      if (raw === 'true' || raw === '1') return true;
      if (raw === 'false' || raw === '0') return false;
      throw invalid(`${where} must be true or false`);
    }
    case 'int':
    case 'bytes': {
      let n = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw;
      if (s.kind === 'bytes' && typeof raw === 'string') {
        const m = /^(\d+)\s*(b|kib|kb|k|mib|mb|m)?$/i.exec(raw.trim());
        if (m)
          n =
            Number(m[1]) *
            ({'': 1, b: 1, k: 1024, kb: 1024, kib: 1024, m: 1 << 20, mb: 1 << 20, mib: 1 << 20}[(m[2] ?? '').toLowerCase()] ?? 1);
      }
      if (typeof n !== 'number' || !Number.isInteger(n) || n < (s.min ?? 0) || (s.max !== undefined && n > s.max)) {
        const range = s.max === undefined ? `≥ ${s.min ?? 0}` : `from ${s.min ?? 0} to ${s.max}`;
        throw invalid(`${where} must be a whole number ${range}, got ${JSON.stringify(raw)}`);
      }
      return n;
    }
    case 'cells':
      return parseCells(raw, from);
    case 'duration': {
      const n = parseDuration(raw, where);
      if (n < (s.min ?? 0)) throw invalid(`${where} must be at least ${s.min}ms`);
      return n;
    }
  }
}

export interface LoadConfigOptions {
  /** Config file; default `$AX_CONFIG` or `./ax.config.json` if it exists. */
  file?: string;
  env?: NodeJS.ProcessEnv;
  /** Highest precedence (CLI flags for non-secret settings, SDK options). */
  overrides?: Partial<AxConfig>;
  cwd?: string;
}

/**
 * Loads the configuration: defaults < config file < environment < overrides. Throws invalid_input
 * naming the key and its source for unknown keys in the file, bad values, or a missing named file.
 */
export function loadConfig(opts: LoadConfigOptions = {}): AxConfig {
  const env = opts.env ?? process.env;
  const cwd = opts.cwd ?? process.cwd();
  const out: Record<string, unknown> = {};
  for (const [k, s] of Object.entries(SETTINGS)) out[k] = s.default;

  const named = opts.file ?? env.AX_CONFIG;
  const file = named ? resolve(cwd, named) : resolve(cwd, DEFAULT_CONFIG_FILE);
  if (named && !existsSync(file)) throw invalid(`config file ${file} does not exist`);
  if (existsSync(file)) {
    let data: unknown;
    try {
      data = JSON.parse(readFileSync(file, 'utf8'));
    } catch (e) {
      throw invalid(`config file ${file} is not valid JSON: ${(e as Error).message}`);
    }
    if (data === null || typeof data !== 'object' || Array.isArray(data)) throw invalid(`config file ${file} must hold a JSON object`);
    for (const [k, v] of Object.entries(data)) {
      if (k === '$schema') continue;
      const s = SETTINGS[k as keyof AxConfig];
      if (!s) throw invalid(`config file ${file}: unknown setting "${k}"`);
      out[k] = coerce(k, s, v, file);
    }
  }
  for (const [k, s] of Object.entries(SETTINGS)) {
    const v = env[s.env];
    if (v !== undefined && v !== '') out[k] = coerce(k, s, v, `env ${s.env}`);
  }
  for (const [k, v] of Object.entries(opts.overrides ?? {})) {
    const s = SETTINGS[k as keyof AxConfig];
    if (!s) throw invalid(`unknown setting "${k}"`);
    if (v !== undefined) out[k] = coerce(k, s, v, 'option');
  }
  const cfg = out as unknown as AxConfig;
  if (!/^[a-z0-9][a-z0-9_-]{0,31}$/.test(cfg.cell)) throw invalid('cell must be 1-32 characters of a-z, 0-9, _ and -');
  cellMap(cfg.cells, cfg.cell);
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(cfg.amqpPrefix))
    throw invalid('amqpPrefix must be 1-64 characters of A-Z, a-z, 0-9, _, . and -');
  // Checked here so that a bad URL fails at load, before any connection is tried.
  parseMysqlUrl(cfg.mysqlUrl);
  if (cfg.outboxMysqlUrl !== '') parseMysqlUrl(cfg.outboxMysqlUrl);
  parseAmqpUrls(cfg.amqpUrl, 'amqpUrl (AX_AMQP_URL)');
  return cfg;
}

/** IO pool size from the design's formula: cores × 2 × (1 + wait/compute). */
export function ioPoolSize(cfg: Pick<AxConfig, 'ioConcurrency' | 'ioWaitRatio'>, cores = availableParallelism()): number {
  return cfg.ioConcurrency > 0 ? cfg.ioConcurrency : cores * 2 * (1 + cfg.ioWaitRatio);
}

/** CPU pool size: cores + 1 unless configured. */
export function cpuPoolSize(cfg: Pick<AxConfig, 'cpuThreads'>, cores = availableParallelism()): number {
  return cfg.cpuThreads > 0 ? cfg.cpuThreads : cores + 1;
}
