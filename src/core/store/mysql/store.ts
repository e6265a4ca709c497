import type {NewTask} from '../../task/model.js';
import type {ListFilter, NewSchedule, Outcome, RungRef, ScheduleStore, TaskStore, WorkerInfo} from '../types.js';
import * as cron from './cron.js';
import {type Db, type DbOptions, openDb} from './db.js';
import {assertMigrated} from './migrate.js';
import * as r from './read.js';
import * as w from './write.js';

export interface MysqlStoreOptions extends DbOptions {
  cell: string;
  /** The producer's clock, for the remaining delay of buffered tasks. */
  now: () => number;
  /** Check that `ax migrate` has run (default true). */
  requireSchema?: boolean;
}

/** The TaskStore on MySQL/MariaDB. SQL lives in read.ts and write.ts beside it. */
export class MysqlTaskStore implements TaskStore, ScheduleStore {
  readonly cell: string;
  readonly db: Db;
  private readonly localNow: () => number;

  private constructor(db: Db, cell: string, now: () => number) {
    this.db = db;
    this.cell = cell;
    this.localNow = now;
  }

  /** Opens the pool and checks the schema. Throws AxError('unavailable') with a hint on failure. */
  static async open(opts: MysqlStoreOptions): Promise<MysqlTaskStore> {
    const db = await openDb(opts);
    try {
      if (opts.requireSchema !== false) await assertMigrated(db);
    } catch (e) {
      await db.pool.end().catch(() => undefined);
      throw e;
    }
    return new MysqlTaskStore(db, opts.cell, opts.now);
  }

  insertTasks(tasks: NewTask[], actor: string) {
    return w.insertTasks(this.db, this.cell, tasks, actor, this.localNow());
  }
  markPublished(rung: RungRef[]) {
    return w.markPublished(this.db, rung);
  }
  holdForDispatch(owner: string, horizonMs: number, holdMs: number, limit: number) {
    return w.holdForDispatch(this.db, this.cell, owner, horizonMs, holdMs, limit);
  }
  releaseDispatch(owner: string) {
    return w.releaseDispatch(this.db, this.cell, owner);
  }
  claim(ids: string[], worker: string, leaseMs: number) {
    return w.claim(this.db, this.cell, ids, worker, leaseMs);
  }
  renewLeases(held: Array<{id: string; fence: number}>, leaseMs: number) {
    return w.renewLeases(this.db, held, leaseMs);
  }
  applyOutcomes(outcomes: Outcome[], actor: string) {
    return w.applyOutcomes(this.db, outcomes, actor);
  }
  cancel(id: string, actor: string, reason: string | null) {
    return w.cancel(this.db, this.cell, id, actor, reason);
  }
  findExpiredLeases(limit: number) {
    return r.findExpiredLeases(this.db, this.cell, limit);
  }
  findUndispatched(limit: number, republishAfterMs: number) {
    return r.findUndispatched(this.db, this.cell, limit, republishAfterMs);
  }
  getTask(id: string) {
    return r.getTask(this.db, this.cell, id);
  }
  history(id: string) {
    return r.history(this.db, id);
  }
  listTasks(filter: ListFilter) {
    return r.listTasks(this.db, this.cell, filter);
  }
  stats() {
    return r.stats(this.db, this.cell);
  }
  upsertWorker(info: WorkerInfo, inFlight: number) {
    return r.upsertWorker(this.db, this.cell, info, inFlight);
  }
  stopWorker(id: string) {
    return r.stopWorker(this.db, id);
  }
  listWorkers() {
    return r.listWorkers(this.db, this.cell);
  }
  now() {
    return r.dbNow(this.db);
  }
  addSchedule(s: NewSchedule) {
    return cron.addSchedule(this.db, this.cell, s);
  }
  getSchedule(name: string) {
    return cron.getSchedule(this.db, this.cell, name);
  }
  listSchedules() {
    return cron.listSchedules(this.db, this.cell);
  }
  setPaused(name: string, paused: boolean, nextFireAt?: Date | null) {
    return cron.setPaused(this.db, this.cell, name, paused, nextFireAt);
  }
  removeSchedule(name: string) {
    return cron.removeSchedule(this.db, this.cell, name);
  }
  dueSchedules(horizonMs: number) {
    return cron.dueSchedules(this.db, this.cell, horizonMs);
  }
  advanceSchedule(name: string, expectedNext: Date | null, next: Date | null, last: {fireAt: Date; taskId: string} | null) {
    return cron.advanceSchedule(this.db, this.cell, name, expectedNext, next, last);
  }
  previousOccurrence(name: string, before: Date, excludeId?: string) {
    return cron.previousOccurrence(this.db, this.cell, name, before, excludeId);
  }
  async close(): Promise<void> {
    await this.db.pool.end();
  }
}
