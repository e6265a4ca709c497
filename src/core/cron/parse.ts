/**
 * Cron expressions: parsing, validation and fire times. The only module that imports cron-parser
 * (ESLint enforces it). Pure: no clock, no I/O; callers pass every time in.
 *
 * Accepted syntax: exactly 5 fields, `minute hour day-of-month month day-of-week`, or one of the
 * nicknames `@yearly @annually @monthly @weekly @daily @midnight @hourly`. Within a field:
 * numbers, `*`, ranges `a-b`, lists `a,b`, steps `*\/n` and `a-b/n`, month names `JAN`–`DEC`,
 * day names `SUN`–`SAT` (0 and 7 are both Sunday), `?` (= `*`) in the two day fields, `L` (last
 * day of the month; `5L` last Friday) and `#` (`1#2` second Monday). When both day fields are
 * restricted a day matches either of them (classic cron). Refused:
 * - a 6th field with seconds (and Quartz's 7th with years): ax schedules have minute resolution,
 *   so nothing fires more often than once a minute;
 * - `H` (hashed) values: cron-parser picks them at random unless seeded, so two schedulers would
 *   compute different fire times for the same schedule;
 * - `W` (nearest weekday), which cron-parser does not support;
 * - an expression that never fires (`0 0 31 2 *`, `0 0 30 2 *`) or, for a new schedule, not within
 *   5 years (`0 0 * 2 1#5`, the 5th Monday of February): it would (almost) never run, a mistake.
 *
 * Fire times are computed in two steps, so that the DST policy (documented in schedule.ts) holds by
 * construction instead of depending on the library's DST code:
 * 1. cron-parser enumerates matching wall-clock times in UTC, where no time is missing or repeated
 *    (it is given only the constant zone 'UTC', never a user's string);
 * 2. zone.ts maps each wall-clock time to instants in the schedule's zone with `Intl`, and the
 *    policy picks among them: a time in a spring-forward gap fires once, shifted by the gap; a time
 *    repeated by a fall-back fires once (the first), except for schedules that fire every hour,
 *    which fire at both instants.
 */
import {CronExpressionParser, type CronExpression} from 'cron-parser';
import {AxError, invalid} from '../errors.js';
import {instantsOfWall, MAX_INSTANT_MS, MIN_INSTANT_MS, validateTimeZone, zoneOf, type Zone} from './zone.js';

/** A validated schedule: what fire times are computed from. Plain data; rebuild it with parseSchedule. */
export interface CronSpec {
  /** The expression, normalised: 5 fields separated by one space, nicknames expanded. */
  readonly expr: string;
  /** The IANA zone its wall-clock times are in (validated, see zone.ts). */
  readonly tz: string;
}

export const CRON_FIELD_NAMES = ['minute', 'hour', 'day-of-month', 'month', 'day-of-week'] as const;
export const MAX_CRON_LENGTH = 256;
/** A new schedule must fire within this long after its creation (parseSchedule's nowMs), or it is refused. */
export const FIRE_HORIZON_MS = 5 * 365 * 86_400_000 + 2 * 86_400_000;
/** At most this many fire times per nextFireTimes call. */
export const MAX_FIRE_TIMES = 1000;

export const CRON_NICKNAMES: Readonly<Record<string, string>> = Object.freeze({
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
});

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const MONTH_NAMES = new Set(['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec']);
const DAY_NAMES = new Set(['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat']);
/** Characters each field may hold (letters are checked word by word after this). */
const FIELD_CHARS: readonly RegExp[] = [
  /^[0-9*,/-]+$/,
  /^[0-9*,/-]+$/,
  /^[0-9A-Za-z*?,/-]+$/,
  /^[0-9A-Za-z*,/-]+$/,
  /^[0-9A-Za-z*?,/#-]+$/,
];

function quote(s: string): string {
  return JSON.stringify(s.length > 80 ? `${s.slice(0, 80)}…` : s);
}

function libMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function fieldError(expr: string, i: number, raw: string, why: string): AxError {
  return invalid(`cron expression ${quote(expr)}: ${CRON_FIELD_NAMES[i]} field ${quote(raw)} ${why}`);
}

/** Checks the characters and words of field `i`; cron-parser checks the numbers afterwards. */
function checkFieldSyntax(expr: string, i: number, raw: string): void {
  const words = raw.match(/[A-Za-z]+/g) ?? [];
  for (const word of words) {
    const w = word.toLowerCase();
    if (w === 'h')
      throw fieldError(expr, i, raw, 'uses H (hashed values), which is not supported: every scheduler must compute the same fire times');
    if (w === 'w' || w === 'lw') throw fieldError(expr, i, raw, 'uses W (nearest weekday), which is not supported');
  }
  if (!FIELD_CHARS[i]!.test(raw)) {
    throw fieldError(
      expr,
      i,
      raw,
      'has characters that are not allowed there (digits, * , - / and, in the day and month fields, names, ? L #)',
    );
  }
  for (const word of words) {
    const w = word.toLowerCase();
    const ok = (i === 2 && word === 'L') || (i === 3 && MONTH_NAMES.has(w)) || (i === 4 && (DAY_NAMES.has(w) || word === 'L'));
    if (!ok) throw fieldError(expr, i, raw, `has an unknown word "${word}"`);
  }
}

function libParse(expr: string, currentDate: number): CronExpression {
  // The zone given to the library is always the constant 'UTC': it enumerates wall-clock times.
  return CronExpressionParser.parse(expr, {currentDate: new Date(currentDate), tz: 'UTC'});
}

/** Normalised expressions already checked by checkExpression (bounded). */
const checked = new Set<string>();

/** Syntax check of a whole expression; returns it normalised. Throws invalid_input. */
function checkExpression(input: unknown): string {
  if (typeof input !== 'string' || input.trim().length === 0) {
    throw invalid('cron expression is required: 5 fields, minute hour day-of-month month day-of-week (e.g. "30 2 * * *")');
  }
  const text = input.trim();
  if (text.length > MAX_CRON_LENGTH) throw invalid(`cron expression is longer than ${MAX_CRON_LENGTH} characters`);
  if (checked.has(text)) return text;
  let expr = text;
  if (text.startsWith('@')) {
    const expanded = CRON_NICKNAMES[text.toLowerCase()];
    if (expanded === undefined) {
      throw invalid(
        `cron expression ${quote(text)} is not a known nickname; use one of ${Object.keys(CRON_NICKNAMES).join(' ')} or 5 fields`,
      );
    }
    expr = expanded;
  }
  const fields = expr.split(/\s+/);
  if (fields.length === 6 || fields.length === 7) {
    throw invalid(
      `cron expression ${quote(text)} has ${fields.length} fields: ax schedules have minute resolution and take no seconds (or years) field; ` +
        'use 5 fields: minute hour day-of-month month day-of-week',
    );
  }
  if (fields.length !== 5) {
    throw invalid(
      `cron expression ${quote(text)} has ${fields.length} field${fields.length === 1 ? '' : 's'}; expected 5: minute hour day-of-month month day-of-week (e.g. "30 2 * * *")`,
    );
  }
  fields.forEach((raw, i) => {
    checkFieldSyntax(text, i, raw);
    // Each field alone (the others `*`), so that the error names the field.
    const alone = fields.map((f, j) => (j === i ? f : '*')).join(' ');
    try {
      libParse(alone, 0);
    } catch (e) {
      throw fieldError(text, i, raw, `is invalid: ${libMessage(e)}`);
    }
  });
  const normalised = fields.join(' ');
  try {
    libParse(normalised, 0);
  } catch (e) {
    const msg = libMessage(e);
    if (/day of month/i.test(msg)) throw neverFires(text, 'its day of month does not exist in its month(s), e.g. 30 or 31 in February');
    throw invalid(`cron expression ${quote(text)} is invalid: ${msg}`);
  }
  if (checked.size >= 10_000) checked.clear();
  checked.add(normalised);
  return normalised;
}

function neverFires(text: string, why = 'it has no fire time within 5 years'): AxError {
  return invalid(`cron expression ${quote(text)} never fires: ${why}`);
}

/**
 * Validates a cron expression and a time zone and returns the schedule, or throws invalid_input
 * with a message naming what is wrong (see the module comment for the syntax). Always refused: an
 * expression with an impossible day (`0 0 31 2 *`, `0 0 30 2 *`, `0 0 31 4,6,9,11 *`). With
 * `options.nowMs` — give it when validating a NEW schedule — the expression must also have a fire
 * time within 5 years after it (this catches rarer never-or-almost-never cases such as
 * `0 0 * 2 1#5`). Without it (re-reading a stored schedule) that check is skipped, so a schedule
 * accepted once is never refused later.
 */
export function parseSchedule(expr: string, tz: string, options?: {nowMs?: number}): CronSpec {
  const normalised = checkExpression(expr);
  const zone = validateTimeZone(tz);
  const spec: CronSpec = Object.freeze({expr: normalised, tz: zone});
  if (options?.nowMs !== undefined) {
    checkInstant(options.nowMs, 'nowMs');
    const first = nextFireTimes(spec, options.nowMs, 1)[0];
    if (first === undefined || first - options.nowMs > FIRE_HORIZON_MS) throw neverFires(expr.trim());
  }
  return spec;
}

function checkInstant(ms: unknown, what: string): asserts ms is number {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < MIN_INSTANT_MS || ms > MAX_INSTANT_MS) {
    throw invalid(`${what} must be epoch milliseconds between 1970 and 9999`);
  }
}

const iterators = new Map<string, CronExpression>();

/** Walks matching wall-clock times forwards or backwards; null at the end of what the library finds. */
function wallWalker(expr: string, fromWallMs: number, reverse: boolean): {everyHour: boolean; step(): number | null} {
  // Parsing costs more than resetting; the walkers never nest, so one iterator per expression is safe.
  let it = iterators.get(expr);
  if (it === undefined) {
    if (iterators.size >= 1000) iterators.clear();
    it = libParse(expr, fromWallMs);
    iterators.set(expr, it);
  } else it.reset(new Date(fromWallMs));
  const iter = it;
  return {
    // A schedule matching all 24 hours follows real time through a repeated hour (schedule.ts).
    everyHour: iter.fields.hour.values.length === 24,
    step(): number | null {
      let wall: number;
      try {
        wall = (reverse ? iter.prev() : iter.next()).getTime();
      } catch (e) {
        if (/loop limit/i.test(libMessage(e))) return null; // nothing more within the library's reach
        throw new AxError('internal', `cron-parser failed on ${quote(expr)}: ${libMessage(e)}`, {cause: e});
      }
      return wall < MIN_INSTANT_MS - DAY_MS || wall > MAX_INSTANT_MS + DAY_MS ? null : wall;
    },
  };
}

/** The instants one wall-clock time fires at, under the DST policy; plus how far a neighbour's may stray. */
function fireInstants(zone: Zone, wall: number, everyHour: boolean): {instants: number[]; lo: number; hi: number; margin: number} {
  const w = instantsOfWall(zone, wall);
  let instants: number[];
  if (w.gap)
    instants = [wall - w.before]; // (a) read with the offset before the gap: shifted by its length
  else if (w.instants.length > 1 && !everyHour)
    instants = [w.instants[0]!]; // (b) repeated: the first only
  else instants = w.instants; // normal, or (c) every-hour schedule in a repeated hour: both
  const lo = Math.min(w.before, w.after);
  const hi = Math.max(w.before, w.after);
  // Near an offset change, a later wall time may fire earlier than this one (by at most the change).
  return {instants, lo, hi, margin: lo === hi ? 0 : hi - lo + HOUR_MS};
}

function insertSorted(list: number[], t: number): void {
  let i = list.length;
  while (i > 0 && list[i - 1]! > t) i--;
  if (list[i - 1] !== t) list.splice(i, 0, t); // one instant is one occurrence
}

/**
 * The next `n` fire times (epoch ms, ascending, distinct) strictly after `afterMs`, under the DST
 * policy of schedule.ts. Fewer than `n` only when the schedule has no more fire times that
 * cron-parser can find (at most a few years ahead for sparse expressions).
 */
export function nextFireTimes(spec: CronSpec, afterMs: number, n: number): number[] {
  checkInstant(afterMs, 'afterMs');
  if (!Number.isInteger(n) || n < 0 || n > MAX_FIRE_TIMES) throw invalid(`n must be a whole number from 0 to ${MAX_FIRE_TIMES}`);
  if (n === 0) return [];
  const expr = checkExpression(spec.expr);
  const zone = zoneOf(spec.tz);
  // Any wall time firing after afterMs is later than afterMs + the smallest offset around it.
  const oMin = Math.min(zone.offsetAt(afterMs - 2 * DAY_MS), zone.offsetAt(afterMs), zone.offsetAt(afterMs + 2 * DAY_MS));
  const walls = wallWalker(expr, afterMs + oMin - 1000, false);
  const found: number[] = [];
  for (let steps = 0; steps < 3 * n + 10_000; steps++) {
    const wall = walls.step();
    if (wall === null) break;
    const f = fireInstants(zone, wall, walls.everyHour);
    if (found.length >= n && wall - f.hi - f.margin > found[n - 1]!) break;
    for (const t of f.instants) if (t > afterMs) insertSorted(found, t);
  }
  return found.slice(0, n);
}

/** The latest fire time at or before `atOrBeforeMs`, or null if cron-parser finds none. */
export function lastFireAtOrBefore(spec: CronSpec, atOrBeforeMs: number): number | null {
  checkInstant(atOrBeforeMs, 'atOrBeforeMs');
  const expr = checkExpression(spec.expr);
  const zone = zoneOf(spec.tz);
  const ms = atOrBeforeMs;
  const oMax = Math.max(zone.offsetAt(ms - 2 * DAY_MS), zone.offsetAt(ms), zone.offsetAt(ms + 2 * DAY_MS));
  const walls = wallWalker(expr, ms + oMax + 1000, true);
  let best: number | null = null;
  for (let steps = 0; steps < 10_000; steps++) {
    const wall = walls.step();
    if (wall === null) break;
    const f = fireInstants(zone, wall, walls.everyHour);
    if (best !== null && wall - f.lo + f.margin < best) break;
    for (const t of f.instants) if (t <= ms && (best === null || t > best)) best = t;
  }
  return best;
}
