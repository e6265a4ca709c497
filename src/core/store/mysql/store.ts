import type {
  ArchiveBatchParams,
  ArchiveCountParams,
  ArchivedSnapshot,
  ArchiveRestoreParams,
  AuditListParams,
  DeadFilter,
  DeadReplayParams,
  DeadListParams,
  DeadPageParams,
  DlqScanAdvanceParams,
  DoorbellsMarkParams,
  FailureFilter,
  FlowViewParams,
  OutcomeCountsParams,
  BreakerTransitionParams,
  TypeSetSettingsParams,
  HandlersRegisterParams,
  ParkedReleaseParams,
  TasksDeferParams,
  TypeHistoryParams,
  TypeSetPausedParams,
  HistoryListParams,
  HoldsReleaseParams,
  HoldsTakeParams,
  LeasesFindExpiredParams,
  LeasesRenewParams,
  ListFilter,
  OccurrencesPreviousParams,
  OutcomesApplyParams,
  ScheduleNameParams,
  ScheduleStore,
  SchedulesAddParams,
  SchedulesAdvanceParams,
  SchedulesDueParams,
  SchedulesSetPausedParams,
  TaskStore,
  TasksCancelManyParams,
  TasksCancelParams,
  TasksClaimParams,
  TasksFindUndispatchedParams,
  TasksGetParams,
  TasksCreatedCountParams,
  TasksInsertParams,
  WorkersListParams,
  WorkersStopParams,
  WorkersUpsertParams,
  SinceParams,
} from '../types.js';
import * as archive from './archive.js';
import * as audit from './audit.js';
import * as cron from './cron.js';
import * as doctor from './doctor.js';
import * as dlq from './dlq.js';
import * as failures from './failures.js';
import * as flow from './flow.js';
import {type Db, type DbOptions, openDb} from './db.js';
import {assertMigrated} from './migrate.js';
import {invalid} from '../../errors.js';
import {DEFAULT_PAYLOAD_INLINE_BYTES} from '../../config/config.js';
import * as r from './read.js';
import * as scan from './scan.js';
import * as w from './write.js';
import {applyOutcomes} from './outcomes.js';

export interface MysqlStoreOptions extends DbOptions {
  cell: string;
  /** The producer's clock, for the remaining delay of buffered tasks. */
  now: () => number;
  /** Check that `ax migrate` has run (default true). */
  requireSchema?: boolean;
  /**
   * Payloads longer than this (UTF-8 bytes of the JSON text) are stored apart from the task row,
   * compressed (AX_PAYLOAD_INLINE; default DEFAULT_PAYLOAD_INLINE_BYTES). A non-negative integer,
   * else open() throws invalid_input.
   */
  payloadInlineBytes?: number;
}

/**
 * Every task-database seam (core/store/types.ts) on MySQL/MariaDB. SQL lives in read.ts, write.ts
 * and cron.ts beside it. Only composition roots see this class; they hand out the interfaces.
 */
export class MysqlTaskStore implements TaskStore, ScheduleStore {
  readonly cell: string;
  readonly db: Db;
  private readonly localNow: () => number;
  private readonly inlineBytes: number;
  private closing: Promise<void> | undefined;

  private constructor(db: Db, cell: string, now: () => number, inlineBytes: number) {
    this.db = db;
    this.cell = cell;
    this.localNow = now;
    this.inlineBytes = inlineBytes;
  }

  /** Opens the pool and checks the schema. Throws AxError('unavailable') with a hint on failure. */
  static async open(opts: MysqlStoreOptions): Promise<MysqlTaskStore> {
    const inlineBytes = opts.payloadInlineBytes ?? DEFAULT_PAYLOAD_INLINE_BYTES;
    if (!Number.isSafeInteger(inlineBytes) || inlineBytes < 0)
      throw invalid(`payloadInlineBytes must be a whole number of bytes ≥ 0, got ${String(opts.payloadInlineBytes)}`);
    const db = await openDb(opts);
    try {
      if (opts.requireSchema !== false) await assertMigrated(db);
    } catch (e) {
      await db.pool.end().catch(() => undefined);
      throw e;
    }
    return new MysqlTaskStore(db, opts.cell, opts.now, inlineBytes);
  }

  tasksInsert(p: TasksInsertParams) {
    return w.insertTasks(this.db, this.cell, p, this.localNow(), this.inlineBytes);
  }
  doorbellsMark(p: DoorbellsMarkParams) {
    return w.markPublished(this.db, p.rung);
  }
  doorbellsForget(p: DoorbellsMarkParams) {
    return w.forgetPublished(this.db, p.rung);
  }
  tasksClaim(p: TasksClaimParams) {
    return w.claim(this.db, this.cell, p);
  }
  leasesRenew(p: LeasesRenewParams) {
    return w.renewLeases(this.db, p);
  }
  outcomesApply(p: OutcomesApplyParams) {
    return applyOutcomes(this.db, this.cell, p.outcomes, p.actor);
  }
  holdsTake(p: HoldsTakeParams) {
    return w.holdForDispatch(this.db, this.cell, p);
  }
  holdsRelease(p: HoldsReleaseParams) {
    return w.releaseDispatch(this.db, this.cell, p.owner);
  }
  leasesFindExpired(p: LeasesFindExpiredParams) {
    return r.findExpiredLeases(this.db, this.cell, p);
  }
  tasksFindUndispatched(p: TasksFindUndispatchedParams) {
    return r.findUndispatched(this.db, this.cell, p);
  }
  tasksCancel(p: TasksCancelParams) {
    return w.cancel(this.db, this.cell, p);
  }
  tasksCancelMany(p: TasksCancelManyParams) {
    return w.cancelMany(this.db, this.cell, p);
  }
  auditList(p: AuditListParams) {
    return audit.listAudit(this.db, this.cell, p);
  }
  failureGroups(p: FailureFilter) {
    return failures.failureGroups(this.db, this.cell, p);
  }
  deadList(p: DeadListParams) {
    return dlq.listDead(this.db, this.cell, p);
  }
  deadReplay(p: DeadReplayParams) {
    return dlq.replayDead(this.db, this.cell, p, this.inlineBytes);
  }
  deadErrorGroups(p: DeadFilter) {
    return dlq.deadErrorGroups(this.db, this.cell, p);
  }
  deadPage(p: DeadPageParams) {
    return dlq.deadPage(this.db, this.cell, p);
  }
  dlqScanGet() {
    return scan.getScanWatermark(this.db, this.cell);
  }
  dlqScanAdvance(p: DlqScanAdvanceParams) {
    return scan.advanceScanWatermark(this.db, this.cell, p);
  }
  tasksGet(p: TasksGetParams) {
    return r.getTask(this.db, this.cell, p.id);
  }
  tasksGetMany(p: {ids: readonly string[]}) {
    return r.getTasks(this.db, this.cell, p.ids);
  }
  historyList(p: HistoryListParams) {
    return r.history(this.db, p.taskId);
  }
  tasksList(p: ListFilter) {
    return r.listTasks(this.db, this.cell, p);
  }
  tasksStats() {
    return r.stats(this.db, this.cell);
  }
  backlog() {
    return r.backlog(this.db, this.cell);
  }
  terminalCounts(p: {since: Date}) {
    return r.terminalCounts(this.db, this.cell, p);
  }
  workersUpsert(p: WorkersUpsertParams) {
    return r.upsertWorker(this.db, this.cell, p);
  }
  workersStop(p: WorkersStopParams) {
    return r.stopWorker(this.db, p.id);
  }
  workersList(p?: WorkersListParams) {
    return r.listWorkers(this.db, this.cell, p);
  }
  tasksCreatedCount(p: TasksCreatedCountParams) {
    return r.createdCount(this.db, this.cell, p);
  }
  duePerPool() {
    return doctor.duePerPool(this.db, this.cell);
  }
  successRepeats(p: SinceParams & {limit: number}) {
    return doctor.successRepeats(this.db, this.cell, p);
  }
  attemptTimes(p: SinceParams) {
    return doctor.attemptTimes(this.db, this.cell, p);
  }
  typesRegister(p: HandlersRegisterParams) {
    return flow.registerTypes(this.db, this.db.pool, this.cell, p);
  }
  flowView(p: FlowViewParams) {
    return flow.flowView(this.db, this.cell, p);
  }
  typesReport(p: FlowViewParams) {
    return flow.typesReport(this.db, this.cell, p);
  }
  typeHistory(p: TypeHistoryParams) {
    return flow.typeHistory(this.db, this.cell, p);
  }
  typeSetPaused(p: TypeSetPausedParams) {
    return flow.setPaused(this.db, this.cell, p);
  }
  tasksDefer(p: TasksDeferParams) {
    return flow.deferTasks(this.db, this.cell, p);
  }
  parkedRelease(p: ParkedReleaseParams) {
    return flow.releaseParked(this.db, this.cell, p);
  }
  outcomeCounts(p: OutcomeCountsParams) {
    return flow.outcomeCounts(this.db, this.cell, p);
  }
  outcomesPurge(p: {olderThanMs: number}) {
    return flow.purgeOutcomes(this.db, this.cell, p.olderThanMs);
  }
  breakerTransition(p: BreakerTransitionParams) {
    return flow.breakerTransition(this.db, this.cell, p);
  }
  typeSetSettings(p: TypeSetSettingsParams) {
    return flow.setSettings(this.db, this.cell, p);
  }
  clockNow() {
    return r.dbNow(this.db);
  }
  schedulesAdd(p: SchedulesAddParams) {
    return cron.addSchedule(this.db, this.cell, p);
  }
  schedulesGet(p: ScheduleNameParams) {
    return cron.getSchedule(this.db, this.cell, p.name);
  }
  schedulesList() {
    return cron.listSchedules(this.db, this.cell);
  }
  schedulesSetPaused(p: SchedulesSetPausedParams) {
    return cron.setPaused(this.db, this.cell, p);
  }
  schedulesRemove(p: ScheduleNameParams) {
    return cron.removeSchedule(this.db, this.cell, p.name);
  }
  schedulesDue(p: SchedulesDueParams) {
    return cron.dueSchedules(this.db, this.cell, p.horizonMs);
  }
  schedulesAdvance(p: SchedulesAdvanceParams) {
    return cron.advanceSchedule(this.db, this.cell, p);
  }
  occurrencesPrevious(p: OccurrencesPreviousParams) {
    return cron.previousOccurrence(this.db, this.cell, p);
  }
  archiveLock() {
    return archive.archiveLock(this.db, this.cell);
  }
  archiveCount(p: ArchiveCountParams) {
    return archive.archiveCount(this.db, this.cell, p.finishedBefore);
  }
  archiveBatch(p: ArchiveBatchParams) {
    return archive.archiveBatch(this.db, this.cell, p);
  }
  archiveDeleteArchived(p: {rows: ArchivedSnapshot[]}) {
    return archive.archiveDeleteArchived(this.db, this.cell, p.rows);
  }
  archiveRestore(p: ArchiveRestoreParams) {
    return archive.archiveRestore(this.db, this.cell, p, this.inlineBytes);
  }
  /** Ends the pool; idempotent. */
  close(): Promise<void> {
    return (this.closing ??= this.db.pool.end());
  }
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
