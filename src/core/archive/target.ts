/**
 * Where archived tasks go: a small interface so that a second target (an S3-compatible object
 * store) can be added beside the directory target (files.ts). No S3-compatible server is available
 * where ax is developed, so only the directory target exists and is tested.
 *
 * A target stores parts: one gzip NDJSON data file (one archived task per line) and its manifest.
 * The manifest is the commit point: a data file without a manifest was never committed and is
 * ignored (and cleaned up). A part is `pending` from its write until the archiver has deleted its
 * rows from MySQL, then `complete`; `excludedIds` are lines no longer authoritative (restored to,
 * or still live in, the hot table).
 */
export const ARCHIVE_FORMAT = 'ax-archive/1';

export interface PartManifest {
  format: typeof ARCHIVE_FORMAT;
  cell: string;
  /** UTC day (YYYY-MM-DD) of the tasks' ids (their creation day). */
  day: string;
  /** The part's name: its files are `<part>.ndjson.gz` and `<part>.manifest.json`. */
  part: string;
  /** Task lines in the data file. */
  tasks: number;
  /** History rows over all its lines. */
  history: number;
  minId: string;
  maxId: string;
  /** Size of the data file in bytes. */
  bytes: number;
  /** SHA-256 (hex) of the data file's bytes (the gzip stream). */
  sha256: string;
  /** When the part was written (ISO). */
  createdAt: string;
  status: 'pending' | 'complete';
  excludedIds: string[];
}

export interface WritePartParams {
  cell: string;
  day: string;
  /** NDJSON lines, without newlines. */
  lines: string[];
  meta: Pick<PartManifest, 'tasks' | 'history' | 'minId' | 'maxId' | 'createdAt'>;
}

export interface ArchiveTarget {
  /** For messages: the directory (or bucket URL). */
  readonly location: string;
  /**
   * Checks that parts can be written (creating the root when missing). Throws
   * AxError('invalid_input') naming the location when it cannot be created or written.
   */
  checkWritable(): Promise<void>;
  /**
   * Writes a part atomically (data, then its manifest with status `pending`; each to a temporary
   * name, flushed to disk, then renamed) and returns the manifest. A crash leaves either no
   * manifest (nothing committed) or a complete, verifiable part.
   */
  writePart(p: WritePartParams): Promise<PartManifest>;
  /**
   * The lines of a part, verified against its manifest (size, checksum, line count). Throws
   * AxError('conflict') naming the file when it is missing, unreadable or does not match.
   */
  readPart(m: PartManifest): Promise<string[]>;
  /**
   * The cell's parts still `pending`, without reading every manifest of every day: what a
   * recovery must finish. (The directory target keeps a marker per pending part.)
   */
  listPending(cell: string): Promise<PartManifest[]>;
  /** Committed parts of a cell (one day, or every day), sorted by day then name. */
  listParts(p: {cell: string; day?: string}): Promise<PartManifest[]>;
  /** Replaces a part's manifest atomically (status, excludedIds). */
  saveManifest(m: PartManifest): Promise<void>;
  /** Removes a part (manifest first, so it is uncommitted at once). */
  removePart(m: PartManifest): Promise<void>;
  /** Removes the cell's temporary files and uncommitted data files; returns how many. */
  cleanup(cell: string): Promise<number>;
}
