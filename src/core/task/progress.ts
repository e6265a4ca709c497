import {invalid} from '../errors.js';

/** The longest note of a progress report (`ctx.progress(percent, note)`), in characters. */
export const MAX_PROGRESS_NOTE_LENGTH = 200;

/** A progress report as validated: a whole percentage and the note (null when none was given). */
export interface ProgressReport {
  percent: number;
  note: string | null;
}

/**
 * Validates one `ctx.progress(percent, note?)` call, the one rule for the worker and the test kit:
 * `percent` a finite number from 0 to 100 (a fraction is rounded to the whole percent the task
 * keeps), `note` absent or a string of at most MAX_PROGRESS_NOTE_LENGTH characters. Throws
 * invalid_input naming the bad argument; nothing is recorded then.
 */
export function validateProgress(percent: unknown, note?: unknown): ProgressReport {
  if (typeof percent !== 'number' || !Number.isFinite(percent) || percent < 0 || percent > 100)
    throw invalid(`progress must be a number from 0 to 100, got ${typeof percent === 'number' ? percent : typeof percent}`);
  if (note !== undefined && note !== null) {
    if (typeof note !== 'string') throw invalid(`progress note must be a string, got ${typeof note}`);
    if (note.length > MAX_PROGRESS_NOTE_LENGTH)
      throw invalid(`progress note is ${note.length} characters, over the limit of ${MAX_PROGRESS_NOTE_LENGTH}`);
  }
  return {percent: Math.round(percent), note: typeof note === 'string' ? note : null};
}
