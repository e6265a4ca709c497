import {invalid} from './errors.js';

const UNITS: Record<string, number> = {
  ms: 1,
  s: 1000,
  sec: 1000,
  m: 60_000,
  min: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** The longest delay or duration ax accepts anywhere: 366 days. */
export const MAX_DURATION_MS = 366 * 86_400_000;

/**
 * The one rule for every duration ax reads (flags, task specs, config, cron timeouts), for help texts:
 * a whole number of milliseconds, or numbers with a unit — ms, s (sec), m (min), h, d, in any case —
 * one after the other without spaces; fractions are allowed and rounded to the millisecond.
 */
export const DURATION_RULE =
  'milliseconds, or a number with a unit: ms, s, m, h, d (any case; combined like 1h30m; fractions like 1.5s are rounded to the ms)';

/**
 * Parses a duration by DURATION_RULE: `250`, `250ms`, `5s`, `5S`, `1.5s`, `30m`, `1h30m`, `2d`.
 * Throws invalid_input (naming `what`) for anything else (spaces between parts, unknown units, a bare
 * fraction such as `1.5`), for negative, NaN or non-integer numbers of milliseconds, and for values
 * above MAX_DURATION_MS.
 */
export function parseDuration(input: unknown, what = 'duration'): number {
  let ms: number;
  if (typeof input === 'number') {
    ms = input;
  } else if (typeof input === 'string' && /^\d+$/.test(input.trim())) {
    ms = Number(input.trim());
  } else if (typeof input === 'string') {
    const s = input.trim().toLowerCase();
    if (/^-\s*\d/.test(s)) throw invalid(`${what} "${input}" is negative: a duration is 0 or more`);
    const re = /(\d+(?:\.\d+)?)(ms|sec|min|s|m|h|d)/gy;
    ms = 0;
    let matched = 0;
    let m: RegExpExecArray | null;
    while ((m = re.exec(s)) !== null) {
      ms += Number(m[1]) * (UNITS[m[2] as string] as number);
      matched = re.lastIndex;
    }
    if (s.length === 0 || matched !== s.length) {
      throw invalid(`${what} "${input}" is not a duration: use milliseconds or e.g. 500ms, 5s, 30m, 1h30m, 2d`);
    }
    ms = Math.round(ms);
  } else {
    throw invalid(`${what} must be a number of milliseconds or a string such as 5s`);
  }
  if (!Number.isFinite(ms) || !Number.isInteger(ms) || ms < 0) {
    throw invalid(`${what} must be a non-negative whole number of milliseconds, got ${String(input)}`);
  }
  if (ms > MAX_DURATION_MS) {
    throw invalid(`${what} ${String(input)} is too large: the maximum is 366d`);
  }
  return ms;
}

/** Formats milliseconds for humans: 1500 → "1.5s", 90000 → "1m30s". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${Number((ms / 1000).toFixed(1))}s`;
  const parts: string[] = [];
  let rest = Math.round(ms / 1000);
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) parts.push(`${n}${unit}`);
    rest -= n * size;
  }
  return parts.join('');
}
