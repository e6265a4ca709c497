import {describe, expect, it, vi} from 'vitest';
import {expectInvalid} from '../helpers/expect.js';
import {TASK_STATES, isTerminal} from '../../src/core/task/state.js';
import {lastFireAtOrBefore, nextFireTimes, parseSchedule, type CronSpec} from '../../src/core/cron/parse.js';
import {validateTimeZone} from '../../src/core/cron/zone.js';
import {
  MAX_PLANNED_OCCURRENCES,
  MISSED_COUNT_CAP,
  planOccurrences,
  shouldSkipForOverlap,
  validateCronInput,
  validateScheduleName,
  type MisfirePolicy,
} from '../../src/core/cron/schedule.js';

// Record every zone handed to cron-parser: it must only ever see the constant 'UTC'.
const seenTz = vi.hoisted(() => [] as unknown[]);
vi.mock('cron-parser', async (importOriginal) => {
  const mod = (await importOriginal()) as Record<string, unknown> & {
    CronExpressionParser: {parse(expr: string, options?: {tz?: string}): unknown};
  };
  const real = mod.CronExpressionParser;
  return {
    ...mod,
    CronExpressionParser: {
      parse(expr: string, options?: {tz?: string}) {
        seenTz.push(options?.tz);
        return real.parse(expr, options);
      },
    },
  };
});

const T = (s: string): number => Date.parse(s);
const iso = (ms: number): string => new Date(ms).toISOString().replace('.000Z', 'Z');
const next = (expr: string, tz: string, after: string, n: number): string[] => nextFireTimes(parseSchedule(expr, tz), T(after), n).map(iso);

describe('parseSchedule / nextFireTimes: common expressions', () => {
  it('computes the next fire times, strictly after the given time', () => {
    expect(next('*/15 * * * *', 'UTC', '2026-01-01T00:07:00Z', 4)).toEqual([
      '2026-01-01T00:15:00Z',
      '2026-01-01T00:30:00Z',
      '2026-01-01T00:45:00Z',
      '2026-01-01T01:00:00Z',
    ]);
    expect(next('*/15 * * * *', 'UTC', '2026-01-01T00:15:00Z', 1)).toEqual(['2026-01-01T00:30:00Z']);
    expect(next('*/15 * * * *', 'UTC', '2026-01-01T00:14:59.999Z', 1)).toEqual(['2026-01-01T00:15:00Z']);
    expect(next('* * * * *', 'UTC', '2026-01-01T00:00:30Z', 2)).toEqual(['2026-01-01T00:01:00Z', '2026-01-01T00:02:00Z']);
    // Weekdays at 09:00 Berlin (CET, UTC+1); 2026-01-02 is a Friday.
    expect(next('0 9 * * 1-5', 'Europe/Berlin', '2026-01-02T12:00:00Z', 3)).toEqual([
      '2026-01-05T08:00:00Z',
      '2026-01-06T08:00:00Z',
      '2026-01-07T08:00:00Z',
    ]);
    expect(next('0 9 * * MON-FRI', 'Europe/Berlin', '2026-01-02T12:00:00Z', 1)).toEqual(['2026-01-05T08:00:00Z']);
    expect(next('0 0 1 * *', 'UTC', '2026-01-15T00:00:00Z', 2)).toEqual(['2026-02-01T00:00:00Z', '2026-03-01T00:00:00Z']);
    expect(next('0 0 L * *', 'UTC', '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-01-31T00:00:00Z',
      '2026-02-28T00:00:00Z',
      '2026-03-31T00:00:00Z',
    ]);
    expect(next('0 0 * * 5L', 'UTC', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-30T00:00:00Z', '2026-02-27T00:00:00Z']);
    expect(next('0 12 * * 1#2', 'UTC', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-12T12:00:00Z', '2026-02-09T12:00:00Z']);
    expect(next('0 0 * * 7', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-04T00:00:00Z']); // 7 = Sunday
    expect(next('0 0 29 2 *', 'UTC', '2026-01-01T00:00:00Z', 2)).toEqual(['2028-02-29T00:00:00Z', '2032-02-29T00:00:00Z']);
  });

  it('matches either day field when both are restricted (classic cron)', () => {
    // The 13th or any Friday; 2026-02-13 is both, and fires once.
    expect(next('0 0 13 * 5', 'UTC', '2026-02-01T00:00:00Z', 6)).toEqual([
      '2026-02-06T00:00:00Z',
      '2026-02-13T00:00:00Z',
      '2026-02-20T00:00:00Z',
      '2026-02-27T00:00:00Z',
      '2026-03-06T00:00:00Z',
      '2026-03-13T00:00:00Z',
    ]);
  });

  it('normalises the expression and accepts the standard nicknames', () => {
    expect(parseSchedule('  0   2  * *\t* ', 'UTC').expr).toBe('0 2 * * *');
    expect(parseSchedule('@daily', 'UTC').expr).toBe('0 0 * * *');
    expect(parseSchedule('@midnight', 'UTC').expr).toBe('0 0 * * *');
    expect(parseSchedule('@HOURLY', 'UTC').expr).toBe('0 * * * *');
    expect(parseSchedule('@weekly', 'UTC').expr).toBe('0 0 * * 0');
    expect(parseSchedule('@monthly', 'UTC').expr).toBe('0 0 1 * *');
    expect(parseSchedule('@yearly', 'UTC').expr).toBe('0 0 1 1 *');
    expect(parseSchedule('@annually', 'UTC').expr).toBe('0 0 1 1 *');
  });

  it('returns fewer or none on request, and refuses a bad n or time', () => {
    const spec = parseSchedule('0 * * * *', 'UTC');
    expect(nextFireTimes(spec, T('2026-01-01T00:00:00Z'), 0)).toEqual([]);
    expectInvalid(() => nextFireTimes(spec, T('2026-01-01T00:00:00Z'), -1), /n must be/);
    expectInvalid(() => nextFireTimes(spec, T('2026-01-01T00:00:00Z'), 1.5), /n must be/);
    expectInvalid(() => nextFireTimes(spec, T('2026-01-01T00:00:00Z'), 1001), /n must be/);
    expectInvalid(() => nextFireTimes(spec, Number.NaN, 1), /afterMs/);
    expectInvalid(() => nextFireTimes(spec, -1, 1), /afterMs/);
  });

  it('finds the latest fire time at or before a time', () => {
    const spec = parseSchedule('0 * * * *', 'UTC');
    expect(iso(lastFireAtOrBefore(spec, T('2026-01-01T05:00:00Z'))!)).toBe('2026-01-01T05:00:00Z');
    expect(iso(lastFireAtOrBefore(spec, T('2026-01-01T04:59:59.999Z'))!)).toBe('2026-01-01T04:00:00Z');
  });

  it('does not depend on the process time zone', () => {
    const saved = process.env.TZ;
    try {
      const before = next('30 2 * * *', 'America/New_York', '2026-03-07T00:00:00Z', 3);
      for (const tz of ['Asia/Tokyo', 'America/Los_Angeles', 'Europe/Berlin']) {
        process.env.TZ = tz;
        expect(next('30 2 * * *', 'America/New_York', '2026-03-07T00:00:00Z', 3)).toEqual(before);
      }
    } finally {
      if (saved === undefined) delete process.env.TZ;
      else process.env.TZ = saved;
    }
  });
});

describe('parseSchedule: refusals', () => {
  it('refuses malformed expressions with a message naming the problem', () => {
    expectInvalid(() => parseSchedule('', 'UTC'), /cron expression is required/);
    expectInvalid(() => parseSchedule('   ', 'UTC'), /cron expression is required/);
    expectInvalid(() => parseSchedule(undefined as unknown as string, 'UTC'), /cron expression is required/);
    expectInvalid(() => parseSchedule('* * *', 'UTC'), /has 3 fields; expected 5: minute hour day-of-month month day-of-week/);
    expectInvalid(() => parseSchedule('*', 'UTC'), /has 1 field; expected 5/);
    expectInvalid(() => parseSchedule('61 * * * *', 'UTC'), /minute field "61" is invalid: .*0-59/);
    expectInvalid(() => parseSchedule('0 24 * * *', 'UTC'), /hour field "24" is invalid/);
    expectInvalid(() => parseSchedule('0 0 0 * *', 'UTC'), /day-of-month field "0" is invalid/);
    expectInvalid(() => parseSchedule('0 0 * 13 *', 'UTC'), /month field "13" is invalid/);
    expectInvalid(() => parseSchedule('0 0 * * 8', 'UTC'), /day-of-week field "8" is invalid/);
    expectInvalid(() => parseSchedule('a b c d e', 'UTC'), /minute field "a" has characters that are not allowed/);
    expectInvalid(() => parseSchedule('0 0 * FOO *', 'UTC'), /month field "FOO" has an unknown word "FOO"/);
    expectInvalid(() => parseSchedule('*/0 * * * *', 'UTC'), /minute field "\*\/0" is invalid/);
    expectInvalid(() => parseSchedule('5-1 * * * *', 'UTC'), /minute field "5-1" is invalid/);
    expectInvalid(() => parseSchedule('0 0 1,,2 * *', 'UTC'), /day-of-month field "1,,2" is invalid/);
    expectInvalid(() => parseSchedule('0 0 * * 1#6', 'UTC'), /day-of-week field "1#6" is invalid/);
    expectInvalid(() => parseSchedule(`${'1,'.repeat(200)}1 * * * *`, 'UTC'), /longer than 256/);
  });

  it('refuses seconds and years fields: ax schedules have minute resolution', () => {
    expectInvalid(() => parseSchedule('* * * * * *', 'UTC'), /has 6 fields: ax schedules have minute resolution/);
    expectInvalid(() => parseSchedule('0 30 2 * * *', 'UTC'), /has 6 fields/);
    expectInvalid(() => parseSchedule('0 0 12 * * ? 2026', 'UTC'), /has 7 fields/);
  });

  it('refuses non-deterministic and unsupported syntax', () => {
    expectInvalid(() => parseSchedule('H * * * *', 'UTC'), /H \(hashed values\), which is not supported/);
    expectInvalid(() => parseSchedule('H/5 * * * *', 'UTC'), /not allowed|hashed/);
    expectInvalid(() => parseSchedule('0 0 * * H', 'UTC'), /hashed/);
    expectInvalid(() => parseSchedule('0 0 15W * *', 'UTC'), /W \(nearest weekday\)/);
    expectInvalid(() => parseSchedule('@reboot', 'UTC'), /not a known nickname/);
    expectInvalid(() => parseSchedule('@secondly', 'UTC'), /not a known nickname/);
    // THU contains an H but is a day name.
    expect(parseSchedule('0 0 * * THU', 'UTC').expr).toBe('0 0 * * THU');
  });

  it('refuses expressions that can never fire (or not within 5 years)', () => {
    expectInvalid(() => parseSchedule('0 0 31 2 *', 'UTC'), /never fires/);
    expectInvalid(() => parseSchedule('0 0 30 2 *', 'UTC'), /never fires/);
    expectInvalid(() => parseSchedule('0 0 30,31 2 *', 'UTC'), /never fires/);
    expectInvalid(() => parseSchedule('0 0 31 4,6,9,11 *', 'UTC'), /never fires/);
    // The 5th Monday of February exists only in a leap year starting on a Monday: 2016, then 2044.
    expectInvalid(
      () => parseSchedule('0 0 * 2 1#5', 'UTC', {nowMs: T('2026-06-01T00:00:00Z')}),
      /never fires: it has no fire time within 5 years/,
    );
    expect(parseSchedule('0 0 * 2 1#5', 'UTC', {nowMs: T('2043-06-01T00:00:00Z')}).expr).toBe('0 0 * 2 1#5');
    // Without nowMs (re-reading a stored schedule) only impossible days are refused: what was accepted stays accepted.
    expect(parseSchedule('0 0 * 2 1#5', 'UTC').expr).toBe('0 0 * 2 1#5');
    expectInvalid(() => parseSchedule('0 0 * * *', 'UTC', {nowMs: Number.NaN}), /nowMs must be epoch milliseconds/);
    // Rare but within 5 years: accepted.
    expect(parseSchedule('0 0 29 2 *', 'UTC', {nowMs: T('2028-03-01T00:00:00Z')}).expr).toBe('0 0 29 2 *');
    // The day fields combine with OR: 31 February or any Monday fires every Monday.
    expect(parseSchedule('0 0 31 2 1', 'UTC').expr).toBe('0 0 31 2 1');
  });

  it('refuses unknown time zones and never passes a user zone to cron-parser', () => {
    seenTz.length = 0;
    for (const tz of [
      'Mars/Olympus',
      '../etc/passwd',
      'UTC; DROP',
      'Europe/Berlin ',
      '+05:00',
      'Etc/../UTC',
      'x'.repeat(200),
      'America/New_York\n',
    ]) {
      expectInvalid(() => parseSchedule('0 0 * * *', tz), /is not a known IANA time zone/);
    }
    expectInvalid(() => parseSchedule('0 0 * * *', ''), /time zone is required/);
    expectInvalid(() => parseSchedule('0 0 * * *', undefined as unknown as string), /time zone is required/);
    // Expressions not used elsewhere, so that they are parsed (not taken from the cache) here.
    ['America/New_York', 'Europe/Berlin', 'Australia/Sydney', 'Asia/Shanghai', 'UTC'].forEach((tz, i) => {
      const spec = parseSchedule(`${11 + i} 3 * * *`, tz);
      nextFireTimes(spec, T('2026-03-08T00:00:00Z'), 3);
      lastFireAtOrBefore(spec, T('2026-11-01T06:00:00Z'));
    });
    expect(seenTz.length).toBeGreaterThan(0);
    expect(new Set(seenTz)).toEqual(new Set(['UTC']));
  });

  it('accepts IANA names and aliases, normalising canonical names and UTC', () => {
    expect(validateTimeZone('Europe/Berlin')).toBe('Europe/Berlin');
    expect(validateTimeZone('europe/berlin')).toBe('Europe/Berlin');
    expect(validateTimeZone('UTC')).toBe('UTC');
    expect(validateTimeZone('Etc/UTC')).toBe('UTC');
    expect(validateTimeZone('utc')).toBe('UTC');
    expect(validateTimeZone('America/Argentina/Buenos_Aires')).toBe('America/Argentina/Buenos_Aires');
    expect(validateTimeZone('America/Port-au-Prince')).toBe('America/Port-au-Prince');
    expect(validateTimeZone('US/Eastern')).toBe('US/Eastern');
    expect(validateTimeZone('Etc/GMT+5')).toBe('Etc/GMT+5');
    // An alias fires exactly like its zone.
    expect(next('30 2 * * *', 'US/Eastern', '2026-03-07T00:00:00Z', 3)).toEqual(
      next('30 2 * * *', 'America/New_York', '2026-03-07T00:00:00Z', 3),
    );
    expect(next('0 12 * * *', 'Etc/GMT+5', '2026-06-01T00:00:00Z', 1)).toEqual(['2026-06-01T17:00:00Z']); // POSIX sign: UTC-5
  });
});

/** All fire times of `expr` in [fromIso, toIso). */
function firesBetween(expr: string, tz: string, fromIso: string, toIso: string): string[] {
  const to = T(toIso);
  return nextFireTimes(parseSchedule(expr, tz), T(fromIso) - 1, 1000)
    .filter((t) => t < to)
    .map(iso);
}

describe('DST policy', () => {
  describe('America/New_York (EST −5 / EDT −4)', () => {
    it('spring forward 2026-03-08: 02:30 does not exist, fires once at 03:30 EDT', () => {
      expect(next('30 2 * * *', 'America/New_York', '2026-03-07T00:00:00Z', 3)).toEqual([
        '2026-03-07T07:30:00Z',
        '2026-03-08T07:30:00Z',
        '2026-03-09T06:30:00Z',
      ]);
      // Whatever the start point, the shifted occurrence is neither skipped nor repeated.
      for (const after of ['2026-03-08T06:59:00Z', '2026-03-08T07:00:00Z', '2026-03-08T07:29:59Z']) {
        expect(next('30 2 * * *', 'America/New_York', after, 1)).toEqual(['2026-03-08T07:30:00Z']);
      }
      expect(next('30 2 * * *', 'America/New_York', '2026-03-08T07:30:00Z', 1)).toEqual(['2026-03-09T06:30:00Z']);
    });

    it('fall back 2026-11-01: 01:30 happens twice, fires once (the first, EDT)', () => {
      expect(next('30 1 * * *', 'America/New_York', '2026-10-31T00:00:00Z', 3)).toEqual([
        '2026-10-31T05:30:00Z',
        '2026-11-01T05:30:00Z',
        '2026-11-02T06:30:00Z',
      ]);
      // Planned from inside the repeated hour (after the first 01:30, before the second): not again.
      for (const after of ['2026-11-01T05:30:00Z', '2026-11-01T06:00:00Z', '2026-11-01T06:29:00Z']) {
        expect(next('30 1 * * *', 'America/New_York', after, 1)).toEqual(['2026-11-02T06:30:00Z']);
      }
      // 02:30 exists once that day (EST).
      expect(next('30 2 * * *', 'America/New_York', '2026-10-31T12:00:00Z', 2)).toEqual(['2026-11-01T07:30:00Z', '2026-11-02T07:30:00Z']);
      // A schedule naming its hours fires once per wall time: every minute of 01:xx is 60 runs, not 120.
      expect(firesBetween('* 1 * * *', 'America/New_York', '2026-11-01T04:00:00Z', '2026-11-02T04:00:00Z')).toHaveLength(60);
      expect(firesBetween('0,30 1,2 * * *', 'America/New_York', '2026-11-01T04:00:00Z', '2026-11-02T04:00:00Z')).toEqual([
        '2026-11-01T05:00:00Z',
        '2026-11-01T05:30:00Z',
        '2026-11-01T07:00:00Z',
        '2026-11-01T07:30:00Z',
      ]);
    });

    it('hourly: every real hour, 23 on the spring day, 25 on the fall day (01:00 twice)', () => {
      expect(next('0 * * * *', 'America/New_York', '2026-03-08T05:00:00Z', 3)).toEqual([
        '2026-03-08T06:00:00Z',
        '2026-03-08T07:00:00Z',
        '2026-03-08T08:00:00Z',
      ]);
      expect(firesBetween('0 * * * *', 'America/New_York', '2026-03-08T05:00:00Z', '2026-03-09T04:00:00Z')).toHaveLength(23);
      expect(next('0 * * * *', 'America/New_York', '2026-11-01T04:00:00Z', 3)).toEqual([
        '2026-11-01T05:00:00Z',
        '2026-11-01T06:00:00Z',
        '2026-11-01T07:00:00Z',
      ]);
      expect(next('0 * * * *', 'America/New_York', '2026-11-01T05:00:00Z', 1)).toEqual(['2026-11-01T06:00:00Z']);
      expect(firesBetween('0 * * * *', 'America/New_York', '2026-11-01T04:00:00Z', '2026-11-02T05:00:00Z')).toHaveLength(25);
      // Sub-hourly keeps its rhythm through both changes.
      const spring = firesBetween('*/15 * * * *', 'America/New_York', '2026-03-08T06:30:00Z', '2026-03-08T07:30:00Z');
      expect(spring).toEqual(['2026-03-08T06:30:00Z', '2026-03-08T06:45:00Z', '2026-03-08T07:00:00Z', '2026-03-08T07:15:00Z']);
      expect(firesBetween('*/15 * * * *', 'America/New_York', '2026-11-01T05:00:00Z', '2026-11-01T07:00:00Z')).toHaveLength(8);
    });

    it('30 * * * * across the gap: one hour apart, no extra run', () => {
      expect(next('30 * * * *', 'America/New_York', '2026-03-08T06:00:00Z', 3)).toEqual([
        '2026-03-08T06:30:00Z',
        '2026-03-08T07:30:00Z',
        '2026-03-08T08:30:00Z',
      ]);
    });
  });

  describe('Europe/Berlin (CET +1 / CEST +2)', () => {
    it('spring forward 2026-03-29: 02:30 → 03:30 CEST', () => {
      expect(next('30 2 * * *', 'Europe/Berlin', '2026-03-28T00:00:00Z', 3)).toEqual([
        '2026-03-28T01:30:00Z',
        '2026-03-29T01:30:00Z',
        '2026-03-30T00:30:00Z',
      ]);
      expect(next('30 2 * * *', 'Europe/Berlin', '2026-03-29T01:00:00Z', 1)).toEqual(['2026-03-29T01:30:00Z']);
      expect(next('0 * * * *', 'Europe/Berlin', '2026-03-28T23:00:00Z', 3)).toEqual([
        '2026-03-29T00:00:00Z',
        '2026-03-29T01:00:00Z',
        '2026-03-29T02:00:00Z',
      ]);
      expect(firesBetween('0 * * * *', 'Europe/Berlin', '2026-03-28T23:00:00Z', '2026-03-29T22:00:00Z')).toHaveLength(23);
    });

    it('fall back 2026-10-25: 02:30 twice → once, at 02:30 CEST', () => {
      expect(next('30 2 * * *', 'Europe/Berlin', '2026-10-24T00:00:00Z', 3)).toEqual([
        '2026-10-24T00:30:00Z',
        '2026-10-25T00:30:00Z',
        '2026-10-26T01:30:00Z',
      ]);
      expect(next('30 2 * * *', 'Europe/Berlin', '2026-10-25T01:00:00Z', 1)).toEqual(['2026-10-26T01:30:00Z']);
      expect(next('0 * * * *', 'Europe/Berlin', '2026-10-24T23:00:00Z', 3)).toEqual([
        '2026-10-25T00:00:00Z',
        '2026-10-25T01:00:00Z',
        '2026-10-25T02:00:00Z',
      ]);
      expect(firesBetween('0 * * * *', 'Europe/Berlin', '2026-10-24T22:00:00Z', '2026-10-25T23:00:00Z')).toHaveLength(25);
    });
  });

  describe('Australia/Sydney (AEST +10 / AEDT +11, southern hemisphere)', () => {
    it('fall back 2026-04-05: 02:30 twice → once, at 02:30 AEDT', () => {
      expect(next('30 2 * * *', 'Australia/Sydney', '2026-04-03T00:00:00Z', 3)).toEqual([
        '2026-04-03T15:30:00Z',
        '2026-04-04T15:30:00Z',
        '2026-04-05T16:30:00Z',
      ]);
      expect(next('30 2 * * *', 'Australia/Sydney', '2026-04-04T16:00:00Z', 1)).toEqual(['2026-04-05T16:30:00Z']);
      expect(next('0 * * * *', 'Australia/Sydney', '2026-04-04T14:00:00Z', 3)).toEqual([
        '2026-04-04T15:00:00Z',
        '2026-04-04T16:00:00Z',
        '2026-04-04T17:00:00Z',
      ]);
      expect(firesBetween('0 * * * *', 'Australia/Sydney', '2026-04-04T13:00:00Z', '2026-04-05T14:00:00Z')).toHaveLength(25);
    });

    it('spring forward 2026-10-04: 02:30 → 03:30 AEDT', () => {
      expect(next('30 2 * * *', 'Australia/Sydney', '2026-10-02T00:00:00Z', 3)).toEqual([
        '2026-10-02T16:30:00Z',
        '2026-10-03T16:30:00Z',
        '2026-10-04T15:30:00Z',
      ]);
      expect(next('30 2 * * *', 'Australia/Sydney', '2026-10-03T16:00:00Z', 1)).toEqual(['2026-10-03T16:30:00Z']);
      expect(next('0 * * * *', 'Australia/Sydney', '2026-10-03T14:00:00Z', 3)).toEqual([
        '2026-10-03T15:00:00Z',
        '2026-10-03T16:00:00Z',
        '2026-10-03T17:00:00Z',
      ]);
      expect(firesBetween('0 * * * *', 'Australia/Sydney', '2026-10-03T14:00:00Z', '2026-10-04T13:00:00Z')).toHaveLength(23);
    });
  });

  it('Asia/Shanghai (UTC+8, no DST): same UTC time every day, 24 hourly fires a day', () => {
    for (const day of ['2026-03-07', '2026-03-28', '2026-10-03', '2026-10-31']) {
      const fires = next('30 2 * * *', 'Asia/Shanghai', `${day}T00:00:00Z`, 3);
      expect(fires.map((f) => f.slice(11))).toEqual(['18:30:00Z', '18:30:00Z', '18:30:00Z']);
      const from = T(`${day}T16:00:00Z`);
      const hourly = nextFireTimes(parseSchedule('0 * * * *', 'Asia/Shanghai'), from - 1, 30).filter((t) => t < from + 86_400_000);
      expect(hourly).toEqual(Array.from({length: 24}, (_, i) => from + i * 3_600_000));
    }
  });

  it('a daily schedule fires exactly once per local day all year, in every zone', () => {
    const local = (ms: number, tz: string): string =>
      new Intl.DateTimeFormat('en-CA', {
        timeZone: tz,
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: 'h23',
      }).format(ms);
    for (const tz of ['America/New_York', 'Europe/Berlin', 'Australia/Sydney', 'Asia/Shanghai']) {
      for (const expr of ['30 2 * * *', '30 1 * * *']) {
        const spec = parseSchedule(expr, tz);
        const fires = nextFireTimes(spec, T('2025-12-31T00:00:00Z'), 400).filter(
          (t) => local(t, tz) >= '2026-01-01' && local(t, tz) < '2027-01-01',
        );
        const days = fires.map((t) => local(t, tz).slice(0, 10));
        expect(new Set(days).size, `${tz} ${expr}`).toBe(365);
        expect(days.length, `${tz} ${expr}`).toBe(365);
      }
    }
  });

  it('forward and backward agree, and fire times are ascending and distinct', () => {
    for (const [expr, tz, from] of [
      ['*/15 * * * *', 'America/New_York', '2026-11-01T03:00:00Z'],
      ['0,30 2,3 * * *', 'Europe/Berlin', '2026-03-28T20:00:00Z'],
      ['0,30 2,3 * * *', 'Europe/Berlin', '2026-10-24T20:00:00Z'],
      ['30 * * * *', 'Australia/Sydney', '2026-04-04T10:00:00Z'],
      ['30 2 * * *', 'Australia/Sydney', '2026-10-01T00:00:00Z'],
    ] as const) {
      const spec = parseSchedule(expr, tz);
      const fires = nextFireTimes(spec, T(from), 60);
      for (let i = 0; i < fires.length; i++) {
        if (i > 0) expect(fires[i]!).toBeGreaterThan(fires[i - 1]!);
        expect(nextFireTimes(spec, i === 0 ? T(from) : fires[i - 1]!, 1)).toEqual([fires[i]]);
        expect(lastFireAtOrBefore(spec, fires[i]!)).toBe(fires[i]);
        if (i > 0) expect(lastFireAtOrBefore(spec, fires[i]! - 1)).toBe(fires[i - 1]);
      }
    }
  });
});

describe('planOccurrences (misfire)', () => {
  const hourly = parseSchedule('0 * * * *', 'UTC');
  const plan = (spec: CronSpec, lastFire: string | null, now: string, misfire: MisfirePolicy, created = '2025-12-01T00:00:00Z') => {
    const p = planOccurrences({spec, lastFireMs: lastFire === null ? null : T(lastFire), createdMs: T(created), nowMs: T(now), misfire});
    return {
      fireAt: p.fireAtMs.map(iso),
      next: iso(p.nextFireMs),
      following: p.followingFireMs === null ? null : iso(p.followingFireMs),
      missed: p.missed,
    };
  };

  it('nothing missed: only the next occurrence, whatever the policy', () => {
    for (const m of ['skip', 'fire-once'] as const) {
      expect(plan(hourly, '2026-01-01T10:00:00Z', '2026-01-01T10:30:00Z', m)).toEqual({
        fireAt: ['2026-01-01T11:00:00Z'],
        next: '2026-01-01T11:00:00Z',
        following: '2026-01-01T12:00:00Z',
        missed: null,
      });
    }
  });

  it('the last occurrence is still pending: nothing to create', () => {
    expect(plan(hourly, '2026-01-01T11:00:00Z', '2026-01-01T10:30:00Z', 'fire-once')).toEqual({
      fireAt: [],
      next: '2026-01-01T11:00:00Z',
      following: '2026-01-01T12:00:00Z',
      missed: null,
    });
  });

  it('a fire time within the tolerance (1 minute) is due, not missed', () => {
    for (const m of ['skip', 'fire-once'] as const) {
      expect(plan(hourly, '2026-01-01T10:00:00Z', '2026-01-01T11:00:45Z', m).fireAt).toEqual([
        '2026-01-01T11:00:00Z',
        '2026-01-01T12:00:00Z',
      ]);
      expect(plan(hourly, '2026-01-01T10:00:00Z', '2026-01-01T11:01:00Z', m)).toMatchObject({
        fireAt: ['2026-01-01T11:00:00Z', '2026-01-01T12:00:00Z'],
        missed: null,
      });
    }
    // One millisecond later it is missed.
    expect(plan(hourly, '2026-01-01T10:00:00Z', '2026-01-01T11:01:00.001Z', 'skip')).toMatchObject({
      fireAt: ['2026-01-01T12:00:00Z'],
      missed: {count: 1},
    });
  });

  it('one missed: skip drops it, fire-once creates it (fire_at = its slot) and the next', () => {
    const missed = {count: 1, firstMs: T('2026-01-01T11:00:00Z'), lastMs: T('2026-01-01T11:00:00Z')};
    expect(plan(hourly, '2026-01-01T10:00:00Z', '2026-01-01T11:30:00Z', 'skip')).toEqual({
      fireAt: ['2026-01-01T12:00:00Z'],
      next: '2026-01-01T12:00:00Z',
      following: '2026-01-01T13:00:00Z',
      missed,
    });
    expect(plan(hourly, '2026-01-01T10:00:00Z', '2026-01-01T11:30:00Z', 'fire-once')).toEqual({
      fireAt: ['2026-01-01T11:00:00Z', '2026-01-01T12:00:00Z'],
      next: '2026-01-01T12:00:00Z',
      following: '2026-01-01T13:00:00Z',
      missed,
    });
  });

  it('many missed: fire-once creates exactly one, at the latest missed fire time', () => {
    // Down from 2026-01-01 00:00 to 2026-01-03 05:30: 01:00 on the 1st … 05:00 on the 3rd = 53 missed.
    const missed = {count: 53, firstMs: T('2026-01-01T01:00:00Z'), lastMs: T('2026-01-03T05:00:00Z')};
    expect(plan(hourly, '2026-01-01T00:00:00Z', '2026-01-03T05:30:00Z', 'skip')).toMatchObject({fireAt: ['2026-01-03T06:00:00Z'], missed});
    expect(plan(hourly, '2026-01-01T00:00:00Z', '2026-01-03T05:30:00Z', 'fire-once')).toMatchObject({
      fireAt: ['2026-01-03T05:00:00Z', '2026-01-03T06:00:00Z'],
      next: '2026-01-03T06:00:00Z',
      missed,
    });
    // A year of a minutely schedule: still bounded, the count stops at the cap.
    const minutely = parseSchedule('* * * * *', 'UTC');
    const p = plan(minutely, '2025-01-01T00:00:00Z', '2026-01-01T00:00:30Z', 'fire-once');
    expect(p.fireAt).toEqual(['2025-12-31T23:59:00Z', '2026-01-01T00:00:00Z', '2026-01-01T00:01:00Z']);
    expect(p.missed).toEqual({count: MISSED_COUNT_CAP, firstMs: T('2025-01-01T00:01:00Z'), lastMs: T('2025-12-31T23:59:00Z')});
  });

  it('counts from the creation time when nothing was created yet', () => {
    expect(plan(hourly, null, '2026-01-01T10:20:00Z', 'fire-once', '2026-01-01T10:15:00Z')).toMatchObject({
      fireAt: ['2026-01-01T11:00:00Z'],
      missed: null,
    });
    expect(plan(hourly, null, '2026-01-01T12:20:00Z', 'fire-once', '2026-01-01T10:15:00Z')).toMatchObject({
      fireAt: ['2026-01-01T12:00:00Z', '2026-01-01T13:00:00Z'],
      missed: {count: 2},
    });
    // A fire time exactly at creation does not count; one after does.
    expect(plan(hourly, null, '2026-01-01T10:00:00Z', 'skip', '2026-01-01T10:00:00Z').fireAt).toEqual(['2026-01-01T11:00:00Z']);
  });

  it('a minutely schedule: due ones within the tolerance plus the catch-up, never more than the bound', () => {
    const minutely = parseSchedule('* * * * *', 'UTC');
    expect(plan(minutely, '2026-01-01T10:00:00Z', '2026-01-01T10:02:00Z', 'fire-once')).toMatchObject({
      fireAt: ['2026-01-01T10:01:00Z', '2026-01-01T10:02:00Z', '2026-01-01T10:03:00Z'],
      missed: null,
    });
    expect(plan(minutely, '2026-01-01T09:50:00Z', '2026-01-01T10:02:00Z', 'fire-once')).toMatchObject({
      fireAt: ['2026-01-01T10:00:00Z', '2026-01-01T10:01:00Z', '2026-01-01T10:02:00Z', '2026-01-01T10:03:00Z'],
      missed: {count: 10, firstMs: T('2026-01-01T09:51:00Z'), lastMs: T('2026-01-01T10:00:00Z')},
    });
    // Property: over many deterministic (last, now) pairs, fireAt is ascending, distinct, bounded,
    // after the last occurrence, and ends with the first fire time after now.
    for (const [spec, step] of [
      [minutely, 17_000],
      [hourly, 1_234_567],
      [parseSchedule('30 2 * * *', 'America/New_York'), 13_579_111],
    ] as const) {
      for (let i = 0; i < 40; i++) {
        const last = T('2026-03-07T00:00:00Z') + i * step;
        const now = last + ((i * 7_919_000) % (3 * 86_400_000));
        for (const misfire of ['skip', 'fire-once'] as const) {
          const p = planOccurrences({spec, lastFireMs: last, createdMs: 0, nowMs: now, misfire});
          expect(p.fireAtMs.length).toBeLessThanOrEqual(MAX_PLANNED_OCCURRENCES);
          expect(new Set(p.fireAtMs).size).toBe(p.fireAtMs.length);
          p.fireAtMs.forEach((t, j) => {
            expect(t).toBeGreaterThan(last);
            if (j > 0) expect(t).toBeGreaterThan(p.fireAtMs[j - 1]!);
          });
          if (last <= now) {
            expect(p.fireAtMs.at(-1)).toBe(nextFireTimes(spec, now, 1)[0]);
            expect(p.nextFireMs).toBe(p.fireAtMs.at(-1));
          }
          expect(p.followingFireMs).toBe(nextFireTimes(spec, p.fireAtMs.at(-1) ?? last, 1)[0]);
        }
      }
    }
  });

  it('misses across a DST change use the zone-correct slot', () => {
    const daily = parseSchedule('30 2 * * *', 'America/New_York');
    expect(plan(daily, '2026-03-07T07:30:00Z', '2026-03-08T12:00:00Z', 'fire-once')).toMatchObject({
      fireAt: ['2026-03-08T07:30:00Z', '2026-03-09T06:30:00Z'],
      missed: {count: 1},
    });
    const early = parseSchedule('30 1 * * *', 'America/New_York');
    // Down over the repeated hour: 01:30 EDT missed once, not twice.
    expect(plan(early, '2026-10-31T05:30:00Z', '2026-11-01T07:00:00Z', 'fire-once')).toMatchObject({
      fireAt: ['2026-11-01T05:30:00Z', '2026-11-02T06:30:00Z'],
      missed: {count: 1},
    });
  });

  it('refuses bad input', () => {
    expectInvalid(() => planOccurrences({spec: hourly, lastFireMs: null, createdMs: 0, nowMs: Number.NaN, misfire: 'skip'}), /nowMs/);
    expectInvalid(
      () => planOccurrences({spec: hourly, lastFireMs: null, createdMs: 0, nowMs: 0, misfire: 'all' as MisfirePolicy}),
      /misfire must be one of skip, fire-once/,
    );
  });
});

describe('shouldSkipForOverlap', () => {
  it('skip: only while the previous occurrence is unfinished; allow: never', () => {
    for (const state of TASK_STATES) {
      expect(shouldSkipForOverlap('skip', state), state).toBe(!isTerminal(state));
      expect(shouldSkipForOverlap('allow', state), state).toBe(false);
    }
    expect(['submitted', 'running', 'failed'].every((s) => shouldSkipForOverlap('skip', s as never))).toBe(true);
    expect(shouldSkipForOverlap('skip', null)).toBe(false);
    expect(shouldSkipForOverlap('skip', undefined)).toBe(false);
    expectInvalid(() => shouldSkipForOverlap('queue' as never, 'running'), /overlap must be one of/);
  });
});

describe('validateScheduleName / validateCronInput', () => {
  it('validates schedule names', () => {
    for (const ok of ['nightly-report', 'a', '0', 'a.b_c-d', 'x'.repeat(64)]) expect(validateScheduleName(ok)).toBe(ok);
    expectInvalid(() => validateScheduleName(''), /schedule name is required/);
    expectInvalid(() => validateScheduleName(42), /schedule name is required/);
    expectInvalid(() => validateScheduleName('x'.repeat(65)), /longer than 64/);
    for (const bad of ['Nightly', '-x', '.x', '_x', 'a b', '../x', 'a/b', 'é'])
      expectInvalid(() => validateScheduleName(bad), /is not valid/);
  });

  const opts = {payloadLimitBytes: 64, nowMs: T('2026-01-01T00:00:00Z')};
  const base = {name: 'nightly-report', cron: ' @daily ', tz: 'europe/berlin', type: 'report_nightly'};

  it('returns a normalised definition with defaults', () => {
    const v = validateCronInput(base, opts);
    expect(v).toMatchObject({
      name: 'nightly-report',
      cron: '0 0 * * *',
      tz: 'Europe/Berlin',
      type: 'report_nightly',
      payload: '{}',
      pool: 'io',
      overlap: 'allow',
      misfire: 'fire-once',
      maxRetries: null,
      timeoutMs: null,
    });
    expect(v.spec).toEqual({expr: '0 0 * * *', tz: 'Europe/Berlin'});
    const w = validateCronInput(
      {...base, payload: {a: 1}, pool: 'cpu', overlap: 'skip', misfire: 'skip', maxRetries: 3, timeout: '30s'},
      opts,
    );
    expect(w).toMatchObject({payload: '{"a":1}', pool: 'cpu', overlap: 'skip', misfire: 'skip', maxRetries: 3, timeoutMs: 30_000});
  });

  it('refuses each bad field with a precise message', () => {
    expectInvalid(() => validateCronInput(null, opts), /must be an object/);
    expectInvalid(() => validateCronInput([], opts), /must be an object/);
    expectInvalid(() => validateCronInput({...base, schedule: '* * * * *'}, opts), /unknown cron schedule field "schedule"/);
    expectInvalid(() => validateCronInput({...base, name: undefined}, opts), /schedule name is required/);
    expectInvalid(() => validateCronInput({...base, cron: undefined}, opts), /cron is required/);
    expectInvalid(() => validateCronInput({...base, cron: '61 * * * *'}, opts), /minute field "61"/);
    expectInvalid(() => validateCronInput({...base, cron: '0 0 31 2 *'}, opts), /never fires/);
    expectInvalid(() => validateCronInput({...base, tz: undefined}, opts), /tz is required/);
    expectInvalid(() => validateCronInput({...base, tz: 'Mars/Olympus'}, opts), /not a known IANA time zone/);
    expectInvalid(() => validateCronInput({...base, type: 'Report'}, opts), /task type "Report" is not domain_action/);
    expectInvalid(() => validateCronInput({...base, payload: {big: 'x'.repeat(100)}}, opts), /over the limit of 64 bytes/);
    expectInvalid(() => validateCronInput({...base, payload: [1]}, opts), /payload must be a JSON object/);
    expectInvalid(() => validateCronInput({...base, pool: 'gpu'}, opts), /pool must be one of io, cpu/);
    expectInvalid(() => validateCronInput({...base, overlap: 'queue'}, opts), /overlap must be one of allow, skip/);
    expectInvalid(() => validateCronInput({...base, misfire: 'all'}, opts), /misfire must be one of skip, fire-once/);
    expectInvalid(() => validateCronInput({...base, maxRetries: -1}, opts), /maxRetries must be/);
    expectInvalid(() => validateCronInput({...base, timeout: 'soon'}, opts), /timeout/);
  });
});
