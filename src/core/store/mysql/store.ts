import {keysIndexed} from './keys-index.js';
import type {
  ProgressRow,
  ArchiveBatchParams,
  ArchiveCountParams,
  ArchivedSnapshot,
  ArchiveRestoreParams,
  AuditContext,
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
  TypeKeysParams,
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
  TasksCancelIdsParams,
  BucketParams,
  TasksCancelParams,
  TasksClaimParams,
  TasksFindUndispatchedParams,
  TasksGetParams,
  TasksCreatedCountParams,
  TasksInsertParams,
  TasksInsertLinkedParams,
  WorkersListParams,
  WorkersStopParams,
  WorkersUpsertParams,
  SinceParams,
} from '../types.js';
import * as archive from './archive.js';
import * as audit from './audit.js';
import * as payloadIndex from './payload-index.js';
import {clockNow} from './clock.js';
import * as cron from './cron.js';
import {type Db, type DbOptions, openDb} from './db.js';
import * as dlqScan from './dlq-scan.js';
import * as dlq from './dlq.js';
import * as doctor from './doctor.js';
import * as doorbells from './doorbells.js';
import * as failures from './failures.js';
import * as park from './flow-park.js';
import * as flow from './flow.js';
import * as keys from './keys.js';
import * as holds from './holds.js';
import * as inspect from './inspect.js';
import {leasesRenew} from './leases.js';
import {assertMigrated} from './migrate.js';
import {outcomesApply} from './outcomes.js';
import * as results from './results.js';
import * as rescue from './rescue.js';
import * as cancel from './tasks-cancel.js';
import {tasksClaim} from './tasks-claim.js';
import {tasksInsert} from './tasks-insert.js';
import {tasksInsertLinked} from './links-insert.js';
import * as links from './links-read.js';
import * as workers from './workers.js';
import {invalid} from '../../errors.js';
import {DEFAULT_PAYLOAD_INLINE_BYTES} from '../../config/config.js';

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
 * Every task-database seam (core/store/seams/) on MySQL/MariaDB: each method calls the function of
 * the same name in the module of its seam beside this file (tasks-insert.ts, doorbells.ts,
 * tasks-claim.ts, leases.ts, outcomes.ts, holds.ts, rescue.ts, inspect.ts, tasks-cancel.ts,
 * dlq.ts, dlq-scan.ts, workers.ts, doctor.ts, flow.ts, flow-park.ts, archive.ts, cron.ts, …).
 * Only composition roots see this class; they hand out the interfaces.
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
    return tasksInsert(this.db, this.cell, p, this.localNow(), this.inlineBytes);
  }
  doorbellsMark(p: DoorbellsMarkParams) {
    return doorbells.doorbellsMark(this.db, p.rung);
  }
  doorbellsForget(p: DoorbellsMarkParams) {
    return doorbells.doorbellsForget(this.db, p.rung);
  }
  tasksClaim(p: TasksClaimParams) {
    return tasksClaim(this.db, this.cell, p);
  }
  leasesRenew(p: LeasesRenewParams) {
    return leasesRenew(this.db, p);
  }
  outcomesApply(p: OutcomesApplyParams) {
    return outcomesApply(this.db, this.cell, p.outcomes, p.actor);
  }
  progressWrite(p: {rows: ProgressRow[]}) {
    return results.progressWrite(this.db, this.cell, p.rows);
  }
  resultsOf(ids: readonly string[]) {
    return results.resultsOf(this.db, this.cell, ids);
  }
  tasksInsertLinked(p: TasksInsertLinkedParams) {
    return tasksInsertLinked(this.db, this.cell, p, this.localNow(), this.inlineBytes);
  }
  parentsOf(children: readonly string[]) {
    return links.parentsOf(this.db, children);
  }
  taskLinks(id: string) {
    return links.taskLinks(this.db, this.cell, id);
  }
  batchesList(p: {limit: number}) {
    return links.batchesList(this.db, this.cell, p.limit);
  }
  batchGet(id: string) {
    return links.batchGet(this.db, this.cell, id);
  }
  holdsTake(p: HoldsTakeParams) {
    return holds.holdsTake(this.db, this.cell, p);
  }
  holdsRelease(p: HoldsReleaseParams) {
    return holds.holdsRelease(this.db, this.cell, p.owner);
  }
  leasesFindExpired(p: LeasesFindExpiredParams) {
    return rescue.leasesFindExpired(this.db, this.cell, p);
  }
  tasksFindUndispatched(p: TasksFindUndispatchedParams) {
    return rescue.tasksFindUndispatched(this.db, this.cell, p);
  }
  tasksCancel(p: TasksCancelParams) {
    return cancel.tasksCancel(this.db, this.cell, p);
  }
  tasksCancelMany(p: TasksCancelManyParams) {
    return cancel.tasksCancelMany(this.db, this.cell, p);
  }
  tasksCancelIds(p: TasksCancelIdsParams) {
    return cancel.tasksCancelIds(this.db, this.cell, p);
  }
  payloadIndexes() {
    return payloadIndex.payloadIndexes(this.db);
  }
  payloadIndexAdd(p: {field: string; audit: AuditContext}) {
    return payloadIndex.payloadIndexAdd(this.db, this.cell, p.field, p.audit);
  }
  payloadIndexRemove(p: {field: string; audit: AuditContext}) {
    return payloadIndex.payloadIndexRemove(this.db, this.cell, p.field, p.audit);
  }
  auditList(p: AuditListParams) {
    return audit.auditList(this.db, this.cell, p);
  }
  failureGroups(p: FailureFilter) {
    return failures.failureGroups(this.db, this.cell, p);
  }
  deadList(p: DeadListParams) {
    return dlq.deadList(this.db, this.cell, p);
  }
  deadReplay(p: DeadReplayParams) {
    return dlq.deadReplay(this.db, this.cell, p, this.inlineBytes);
  }
  deadErrorGroups(p: DeadFilter) {
    return dlq.deadErrorGroups(this.db, this.cell, p);
  }
  deadPage(p: DeadPageParams) {
    return dlq.deadPage(this.db, this.cell, p);
  }
  dlqScanGet() {
    return dlqScan.dlqScanGet(this.db, this.cell);
  }
  dlqScanAdvance(p: DlqScanAdvanceParams) {
    return dlqScan.dlqScanAdvance(this.db, this.cell, p);
  }
  tasksGet(p: TasksGetParams) {
    return inspect.tasksGet(this.db, this.cell, p.id);
  }
  tasksGetMany(p: {ids: readonly string[]}) {
    return inspect.tasksGetMany(this.db, this.cell, p.ids);
  }
  historyList(p: HistoryListParams) {
    return inspect.historyList(this.db, p.taskId);
  }
  tasksList(p: ListFilter) {
    return inspect.tasksList(this.db, this.cell, p, this.localNow());
  }

  tasksListRefs(p: ListFilter) {
    return inspect.tasksListRefs(this.db, this.cell, p, this.localNow());
  }
  tasksStats() {
    return inspect.tasksStats(this.db, this.cell);
  }
  backlog() {
    return inspect.backlog(this.db, this.cell);
  }
  backlogByState() {
    return inspect.backlog(this.db, this.cell);
  }
  terminalCounts(p: {since: Date}) {
    return inspect.terminalCounts(this.db, this.cell, p);
  }
  tasksCreatedCount(p: TasksCreatedCountParams) {
    return inspect.tasksCreatedCount(this.db, this.cell, p);
  }
  tasksCreatedBuckets(p: BucketParams) {
    return inspect.tasksCreatedBuckets(this.db, this.cell, p);
  }
  transitionBuckets(p: BucketParams) {
    return inspect.transitionBuckets(this.db, this.cell, p);
  }
  workersUpsert(p: WorkersUpsertParams) {
    return workers.workersUpsert(this.db, this.cell, p);
  }
  workersStop(p: WorkersStopParams) {
    return workers.workersStop(this.db, p.id);
  }
  workersList(p?: WorkersListParams) {
    return workers.workersList(this.db, this.cell, p);
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
    return flow.typesRegister(this.db, this.db.pool, this.cell, p);
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
    return flow.typeSetPaused(this.db, this.cell, p);
  }
  tasksDefer(p: TasksDeferParams) {
    return park.tasksDefer(this.db, this.cell, p);
  }
  parkedRelease(p: ParkedReleaseParams) {
    return park.parkedRelease(this.db, this.cell, p);
  }
  outcomeCounts(p: OutcomeCountsParams) {
    return flow.outcomeCounts(this.db, this.cell, p);
  }
  outcomesPurge(p: {olderThanMs: number}) {
    return flow.outcomesPurge(this.db, this.cell, p.olderThanMs);
  }
  breakerTransition(p: BreakerTransitionParams) {
    return flow.breakerTransition(this.db, this.cell, p);
  }
  typeSetSettings(p: TypeSetSettingsParams) {
    return flow.typeSetSettings(this.db, this.cell, p);
  }
  async typeKeys(p: TypeKeysParams) {
    // Without the index every read would scan the type's rows: reported as not indexed instead.
    if (!(await this.keysIndexed())) return {indexed: false, backlog: 0, withBacklog: 0, running: 0, withRunning: 0, top: []};
    return keys.typeKeys(this.db, this.cell, p);
  }
  private keysIndexedUntil = 0;
  async keysIndexed() {
    if (this.localNow() < this.keysIndexedUntil) return true;
    const yes = await keysIndexed(this.db);
    if (yes) this.keysIndexedUntil = this.localNow() + 60_000;
    return yes;
  }
  clockNow() {
    return clockNow(this.db);
  }
  schedulesAdd(p: SchedulesAddParams) {
    return cron.schedulesAdd(this.db, this.cell, p);
  }
  schedulesGet(p: ScheduleNameParams) {
    return cron.schedulesGet(this.db, this.cell, p.name);
  }
  schedulesList() {
    return cron.schedulesList(this.db, this.cell);
  }
  schedulesSetPaused(p: SchedulesSetPausedParams) {
    return cron.schedulesSetPaused(this.db, this.cell, p);
  }
  schedulesRemove(p: ScheduleNameParams) {
    return cron.schedulesRemove(this.db, this.cell, p.name);
  }
  schedulesDue(p: SchedulesDueParams) {
    return cron.schedulesDue(this.db, this.cell, p.horizonMs);
  }
  schedulesAdvance(p: SchedulesAdvanceParams) {
    return cron.schedulesAdvance(this.db, this.cell, p);
  }
  occurrencesPrevious(p: OccurrencesPreviousParams) {
    return cron.occurrencesPrevious(this.db, this.cell, p);
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
