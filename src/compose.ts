/**
 * The composition root: the one module that creates the MySQL stores and the AMQP broker from a
 * configuration, and hands them out as interface types only. The CLI (src/cli/runtime.ts), the
 * SDK's connect() (src/index.ts), the relay unit (src/relay.ts, hence the sidecar) and the tools
 * (bench, demo, tests) get their services from here; nothing else imports an adapter.
 */
import {hostname, userInfo} from 'node:os';
import {type Archiver, configuredArchiver} from './core/archive/archiver.js';
import {DirectoryArchiveTarget} from './core/archive/files.js';
import type {ArchiveTarget} from './core/archive/target.js';
import {operatorName} from './core/audit/audit.js';
import {type Admin, type AdminContext, createAdmin} from './core/admin/service.js';
import type {CellRuntime} from './core/admin/context.js';
import {createSession} from './core/admin/session.js';
import {AmqpBroker} from './core/broker/amqp/broker.js';
import type {Broker} from './core/broker/types.js';
import {cellConfig, cellMap} from './core/cells/cells.js';
import {createClient, type AxClient, type CellConnection} from './core/client.js';
import {type AxConfig, type LoadConfigOptions, loadConfig} from './core/config/config.js';
import {parseAmqpUrls} from './core/config/amqp-urls.js';
import {createLogger, logOptions, type Logger} from './core/log.js';
import {MysqlTaskStore} from './core/store/mysql/store.js';
import {type Db, openDb} from './core/store/mysql/db.js';
import {schemaStore} from './core/store/mysql/migrate.js';
import {MysqlOutboxStore} from './core/store/mysql/outbox.js';
import type {AxStore, OutboxStore, SchemaStore} from './core/store/types.js';
import {systemClock, systemRandom} from './core/time.js';

export interface Runtime extends CellRuntime {
  /**
   * The runtime of one cell: the configuration with that cell and its servers (cellConfig), logs
   * tagged with it; `cells` unchanged. The default cell's is this runtime's own configuration.
   * Throws invalid_input for an unknown cell.
   */
  forCell(cell: string): Runtime;
}

/** A runtime on the loaded configuration `config`, whose `cell` is the default cell. */
export function createRuntime(config: AxConfig, logger?: Logger): Runtime {
  const actor = `${hostname()}:${process.pid}`;
  const log = logger ?? createLogger(config.logLevel, {pid: process.pid}, undefined, logOptions(config));
  const operator = (): string => operatorName({env: process.env.AX_OPERATOR, user: osUser(), host: hostname()});
  const cells = cellMap(config.cells, config.cell);
  const base = {clock: systemClock, random: systemRandom, actor, operator, cells};
  const forCell = (cell: string): Runtime =>
    cell === config.cell ? rt : {...base, config: cellConfig(config, cells, cell), logger: log.child({cell}), forCell};
  const rt: Runtime = {...base, config, logger: log, forCell};
  return rt;
}

/** The OS user's name; `uid<n>` when the system has no name for it (a container's random uid). */
function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid${process.getuid?.() ?? '?'}`;
  }
}

/** Opens the task store (checks the schema unless `requireSchema` is false). Throws AxError('unavailable'). */
export function openStore(rt: Runtime, opts: {requireSchema?: boolean; connectionLimit?: number} = {}): Promise<AxStore> {
  return MysqlTaskStore.open({
    url: rt.config.mysqlUrl,
    createDatabase: rt.config.createDatabase,
    queryTimeoutMs: rt.config.queryTimeoutMs,
    idleTxTimeoutMs: rt.config.dbIdleTxTimeoutMs,
    cell: rt.config.cell,
    now: () => rt.clock.now(),
    payloadInlineBytes: rt.config.payloadInlineBytes,
    ...(opts.requireSchema === undefined ? {} : {requireSchema: opts.requireSchema}),
    ...(opts.connectionLimit === undefined ? {} : {connectionLimit: opts.connectionLimit}),
  });
}

/** The archive's cold storage (AX_ARCHIVE_DIR). Opens nothing: the target checks the directory when used. */
export function openArchiveTarget(rt: Runtime): ArchiveTarget {
  return new DirectoryArchiveTarget(rt.config.archiveDir);
}

/** The archiver of the configured cell over `store` and the configured target (AX_RETENTION, AX_ARCHIVE_*). */
export function createArchiver(rt: Runtime, store: AxStore, target: ArchiveTarget = openArchiveTarget(rt)): Archiver {
  return configuredArchiver(rt.config, rt.clock, store, target);
}

/** Opens ax's database for `ax migrate` (created when missing and allowed). Throws AxError('unavailable'). */
export async function openSchema(rt: Runtime): Promise<SchemaStore> {
  return schemaStore(await openDatabase(rt));
}

/**
 * A raw database handle on ax's database, for tools and tests that run their own SQL (the bench,
 * test setup). Services and commands use the seams above instead.
 */
export function openDatabase(rt: Runtime): Promise<Db> {
  return openDb({
    url: rt.config.mysqlUrl,
    createDatabase: rt.config.createDatabase,
    queryTimeoutMs: rt.config.queryTimeoutMs,
    idleTxTimeoutMs: rt.config.dbIdleTxTimeoutMs,
    connectionLimit: 2,
  });
}

/** Opens the business database's outbox (AX_OUTBOX_MYSQL_URL, else AX_MYSQL_URL); never creates the database. */
export function openOutbox(rt: Runtime, opts: {requireTable?: boolean} = {}): Promise<OutboxStore> {
  return MysqlOutboxStore.open({
    url: rt.config.outboxMysqlUrl || rt.config.mysqlUrl,
    createDatabase: false,
    queryTimeoutMs: rt.config.queryTimeoutMs,
    idleTxTimeoutMs: rt.config.dbIdleTxTimeoutMs,
    connectionLimit: 4,
    ...(opts.requireTable === undefined ? {} : {requireTable: opts.requireTable}),
  });
}

/** Connects to RabbitMQ and declares the topology (unless `declare: false`: read-only tools). `reconnect` for long-running services. */
export async function openBroker(rt: Runtime, opts: {reconnect: boolean; declare?: boolean}): Promise<Broker> {
  const b = new AmqpBroker({
    urls: parseAmqpUrls(rt.config.amqpUrl),
    prefix: rt.config.amqpPrefix,
    cell: rt.config.cell,
    queueType: rt.config.queueType,
    tasksPerMessage: rt.config.doorbellBatch,
    confirmTimeoutMs: rt.config.confirmTimeoutMs,
    clock: rt.clock,
    random: rt.random,
    logger: rt.logger,
    reconnect: opts.reconnect,
    ...(opts.declare === undefined ? {} : {declare: opts.declare}),
  });
  await b.start();
  return b;
}

/**
 * The admin service's view of `rt`'s cell: its openers are this module's. RabbitMQ does not
 * reconnect (one-shot use) unless `longLived` (ax web: the broker outlives a RabbitMQ restart).
 */
export function adminContext(rt: Runtime, o: {longLived?: boolean} = {}): AdminContext {
  const reconnect = o.longLived === true;
  return {
    ...rt,
    open: {
      store: () => openStore(rt),
      broker: (b) => openBroker(rt, {reconnect, declare: b.declare}),
      outbox: (o) => openOutbox(rt, o),
      schema: () => openSchema(rt),
      archiveTarget: () => openArchiveTarget(rt),
      producer: () => openClient(rt, {reconnect: false, giveUpAfterMs: rt.config.queryTimeoutMs}),
    },
    forCell: (cell) => adminContext(rt.forCell(cell), o),
  };
}

/**
 * The admin service (core/admin/service.ts) of `rt`'s cell: connections opened at first use and
 * closed by its close(). `given` connections (a client's own) are used and left open.
 */
export function openAdmin(rt: Runtime, given: {store?: AxStore; broker?: Broker} = {}, o: {longLived?: boolean} = {}): Admin {
  const ctx = adminContext(rt, o);
  return createAdmin(ctx, createSession(ctx, given));
}

export interface ConnectOptions extends LoadConfigOptions {
  logger?: Logger;
}

/**
 * The SDK entry point: loads the configuration (file, env, `overrides`), connects to MySQL and
 * RabbitMQ and returns a producer client. Throws AxError('invalid_input') for bad configuration and
 * AxError('unavailable') when a server cannot be reached or the schema is not migrated.
 */
export function connect(opts: ConnectOptions = {}): Promise<AxClient> {
  return openClient(createRuntime(loadConfig(opts), opts.logger), {reconnect: true});
}

/**
 * A producer client on a new store and broker, both closed by the client's close(). `reconnect`
 * for long-lived callers (the SDK); `giveUpAfterMs` for one-shot ones (see ProducerOptions). Throws
 * AxError('unavailable') when a server cannot be reached (nothing is left open then).
 */
export async function openClient(rt: Runtime, o: {reconnect: boolean; giveUpAfterMs?: number}): Promise<AxClient> {
  const own = await openCellConnection(rt, o);
  return createClient({
    ...rt,
    ...own,
    ...(o.giveUpAfterMs === undefined ? {} : {giveUpAfterMs: o.giveUpAfterMs}),
    // Tasks of another cell's types go to that cell, connected at its first submit.
    route: {
      cellOf: rt.cells,
      open: (cell) => openCellConnection(rt.forCell(cell), o),
    },
  });
}

/** A store and broker of `rt`'s cell, closed together by `release`. Throws AxError('unavailable'), leaving nothing open. */
async function openCellConnection(rt: Runtime, o: {reconnect: boolean}): Promise<CellConnection> {
  const store = await openStore(rt);
  let broker: Broker;
  try {
    broker = await openBroker(rt, {reconnect: o.reconnect});
  } catch (e) {
    await store.close().catch(() => undefined);
    throw e;
  }
  return {
    store,
    broker,
    config: rt.config,
    release: async () => {
      await broker.close().catch(() => undefined);
      await store.close().catch(() => undefined);
    },
  };
}
