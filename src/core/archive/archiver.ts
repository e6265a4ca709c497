/**
 * The archiver (issue 13 §1): moves finished tasks (succeeded, dead, cancelled) whose finished_at
 * is older than the retention window, with their history, from MySQL to an ArchiveTarget.
 *
 * "Older than" is the finish time, not the creation time: a task created 31 days ago with a long
 * delay that finished yesterday stays, since its recent failure or result is what the hot table is
 * for. Submitted, failed and running tasks are never archived; cron schedules live in another table.
 *
 * Safety, per batch: the rows are locked by primary key in one transaction, written to a part
 * (data + manifest `pending`, each atomically), read back and compared, and only then deleted in
 * the same transaction; the part is then marked `complete`. A crash before the commit leaves the
 * rows in MySQL and a `pending` part: the next run's recovery deletes the rows still exactly as
 * archived (and excludes from the part any that changed since), so every row ends in exactly one
 * place. One archiver per cell at a time (the store's archive lock); a run that finds it taken does
 * nothing. Batches are paced by `pauseMs` so live traffic does not notice.
 */
import type {AxConfig} from '../config/config.js';
import {AxError, invalid} from '../errors.js';
import {formatDuration} from '../duration.js';
import {
  ARCHIVABLE_STATES,
  type ArchivableState,
  type ArchiveBatchResult,
  type ArchiveCursor,
  type ArchivedTask,
  type ArchiveStore,
} from '../store/archive-types.js';
import type {DbClockStore} from '../store/types.js';
import {type Clock, sleep} from '../time.js';
import {dayOf, decodeLine, encodeLine, snapshotOf} from './format.js';
import type {ArchiveTarget, PartManifest} from './target.js';

/** The shortest retention ax accepts: finished rows younger than this are the hot table's purpose. */
export const MIN_RETENTION_MS = 3_600_000;

/** Throws invalid_input when `ms` is too short a window: below 1h or the longest retry delay (AX_RETRY_MAX). */
export function checkRetention(ms: number, retryMaxMs: number): void {
  const min = Math.max(MIN_RETENTION_MS, retryMaxMs);
  if (ms < min)
    throw invalid(
      `a retention of ${formatDuration(ms)} is shorter than ${formatDuration(min)} (the longest retry delay AX_RETRY_MAX, and at least 1h): finished tasks must outlive their retry horizon in the hot table`,
    );
}

export interface ArchiverOptions {
  store: ArchiveStore & DbClockStore;
  target: ArchiveTarget;
  cell: string;
  clock: Clock;
  /** The default window (AX_RETENTION). */
  retentionMs: number;
  /** The longest retry delay (AX_RETRY_MAX): a retention below it is refused. */
  retryMaxMs: number;
  /** Tasks per batch (AX_ARCHIVE_BATCH). */
  batchSize: number;
  /** Wait between two batches (AX_ARCHIVE_PAUSE). */
  pauseMs: number;
}

export interface ArchiveRunOptions {
  /** Count what would be archived; change nothing (no lock on files, no write, no delete). */
  dryRun?: boolean;
  /** The window for this run (default: the configured retention). */
  olderThanMs?: number;
  signal?: AbortSignal;
  onProgress?: (p: ArchiveProgress) => void;
}

export interface ArchiveProgress {
  state: ArchivableState;
  archived: number;
  parts: number;
}

export type StateCounts = Record<ArchivableState, number>;

export interface ArchiveRunReport {
  /** False when another archiver of the cell held the lock: nothing was done. */
  ran: boolean;
  dryRun: boolean;
  /** Rows that finished before this instant (database clock) were in the window. */
  cutoff: string | null;
  /** Tasks archived and deleted (dry run: that would be), per state. */
  tasks: StateCounts;
  /** History rows archived with them (not counted in a dry run). */
  history: number;
  /** Parts written. */
  parts: number;
  /** Tasks of pending parts of an earlier, interrupted run whose deletion this run finished. */
  recovered: number;
  /** Temporary and uncommitted files of an interrupted run removed. */
  cleaned: number;
}

const zero = (): StateCounts => ({succeeded: 0, dead: 0, cancelled: 0});

export class Archiver {
  constructor(private readonly o: ArchiverOptions) {
    if (!Number.isInteger(o.batchSize) || o.batchSize < 1) throw new RangeError(`archive batch must be ≥ 1, got ${o.batchSize}`);
  }

  /** One archive run (see the module comment). Throws before changing anything on bad input. */
  async run(r: ArchiveRunOptions = {}): Promise<ArchiveRunReport> {
    const window = r.olderThanMs ?? this.o.retentionMs;
    checkRetention(window, this.o.retryMaxMs);
    const report: ArchiveRunReport = {
      ran: false,
      dryRun: r.dryRun === true,
      cutoff: null,
      tasks: zero(),
      history: 0,
      parts: 0,
      recovered: 0,
      cleaned: 0,
    };
    if (!r.dryRun) await this.o.target.checkWritable();
    const lease = await this.o.store.archiveLock();
    if (!lease) return report;
    try {
      report.ran = true;
      const cutoff = new Date((await this.o.store.clockNow()).getTime() - window);
      report.cutoff = cutoff.toISOString();
      if (r.dryRun) {
        report.tasks = await this.o.store.archiveCount({finishedBefore: cutoff});
        return report;
      }
      report.cleaned = await this.o.target.cleanup(this.o.cell);
      report.recovered = await this.recover();
      for (const state of ARCHIVABLE_STATES) {
        let after: ArchiveCursor | null = null;
        do {
          r.signal?.throwIfAborted();
          const written: PartManifest[] = [];
          let history = 0;
          let writing = false;
          const res: ArchiveBatchResult = await this.o.store
            .archiveBatch({
              state,
              finishedBefore: cutoff,
              after,
              limit: this.o.batchSize,
              write: async (tasks) => {
                // Called again after a deadlock retry: the parts of the rolled-back attempt go first.
                for (const m of written.splice(0)) await this.o.target.removePart(m);
                history = 0;
                writing = true;
                await this.writeVerified(tasks, written);
                history = written.reduce((h, m) => h + m.history, 0);
                writing = false;
              },
            })
            .catch(async (e: unknown) => {
              // A write or verify failure rolled the batch back: its parts are void. (A failure after
              // the write, e.g. an unknown commit outcome, leaves them pending for the recovery.)
              if (writing) for (const m of written) await this.o.target.removePart(m).catch(() => undefined);
              throw e;
            });
          for (const m of written) await this.o.target.saveManifest({...m, status: 'complete'});
          report.tasks[state] += res.deleted.length;
          report.history += res.deleted.length > 0 ? history : 0;
          report.parts += written.length;
          r.onProgress?.({state, archived: report.tasks[state], parts: report.parts});
          after = res.next;
          if (after && this.o.pauseMs > 0) await sleep(this.o.clock, this.o.pauseMs, r.signal);
        } while (after);
      }
      return report;
    } finally {
      await lease.release();
    }
  }

  /** Writes `tasks` as one part per day, reads each back and compares it line by line. */
  private async writeVerified(tasks: ArchivedTask[], out: PartManifest[]): Promise<void> {
    const byDay = new Map<string, ArchivedTask[]>();
    for (const t of tasks) {
      const d = dayOf(t);
      let list = byDay.get(d);
      if (!list) byDay.set(d, (list = []));
      list.push(t);
    }
    for (const [day, list] of byDay) {
      const ids = list.map((t) => String(t.task.id)).sort();
      const lines = list.map(encodeLine);
      const m = await this.o.target.writePart({
        cell: this.o.cell,
        day,
        lines,
        meta: {
          tasks: list.length,
          history: list.reduce((n, t) => n + t.history.length, 0),
          minId: ids[0] as string,
          maxId: ids.at(-1) as string,
          createdAt: new Date(this.o.clock.now()).toISOString(),
        },
      });
      out.push(m);
      const back = await this.o.target.readPart(m);
      if (back.length !== lines.length || back.some((l, i) => l !== lines[i]))
        throw new AxError('internal', `archive part ${m.part} of ${day} read back differently than written: nothing deleted`);
    }
  }

  /** Finishes the pending parts of an interrupted run; returns the tasks it deleted. */
  private async recover(): Promise<number> {
    let n = 0;
    for (const m of await this.o.target.listPending(this.o.cell)) {
      const rows = (await this.o.target.readPart(m)).map((l) => decodeLine(l, m.part));
      const movedOn: string[] = [];
      for (let i = 0; i < rows.length; i += this.o.batchSize) {
        const res = await this.o.store.archiveDeleteArchived({rows: rows.slice(i, i + this.o.batchSize).map(snapshotOf)});
        n += res.deleted.length;
        movedOn.push(...res.movedOn);
      }
      await this.o.target.saveManifest({...m, status: 'complete', excludedIds: [...new Set([...m.excludedIds, ...movedOn])]});
    }
    return n;
  }
}

/**
 * The archiver of `config`'s cell over `store` and `target`, with the configured window and pace
 * (AX_RETENTION, AX_RETRY_MAX, AX_ARCHIVE_BATCH, AX_ARCHIVE_PAUSE). Throws RangeError for a batch below 1.
 */
export function configuredArchiver(
  config: Pick<AxConfig, 'cell' | 'retentionMs' | 'retryMaxMs' | 'archiveBatch' | 'archivePauseMs'>,
  clock: Clock,
  store: ArchiverOptions['store'],
  target: ArchiveTarget,
): Archiver {
  return new Archiver({
    store,
    target,
    cell: config.cell,
    clock,
    retentionMs: config.retentionMs,
    retryMaxMs: config.retryMaxMs,
    batchSize: config.archiveBatch,
    pauseMs: config.archivePauseMs,
  });
}
