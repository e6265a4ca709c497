import type {NewTask} from '../../task/model.js';
import type {ListFilter, Outcome, TaskStore, WorkerInfo} from '../types.js';
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
export class MysqlTaskStore implements TaskStore {
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
  markPublished(ids: string[]) {
    return w.markPublished(this.db, ids);
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
  async close(): Promise<void> {
    await this.db.pool.end();
  }
}
