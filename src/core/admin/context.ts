/**
 * What the admin service gets from the composition root (src/compose.ts): the configuration, time,
 * identity, and how to open each server of a cell. Core never imports an adapter; the openers are
 * the adapters' constructors behind interface types.
 */
import type {ArchiveTarget} from '../archive/target.js';
import type {Broker} from '../broker/types.js';
import type {CellMap} from '../cells/cells.js';
import type {AxConfig} from '../config/config.js';
import type {Logger} from '../log.js';
import type {FlushReport} from '../producer/producer.js';
import type {SubmitBatchOptions, SubmitBatchResult} from '../producer/linked.js';
import type {TaskSpec} from '../task/model.js';
import type {AxStore, OutboxStore, SchemaStore} from '../store/types.js';
import type {Clock, Random} from '../time.js';

/** How to open the servers of one cell. Each throws AxError('unavailable') and leaves nothing open. */
export interface AdminOpeners {
  /** ax's task store (the schema is checked). */
  store(): Promise<AxStore>;
  /** RabbitMQ without reconnecting; `declare: false` for read-only uses (ax queues, ax doctor). */
  broker(opts: {declare: boolean}): Promise<Broker>;
  /** The business database's outbox (AX_OUTBOX_MYSQL_URL, else AX_MYSQL_URL). */
  outbox(opts: {requireTable: boolean}): Promise<OutboxStore>;
  /** ax's database for migrations (created when missing and allowed). */
  schema(): Promise<SchemaStore>;
  /** The archive's cold storage (AX_ARCHIVE_DIR); opens nothing. */
  archiveTarget(): ArchiveTarget;
  /**
   * A one-shot producer (ax submit): RabbitMQ without reconnecting, giving up (unavailable) when
   * MySQL stays unavailable longer than AX_QUERY_TIMEOUT; tasks of another cell's types go there.
   */
  producer(): Promise<OneShotProducer>;
}

/** A producer client as the admin service uses it (the SDK's AxClient is one). */
export interface OneShotProducer {
  /** Validates, buffers and resolves with the task id (see AxClient.submit). */
  submit(spec: TaskSpec): Promise<string>;
  /** Resolves when everything submitted so far is durable. */
  flush(): Promise<FlushReport>;
  /** Tasks with dependencies or a batch with a callback, in one transaction (see AxClient.submitBatch). */
  submitBatch(specs: TaskSpec[], opts?: SubmitBatchOptions): Promise<SubmitBatchResult>;
  /** Flushes, then closes its connections. */
  close(): Promise<unknown>;
}

/**
 * What every process knows of the cell it works on: its configuration (whose `cell` it is), time,
 * identity and routing. The composition root's Runtime and the admin service's context both are one.
 */
export interface CellRuntime {
  config: AxConfig;
  clock: Clock;
  random: Random;
  logger: Logger;
  /** host:pid, recorded in history. */
  actor: string;
  /**
   * Who runs admin actions, for the audit trail: AX_OPERATOR, else user@host (see operatorName).
   * Read when asked, so a bad AX_OPERATOR (invalid_input) only stops the commands that audit.
   */
  operator: () => string;
  /** The routing policy of the loaded configuration (AX_CELL the default cell, AX_CELLS the others). */
  cells: CellMap;
}

/** The admin service's view of one cell: a CellRuntime and how to open the cell's servers. */
export interface AdminContext extends CellRuntime {
  open: AdminOpeners;
  /** The openers hand out connections owned elsewhere (the SDK client's): the service never closes them. */
  shared?: boolean;
  /** The context of another cell; throws invalid_input for an unknown cell. */
  forCell(cell: string): AdminContext;
}
