import {invalid} from '../errors.js';

/** The longest note of a progress report (`ctx.progress(percent, note)`), in characters. */
export const MAX_PROGRESS_NOTE_LENGTH = 200;

/** A progress report as validated: a whole percentage and the note (null when none was given). */
export interface ProgressReport {
  percent: number;
  note: string | null;
}

const describe = (v: unknown): string =>
  typeof v === 'string'
    ? JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)
    : typeof v === 'number' || typeof v === 'boolean' || v === null || v === undefined
      ? String(v)
      : typeof v;

/**
 * Validates one `ctx.progress(percent, note?)` call, the one rule for the worker and the test kit:
 * `percent` a finite number from 0 to 100 (a fraction is rounded to the whole percent the task
 * keeps), `note` absent or a string of at most MAX_PROGRESS_NOTE_LENGTH characters. Throws
 * invalid_input naming the bad argument; nothing is recorded then.
 */
export function validateProgress(percent: unknown, note?: unknown): ProgressReport {
  if (typeof percent !== 'number' || !Number.isFinite(percent))
    throw invalid(`ctx.progress: percent must be a number from 0 to 100, got ${describe(percent)}`);
  if (percent < 0 || percent > 100) throw invalid(`ctx.progress: percent must be from 0 to 100, got ${percent}`);
  if (note !== undefined && note !== null && typeof note !== 'string')
    throw invalid(`ctx.progress: note must be a string, got ${describe(note)}`);
  if (typeof note === 'string' && note.length > MAX_PROGRESS_NOTE_LENGTH)
    throw invalid(`ctx.progress: note must be at most ${MAX_PROGRESS_NOTE_LENGTH} characters, got ${note.length}`);
  return {percent: Math.round(percent), note: typeof note === 'string' ? note : null};
}
