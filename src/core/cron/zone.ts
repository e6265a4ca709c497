/**
 * IANA time zones for cron schedules, with no library but `Intl` (ICU's tz database, shipped with
 * Node). A zone string from a user is checked here — shape first, then `Intl` — before it is used
 * anywhere; cron-parser never sees it (it computes wall-clock times in UTC, see parse.ts).
 *
 * Times are epoch milliseconds. A "wall" time is a local date-time in the zone encoded as if it
 * were UTC (`Date.UTC(y, m, d, h, mi)`), so that wall arithmetic has no DST in it.
 */
import {invalid} from '../errors.js';

export const MAX_TZ_LENGTH = 64;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Instants handled: 1970-01-01 to 9999-12-31 (Intl and Date are exact there). */
export const MIN_INSTANT_MS = 0;
export const MAX_INSTANT_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

// Area/Location[/Sub]: letters, digits, `_`, `-`, `+` (Etc/GMT+5, America/Port-au-Prince). No `.`,
// so no `..`; no spaces, quotes, `;` or anything else to smuggle into a log line or a query.
const ZONE_SHAPE = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+){0,2}$/;
const ETC_FIXED = /^Etc\/GMT[+-]\d{1,2}$/;

/** A validated zone: its name and the UTC offset it has at any instant. */
export interface Zone {
  readonly name: string;
  /** Offset from UTC in ms at `instantMs` (wall = instant + offset). */
  offsetAt(instantMs: number): number;
}

let supported: ReadonlyMap<string, string> | null = null;
/** lower-case name → name as `Intl.supportedValuesOf` spells it (canonical zones, no aliases). */
function supportedZones(): ReadonlyMap<string, string> {
  supported ??= new Map(Intl.supportedValuesOf('timeZone').map((z) => [z.toLowerCase(), z]));
  return supported;
}

const zones = new Map<string, Zone>();

function quote(s: string): string {
  return JSON.stringify(s.length > MAX_TZ_LENGTH ? `${s.slice(0, MAX_TZ_LENGTH)}…` : s);
}

/**
 * Checks that `tz` is an IANA time zone and returns its name: as `Intl.supportedValuesOf` spells it
 * when it is a canonical zone (any case accepted: `europe/berlin` → `Europe/Berlin`), `UTC` for
 * UTC/Etc/UTC/GMT, else as given when it is an alias `Intl` resolves to a known zone (`US/Eastern`,
 * `Asia/Kolkata`, `Etc/GMT+5`). Throws invalid_input otherwise, without handing anything but a
 * string of the safe shape to `Intl`.
 */
export function validateTimeZone(tz: unknown): string {
  if (typeof tz !== 'string' || tz.trim().length === 0) {
    throw invalid('time zone is required: an IANA name such as Europe/Berlin, America/New_York or UTC');
  }
  return zoneOf(tz).name;
}

/** The Zone for a name (validated and cached); throws invalid_input like validateTimeZone. */
export function zoneOf(tz: string): Zone {
  const cached = zones.get(tz);
  if (cached) return cached;
  const unknown = (): Error => invalid(`time zone ${quote(tz)} is not a known IANA time zone (e.g. America/New_York, Europe/Berlin, UTC)`);
  if (tz.length > MAX_TZ_LENGTH || !ZONE_SHAPE.test(tz)) throw unknown();
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat('en-US', {timeZone: tz}).resolvedOptions().timeZone;
  } catch {
    throw unknown();
  }
  const canonical = supportedZones().get(tz.toLowerCase());
  let name: string;
  if (resolved === 'UTC') name = 'UTC';
  else if (canonical !== undefined) name = canonical;
  else if (supportedZones().has(resolved.toLowerCase()) || ETC_FIXED.test(resolved)) name = tz;
  else throw unknown();
  const zone = zones.get(name) ?? (name === 'UTC' ? utcZone : makeZone(name));
  if (zones.size > 1000) zones.clear(); // bounded: at most a few hundred zones exist
  zones.set(tz, zone);
  zones.set(name, zone);
  return zone;
}

const utcZone: Zone = {name: 'UTC', offsetAt: () => 0};

function makeZone(name: string): Zone {
  const dtf = new Intl.DateTimeFormat('en-US', {
    timeZone: name,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  });
  const exact = (instantMs: number): number => {
    const at = Math.min(Math.max(instantMs, MIN_INSTANT_MS), MAX_INSTANT_MS);
    const f: Record<string, number> = {};
    for (const p of dtf.formatToParts(at)) if (p.type !== 'literal') f[p.type] = Number(p.value);
    const wall = new Date(0);
    wall.setUTCFullYear(f.year ?? 1970, (f.month ?? 1) - 1, f.day ?? 1);
    wall.setUTCHours(f.hour ?? 0, f.minute ?? 0, f.second ?? 0, 0);
    return wall.getTime() - (at - (((at % 1000) + 1000) % 1000));
  };
  // formatToParts costs ~20µs: cache the offset at each whole hour. When an hour starts and ends
  // with the same offset, no change happens inside it (zones change offset at most once an hour).
  const atHour = new Map<number, number>();
  const hourly = (h: number): number => {
    let o = atHour.get(h);
    if (o === undefined) {
      if (atHour.size >= 100_000) atHour.clear();
      o = exact(h * HOUR_MS);
      atHour.set(h, o);
    }
    return o;
  };
  return {
    name,
    offsetAt(instantMs: number): number {
      const h = Math.floor(instantMs / HOUR_MS);
      const o = hourly(h);
      return o === hourly(h + 1) ? o : exact(instantMs);
    },
  };
}

/** The wall-clock time (see the module comment) of an instant in a zone. */
export function wallOf(zone: Zone, instantMs: number): number {
  return instantMs + zone.offsetAt(instantMs);
}

/** How one wall-clock time maps to instants in a zone. */
export interface WallInstants {
  /** The instants whose wall time it is, ascending: 1 normally, 2 in a repeated (fall-back) period. */
  instants: number[];
  /** True when the wall time does not exist (spring-forward gap); `instants` is then empty. */
  gap: boolean;
  /** The offset in force before the transition nearest to the wall time (the only one if none). */
  before: number;
  /** The offset in force after it. */
  after: number;
}

/**
 * The instants at which a wall-clock time happens in a zone. Assumes at most one offset change
 * within a day on either side of it (true of every zone since 1970 but for a handful of historical
 * oddities).
 */
export function instantsOfWall(zone: Zone, wallMs: number): WallInstants {
  const before = zone.offsetAt(wallMs - DAY_MS);
  const after = zone.offsetAt(wallMs + DAY_MS);
  const instants: number[] = [];
  for (const o of before === after ? [before] : [before, after]) {
    const t = wallMs - o;
    if (zone.offsetAt(t) === o) instants.push(t);
  }
  instants.sort((a, b) => a - b);
  return {instants, gap: instants.length === 0, before, after};
}
