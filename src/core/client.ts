import type {AxConfig} from './config/config.js';
import type {Broker} from './broker/types.js';
import type {Logger} from './log.js';
import {type FlushReport, Producer} from './producer/producer.js';
import type {FailureFilterInput, FailureReport} from './inspect/failures.js';
import type {CancelResult} from './inspect/cancel.js';
import type {TaskDetail} from './inspect/inspect.js';
import type {AxStore, ScheduleStore, TaskStore} from './store/types.js';
import {type AdminContext, createAdmin} from './admin/service.js';
import {createSession} from './admin/session.js';
import {AxError, invalid} from './errors.js';
import type {CronService} from './admin/cron.js';
import type {DlqAdmin} from './admin/dlq.js';
import type {TypesAdmin} from './types/admin.js';
import type {TaskSpec} from './task/model.js';
import type {BatchInfo} from './store/types.js';
import {type SubmitBatchOptions, type SubmitBatchResult, submitLinked} from './producer/linked.js';
import {createIdGenerator} from './task/id.js';
import type {Clock, Random} from './time.js';
import {type CellMap, cellMap, cellOf} from './cells/cells.js';

/** The producer-side SDK handle returned by `connect()`. */
export interface AxClient {
  /**
   * Validates, buffers and resolves with the task id (waits only when the buffer is full). A task
   * with `after` is not buffered: it is written at once (submitBatch of one) and the call resolves
   * when it is durable, or rejects with invalid_input (unknown parent, another cell's), nothing written.
   */
  submit(task: TaskSpec): Promise<string>;
  /**
   * Writes tasks that may depend on each other (`after`) in one transaction, and with
   * `{callback}` makes them one batch whose callback runs once when all of them ended (see
   * docs/workflows.md). Resolves when they are durable; throws invalid_input, nothing written, for
   * bad input (see core/producer/linked.ts). All tasks go to one cell (the first task's type's).
   */
  submitBatch(tasks: TaskSpec[], opts?: SubmitBatchOptions): Promise<SubmitBatchResult>;
  /** A batch's progress (counts, done/total, the callback's state); throws not_found. */
  batch(id: string): Promise<BatchInfo>;
  /** Resolves when everything submitted so far is durable (see Producer.flush). */
  flush(): Promise<FlushReport>;
  /**
   * Cancels a submitted, failed or running task, recorded in its history and the audit trail;
   * returns its state before. A running attempt is ended in MySQL at once (its outcome becomes
   * stale, no retry) and its worker is told to stop the handler (see core/inspect/cancel.ts):
   * `notified` says whether that message went out. Throws invalid_input for a malformed id or a
   * reason over 1000 characters, not_found for an unknown id and conflict for a finished task.
   */
  cancel(id: string, reason?: string): Promise<CancelResult>;
  /** A task and its history; throws not_found. */
  getTask(id: string): Promise<TaskDetail>;
  /** Cron schedules: add, list, show, pause, resume, remove, trigger (see CronService); a schedule is kept in its type's cell. */
  cron: Pick<CronService, 'add' | 'list' | 'show' | 'pause' | 'resume' | 'remove' | 'trigger'>;
  /** Dead tasks: list, show, stats, replay (see DlqAdmin); replays are audited. */
  dlq: DlqAdmin;
  /** Task types: list, show, pause, resume (see TypesAdmin); pause and resume are audited. */
  types: TypesAdmin;
  /**
   * Failed attempts of every task (retried or dead) per type × error signature, the largest groups
   * first; the window defaults to the last hour (see `ax errors`). Throws invalid_input for bad input.
   */
  errors(filter?: FailureFilterInput): Promise<FailureReport>;
  /** Flushes, then closes the connections. */
  close(): Promise<FlushReport>;
}

export interface ClientParts {
  config: AxConfig;
  store: TaskStore & ScheduleStore;
  broker: Broker;
  clock: Clock;
  random: Random;
  logger: Logger;
  actor: string;
  /** The operator recorded in the audit trail for admin actions (cancel); throws invalid_input when AX_OPERATOR is bad. */
  operator: () => string;
  /** Closes the store and broker. */
  release: () => Promise<void>;
  /** See ProducerOptions.giveUpAfterMs (one-shot callers such as `ax submit`). */
  giveUpAfterMs?: number;
  /**
   * Routing of submits to the cells of their types (AX_CELLS): a task of another cell than
   * `config.cell` goes to that cell's store and broker, opened by `open` at its first submit (a
   * failed open rejects that submit and is tried again at the next). Absent: every task goes here.
   */
  route?: {cellOf: CellMap; open(cell: string): Promise<CellConnection>};
}

/** The store and broker of one cell, and its configuration (its `cell`); `release` closes them. */
export interface CellConnection {
  config: AxConfig;
  store: TaskStore & ScheduleStore;
  broker: Broker;
  release: () => Promise<void>;
}

export function createClient(p: ClientParts): AxClient {
  const producerOf = (c: Pick<CellConnection, 'config' | 'store' | 'broker'>): Producer =>
    new Producer({
      store: c.store,
      broker: c.broker,
      clock: p.clock,
      random: p.random,
      logger: p.logger,
      defaults: {maxRetries: p.config.maxRetries, payloadLimitBytes: p.config.payloadLimitBytes, cell: c.config.cell},
      batchSize: p.config.submitBatchSize,
      flushMs: p.config.submitFlushMs,
      lingerMs: p.config.submitLingerMs,
      bufferLimit: p.config.submitBufferLimit,
      actor: p.actor,
      ...(p.giveUpAfterMs === undefined ? {} : {giveUpAfterMs: p.giveUpAfterMs}),
    });
  const producer = producerOf(p);
  /** The other cells' connections and producers, by cell, each opened at its cell's first submit (or cron add). */
  const others = new Map<string, Promise<{conn: CellConnection; producer: Producer; release: () => Promise<void>}>>();
  /** The cell a submit goes to; an invalid type goes to the own producer, whose validation refuses it. */
  const cellFor = (spec: TaskSpec): string => {
    const type = spec !== null && typeof spec === 'object' ? spec.type : undefined;
    return p.route && typeof type === 'string' ? cellOf(p.route.cellOf, type) : p.config.cell;
  };
  const otherCell = (cell: string, route: NonNullable<ClientParts['route']>) => {
    let opening = others.get(cell);
    if (!opening) {
      opening = route.open(cell).then((c) => ({conn: c, producer: producerOf(c), release: c.release}));
      others.set(cell, opening);
      opening.catch(() => others.delete(cell));
    }
    return opening;
  };
  const otherProducer = async (cell: string, route: NonNullable<ClientParts['route']>): Promise<Producer> =>
    (await otherCell(cell, route)).producer;
  /** Runs `f` on every producer (this cell's first); the reports merged, the first failure thrown after all ran. */
  const everyProducer = async (f: (pr: Producer) => Promise<FlushReport>): Promise<FlushReport> => {
    const opened = await Promise.allSettled(others.values());
    const all = [producer, ...opened.flatMap((o) => (o.status === 'fulfilled' ? [o.value.producer] : []))];
    const results = await Promise.allSettled(all.map(f));
    const report: FlushReport = {inserted: 0, existing: 0, unpublished: 0, conflicts: []};
    for (const r of results)
      if (r.status === 'fulfilled') {
        report.inserted += r.value.inserted;
        report.existing += r.value.existing;
        report.unpublished += r.value.unpublished;
        report.conflicts.push(...r.value.conflicts);
        if (r.value.throttled) (report.throttled ??= []).push(...r.value.throttled);
      }
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    return report;
  };
  // The admin calls go through the admin service, over this client's connections: another cell's
  // are the producer's (opened by `route` at first use), so the service never closes them.
  const cells = p.route?.cellOf ?? cellMap({}, p.config.cell);
  const noOpener = (what: string) => async (): Promise<never> => {
    throw new AxError('unavailable', `the SDK client has no ${what} connection`);
  };
  const adminCtx = (config: AxConfig, conn: () => Promise<Pick<CellConnection, 'store' | 'broker'>>): AdminContext => ({
    config,
    clock: p.clock,
    random: p.random,
    logger: p.logger,
    actor: p.actor,
    operator: p.operator,
    cells,
    shared: true,
    open: {
      store: async () => (await conn()).store as AxStore,
      broker: async () => (await conn()).broker,
      outbox: noOpener('outbox'),
      schema: noOpener('schema'),
      producer: noOpener('producer'),
      archiveTarget: () => {
        throw new AxError('unavailable', 'the SDK client has no archive');
      },
    },
    forCell: (cell) => {
      const route = p.route;
      if (cell === p.config.cell || !route) return ownCtx;
      return adminCtx({...p.config, cell}, async () => (await otherCell(cell, route)).conn);
    },
  });
  const ownCtx = adminCtx(p.config, async () => p);
  const admin = createAdmin(ownCtx, createSession(ownCtx, {store: p.store as AxStore, broker: p.broker}));
  let closing: Promise<FlushReport> | undefined;
  const newId = createIdGenerator(() => p.clock.now());
  /** The linked submit in `cell` (this client's, or another's opened through `route`). */
  const linked = async (cell: string, specs: TaskSpec[], opts?: SubmitBatchOptions): Promise<SubmitBatchResult> => {
    const c =
      cell === p.config.cell || !p.route ? {config: p.config, store: p.store, broker: p.broker} : (await otherCell(cell, p.route)).conn;
    return submitLinked(
      {
        store: c.store,
        broker: c.broker,
        logger: p.logger,
        defaults: {maxRetries: p.config.maxRetries, payloadLimitBytes: p.config.payloadLimitBytes, cell: c.config.cell},
        actor: p.actor,
        now: () => p.clock.now(),
        newId,
      },
      specs,
      opts,
    );
  };
  const submitBatch = (specs: TaskSpec[], opts?: SubmitBatchOptions): Promise<SubmitBatchResult> => {
    if (!Array.isArray(specs) || specs.length === 0) return Promise.reject(invalid('submitBatch needs at least one task'));
    const cell = cellFor(specs[0]!);
    for (const s of [...specs, ...(opts?.callback ? [opts.callback] : [])])
      if (cellFor(s) !== cell)
        return Promise.reject(invalid(`the tasks of a submitBatch go to one cell: type ${String(s.type)} is not in cell ${cell}`));
    return linked(cell, specs, opts);
  };
  return {
    // Only the admin API: the scheduler's cron policy (materialize, repair, …) is not the SDK's.
    cron: (({add, list, show, pause, resume, remove, trigger}) => ({add, list, show, pause, resume, remove, trigger}))(admin.cron),
    dlq: admin.dlq,
    types: admin.types,
    // The own cell's submit is the producer's own call (no extra promise on the hot path).
    submitBatch,
    batch: (id) => admin.batches.show(id),
    submit: (t) => {
      if (t !== null && typeof t === 'object' && t.after !== undefined) return submitBatch([t]).then((r) => r.ids[0]!);
      const cell = cellFor(t);
      return cell === p.config.cell || !p.route ? producer.submit(t) : otherProducer(cell, p.route).then((pr) => pr.submit(t));
    },
    flush: () => everyProducer((pr) => pr.flush()),
    cancel: (id, reason) => admin.tasks.cancel(id, {reason: reason ?? null}),
    getTask: (id) => admin.tasks.show(id, {archive: false}),
    errors: (filter) => admin.tasks.errors(filter),
    close: () =>
      (closing ??= (async () => {
        try {
          return await everyProducer((pr) => pr.close());
        } finally {
          for (const o of await Promise.allSettled(others.values())) if (o.status === 'fulfilled') await o.value.release();
          await admin.close();
          await p.release();
        }
      })()),
  };
}
