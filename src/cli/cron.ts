/** What the `ax cron` commands share: the JSON shapes and the human rendering. */
import {iso, printable, table, when} from './render.js';
import type {ScheduleView} from '../core/cron/admin.js';
import type {CancelledOccurrence} from '../core/cron/overview.js';
import {MISFIRE_TOLERANCE_MS} from '../core/cron/schedule.js';
import {formatDuration} from '../core/duration.js';
import {zoneOf} from '../core/cron/zone.js';

/** A schedule as the `ax cron` commands print it with --json: dates as ISO strings. */
export interface ScheduleJson {
  name: string;
  /** The normalised expression (5 fields; nicknames expanded). */
  cron: string;
  tz: string;
  type: string;
  payload: unknown;
  pool: string;
  priority: string;
  /** null: the task default. */
  maxRetries: number | null;
  /** null: the handler's timeout, else the default. */
  timeoutMs: number | null;
  /** The key of every occurrence (TaskSpec.key); null: none. */
  key: string | null;
  overlap: 'allow' | 'skip';
  misfire: 'skip' | 'fire-once';
  paused: boolean;
  /** Fire time of the pending occurrence (already a task), null until a scheduler first plans the schedule. */
  nextFireAt: string | null;
  /** As stored: fire time and task of the latest occurrence a scheduler created. */
  lastFireAt: string | null;
  lastTaskId: string | null;
  createdAt: string;
  updatedAt: string;
}

/** One fire time: the instant (UTC) and the wall-clock time in the schedule's zone with its offset. */
export interface FireTimeJson {
  /** ISO-8601 in UTC, e.g. 2026-05-01T18:00:00.000Z */
  utc: string;
  /** ISO-8601 local time with the zone's offset, e.g. 2026-05-02T02:00:00+08:00 */
  local: string;
}

/** The policies of a schedule, one sentence each. */
export interface PoliciesJson {
  misfire: string;
  overlap: string;
  dst: string;
}

/** The --json output of `ax cron show` and `ax cron add`. */
export interface CronShowResult {
  schedule: ScheduleJson;
  nextFireTimes: FireTimeJson[];
  policies: PoliciesJson;
}

/** An occurrence cancelled by `pause` or `rm`. */
export interface CancelledJson {
  taskId: string;
  /** Its fire time (the task's run_at), null if the row vanished meanwhile. */
  fireAt: string | null;
}

export const DEFAULT_NEXT = 5;
export const MAX_NEXT = 100;

export function scheduleJson(s: ScheduleView): ScheduleJson {
  return {
    name: s.name,
    cron: s.cron,
    tz: s.tz,
    type: s.type,
    payload: s.payload,
    pool: s.pool,
    priority: s.priority,
    maxRetries: s.maxRetries,
    timeoutMs: s.timeoutMs,
    key: s.key,
    overlap: s.overlap,
    misfire: s.misfire,
    paused: s.paused,
    nextFireAt: iso(s.nextFireAt),
    lastFireAt: iso(s.lastFireAt),
    lastTaskId: s.lastTaskId,
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
  };
}

const pad = (n: number): string => String(n).padStart(2, '0');

/** `2026-05-02T02:00:00+08:00`: the wall-clock time of `d` in `tz`, with the offset in force then. */
export function localTime(d: Date, tz: string): string {
  const offsetMin = Math.round(zoneOf(tz).offsetAt(d.getTime()) / 60_000);
  const wall = new Date(d.getTime() + offsetMin * 60_000).toISOString().slice(0, 19);
  const abs = Math.abs(offsetMin);
  return `${wall}${offsetMin < 0 ? '-' : '+'}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

/** `2026-05-02 02:00:00 +08:00`: localTime for people. */
export function humanLocal(d: Date, tz: string): string {
  return localTime(d, tz)
    .replace('T', ' ')
    .replace(/([+-]\d\d:\d\d)$/, ' $1');
}

export function fireTimeJson(d: Date, tz: string): FireTimeJson {
  return {utc: d.toISOString(), local: localTime(d, tz)};
}

const weekday = (d: Date, tz: string): string => new Intl.DateTimeFormat('en-US', {timeZone: tz, weekday: 'short'}).format(d);

/** Rows of fire times: UTC, and local time in the zone with its offset and weekday. */
export function fireTimeRows(times: Date[], tz: string, indent = '  '): string[] {
  const rows = times.map((t) => [when(t, {seconds: true}), `${humanLocal(t, tz)} ${weekday(t, tz)}`]);
  return table(['UTC', tz], rows, {indent});
}

/** The policies of a schedule explained, one line each. */
export function policies(s: {misfire: string; overlap: string; tz: string}, nowMs: number): PoliciesJson {
  const late = `more than ${formatDuration(MISFIRE_TOLERANCE_MS)} late`;
  const misfire =
    s.misfire === 'skip'
      ? `skip: fire times missed while no scheduler ran (${late}) are dropped; the schedule goes on with the next one`
      : `fire-once: fire times missed while no scheduler ran (${late}) are made up by exactly one run, for the latest of them, at once`;
  const overlap =
    s.overlap === 'skip'
      ? 'skip: an occurrence that falls due while the previous one is still queued, running or waiting for a retry is cancelled (skipped)'
      : 'allow: every occurrence runs, even while the previous one has not finished';
  const zone = zoneOf(s.tz);
  const year = new Date(nowMs).getUTCFullYear();
  const changes = zone.offsetAt(Date.UTC(year, 0, 1)) !== zone.offsetAt(Date.UTC(year, 6, 1));
  const dst = changes
    ? `${s.tz} changes its UTC offset: a wall time skipped by the spring-forward fires once, shifted by the gap; a wall time repeated by the fall-back fires once (the first), except in schedules that fire every hour, which fire at both`
    : `${s.tz} keeps one UTC offset all year: every fire time is the wall time as written`;
  return {misfire, overlap, dst};
}

export function showResult(s: ScheduleView, times: Date[], nowMs: number): CronShowResult {
  return {schedule: scheduleJson(s), nextFireTimes: times.map((t) => fireTimeJson(t, s.tz)), policies: policies(s, nowMs)};
}

/** The human view of a schedule and its next fire times (`ax cron show`, `ax cron add`). */
export function renderSchedule(r: CronShowResult, nowMs: number): string[] {
  const s = r.schedule;
  const lines = [
    `${s.name}  ${s.cron}  ${s.tz}  →  ${s.type}  ${s.paused ? 'PAUSED' : 'ACTIVE'}`,
    `  pool ${s.pool} · priority ${s.priority} · max retries ${s.maxRetries ?? 'default'} · timeout ${s.timeoutMs === null ? 'default' : `${s.timeoutMs} ms`}`,
    `  payload   ${JSON.stringify(s.payload)}`,
    ...(s.key === null ? [] : [`  key       ${printable(s.key)}`]),
    `  misfire   ${r.policies.misfire}`,
    `  overlap   ${r.policies.overlap}`,
    `  DST       ${r.policies.dst}`,
    `  created   ${when(new Date(s.createdAt), {seconds: true})} UTC`,
  ];
  const pending = s.nextFireAt === null ? null : new Date(s.nextFireAt);
  if (s.paused) lines.push('  paused: no occurrences are created; `ax cron resume` plans again from then on');
  else if (pending !== null && pending.getTime() > nowMs) lines.push(`  pending occurrence at ${when(pending, {seconds: true})} UTC`);
  else lines.push('  its next occurrence is not created yet: a running `ax scheduler` creates it');
  const n = r.nextFireTimes.length;
  lines.push('', `next ${n} fire time${n === 1 ? '' : 's'}${s.paused ? ' (if resumed now)' : ''}`);
  lines.push(
    ...fireTimeRows(
      r.nextFireTimes.map((t) => new Date(t.utc)),
      s.tz,
    ),
  );
  return lines;
}

/** A cancelled occurrence for --json (`ax cron rm`). */
export function cancelledJson(c: CancelledOccurrence): CancelledJson {
  return {taskId: c.taskId, fireAt: iso(c.fireAt)};
}

/** "cancelled its pending occurrence <id> (fire time …)" or "it had no pending occurrence". */
export function describeCancelled(cancelled: CancelledJson[]): string {
  if (cancelled.length === 0) return 'it had no pending occurrence to cancel';
  const one = (c: CancelledJson): string =>
    `${c.taskId} (fire time ${c.fireAt === null ? '?' : `${when(new Date(c.fireAt), {seconds: true})} UTC`})`;
  return `cancelled its pending occurrence ${cancelled.map(one).join(', ')}`;
}
