/**
 * The archive in the admin service: the days of this cell's archive (AX_ARCHIVE_DIR), an archived
 * task, the restore of archived tasks into the hot table (audited as `archive restore`), and an
 * archive run (core/archive/archiver.ts) with its progress. list and show read the archive only
 * (no MySQL). Every call validates its input first (invalid_input, nothing opened); a corrupt
 * archive file is refused with its name (conflict) before anything is restored.
 */
import {
  type ArchiveDay,
  checkDay,
  type FoundArchived,
  listArchive,
  type RestoreReport,
  restoreArchived,
  showArchived,
} from '../archive/admin.js';
import {type ArchiveProgress, type ArchiveRunReport, checkRetention, configuredArchiver} from '../archive/archiver.js';
import {parseDuration} from '../duration.js';
import {invalid} from '../errors.js';
import {isTaskId} from '../task/id.js';
import type {AdminSession} from './session.js';

export interface ArchiveListing {
  /** Where the archive is (the directory). */
  location: string;
  cell: string;
  /** Oldest first. */
  days: ArchiveDay[];
}

/** What to restore: archived tasks by id (all or nothing), or every archived task of a day (YYYY-MM-DD, UTC). */
export interface ArchiveRestoreRequest {
  ids?: readonly string[];
  day?: string | undefined;
}

export interface ArchiveRunRequest {
  /** Count what would be archived; change nothing. */
  dryRun?: boolean;
  /** The window for this run, a duration (`7d`); default AX_RETENTION. */
  olderThan?: string | undefined;
  /** Stops the run between batches (what is done stays done). */
  signal?: AbortSignal;
  onProgress?: (p: ArchiveProgress) => void;
}

export interface ArchiveAdmin {
  /** The days of this cell's archive: parts, tasks, history rows, bytes, pending parts. Throws conflict for an unreadable manifest. */
  list(): Promise<ArchiveListing>;
  /** An archived task and the part holding it. Throws invalid_input for a malformed id, not_found when no part holds it. */
  show(id: string): Promise<FoundArchived>;
  /**
   * Puts archived tasks back into the hot table with their history (see restoreArchived), audited
   * as the operator (AX_OPERATOR). Throws invalid_input for ids and a day together, neither,
   * malformed ids or day, a bad AX_OPERATOR (nothing opened); not_found, conflict (still in the hot
   * table, a corrupt file), unavailable as restoreArchived and MySQL say.
   */
  restore(req: ArchiveRestoreRequest): Promise<RestoreReport>;
  /**
   * One archive run of this cell (see Archiver.run): `ran: false` when another archiver holds the
   * cell's lock. Throws invalid_input for a bad or too short window (checked before MySQL is
   * opened) or an unusable archive directory (nothing changed), unavailable when MySQL cannot be reached.
   */
  run(req?: ArchiveRunRequest): Promise<ArchiveRunReport>;
}

export function createArchiveAdmin(s: AdminSession): ArchiveAdmin {
  const {ctx} = s;
  const cell = ctx.config.cell;
  return {
    async list() {
      const target = s.archiveTarget();
      return {location: target.location, cell, days: await listArchive(target, cell)};
    },
    async show(id) {
      if (!isTaskId(id)) throw invalid(`"${id}" is not a task id (a lower-case UUID)`);
      return showArchived(s.archiveTarget(), cell, id);
    },
    async restore(req) {
      const ids = [...new Set(req.ids ?? [])];
      if (ids.length > 0 && req.day !== undefined) throw invalid('give ids or --day, not both');
      if (ids.length === 0 && req.day === undefined) throw invalid('give the ids of archived tasks, or --day YYYY-MM-DD');
      const bad = ids.filter((id) => !isTaskId(id));
      if (bad.length > 0) throw invalid(`not task ids (lower-case UUIDs): ${bad.join(', ')}`);
      if (req.day !== undefined) checkDay(req.day);
      const sel = req.day === undefined ? {ids} : {day: req.day};
      const audit = {operator: ctx.operator(), command: 'archive restore', filter: sel, reason: null};
      const store = await s.store();
      return restoreArchived(s.archiveTarget(), store, cell, sel, audit);
    },
    async run(req = {}) {
      const olderThanMs = req.olderThan === undefined ? undefined : parseDuration(req.olderThan, '--older-than');
      checkRetention(olderThanMs ?? ctx.config.retentionMs, ctx.config.retryMaxMs);
      const store = await s.store();
      return configuredArchiver(ctx.config, ctx.clock, store, s.archiveTarget()).run({
        ...(req.dryRun === undefined ? {} : {dryRun: req.dryRun}),
        ...(req.signal === undefined ? {} : {signal: req.signal}),
        ...(olderThanMs === undefined ? {} : {olderThanMs}),
        ...(req.onProgress === undefined ? {} : {onProgress: req.onProgress}),
      });
    },
  };
}
