/**
 * The history behind `ax top`'s sparklines, backlog trend and alert level: samples of the backlog
 * and the rates, kept for up to HISTORY_MS with bounded memory (full resolution for the recent
 * HISTORY_FULL_MS, one sample per HISTORY_THIN_MS before that). Pure: no I/O, no clock.
 */
import {BACKLOG_GROWING_MS, BACKLOG_P1, BACKLOG_P2} from '../thresholds.js';
import {slopePerS} from './rates.js';

/** The longest history kept (and the widest sparkline window). */
export const HISTORY_MS = 60 * 60_000;
/** Samples this recent are all kept: a little more than the P2 window the alert needs. */
export const HISTORY_FULL_MS = BACKLOG_GROWING_MS + 60_000;
/** Older samples are thinned to one per this much time (60 min / 10 s: at most 360 of them). */
export const HISTORY_THIN_MS = 10_000;
/** The trend of the backlog is read over this much of its most recent history. */
export const TREND_WINDOW_MS = 15_000;

/** One point of the history behind the sparklines and the alert trend. */
export interface TopSample {
  /** Database time (ms). */
  t: number;
  /** Due + delayed + running (the backlog sparkline). */
  backlog: number;
  /** Due tasks alone: what the alert level judges, as the alert rules do (ax_backlog_tasks{state="due"}). */
  due: number;
  submitRate: number | null;
  consumeRate: number | null;
}

/**
 * The history with `s` added: samples at or after `s.t` dropped (a clock that went back), those
 * older than HISTORY_MS dropped, and those older than HISTORY_FULL_MS thinned to the first of each
 * HISTORY_THIN_MS slot. At a 200 ms refresh that is at most 1,800 + 360 samples.
 */
export function pushSample(history: readonly TopSample[], s: TopSample): TopSample[] {
  const out: TopSample[] = [];
  let slot = Number.NaN;
  for (const x of history) {
    if (x.t < s.t - HISTORY_MS || x.t >= s.t) continue;
    if (x.t < s.t - HISTORY_FULL_MS) {
      const k = Math.floor(x.t / HISTORY_THIN_MS);
      if (k === slot) continue;
      slot = k;
    }
    out.push(x);
  }
  out.push(s);
  return out;
}

/** How long the history spans (ms): from its first sample to its last. */
export const historySpanMs = (history: readonly TopSample[]): number =>
  history.length < 2 ? 0 : history[history.length - 1]!.t - history[0]!.t;

/**
 * The backlog's trend per minute, read from the same series the header shows beside it: the
 * median of the changes between consecutive samples of the last TREND_WINDOW_MS (each per unit of
 * time). The median follows what the numbers do refresh after refresh: a burst of submits (one
 * step up) followed by a steady drain reads as draining, where a least-squares slope over a minute
 * said "↑" for the whole minute after the burst. Null with fewer than two samples.
 */
export function backlogTrendPerMin(history: readonly TopSample[]): number | null {
  const last = history[history.length - 1];
  if (!last) return null;
  let from = history.length - 1;
  while (from > 0 && history[from - 1]!.t >= last.t - TREND_WINDOW_MS) from--;
  // At least the last two samples, however far apart (a slow refresh).
  from = Math.min(from, history.length - 2);
  if (from < 0) return null;
  const rates: number[] = [];
  for (let i = from + 1; i < history.length; i++) {
    const a = history[i - 1]!;
    const b = history[i]!;
    if (b.t > a.t) rates.push(((b.backlog - a.backlog) / (b.t - a.t)) * 60_000);
  }
  if (rates.length === 0) return null;
  rates.sort((x, y) => x - y);
  const m = rates.length >> 1;
  return rates.length % 2 === 1 ? rates[m]! : (rates[m - 1]! + rates[m]!) / 2;
}

/** `stale`: the latest read failed, so no level can be judged (never "ok" from old or missing data). */
export type AlertLevel = 'ok' | 'P2' | 'P1' | 'stale';

export interface Alert {
  level: AlertLevel;
  reason: string;
  /** With `stale`: the database time of the last successful read (ISO), null when there was none. */
  lastReadAt?: string | null;
}

/**
 * The alert of a refresh whose backlog could not be read: stale, since the last successful read
 * (the newest sample), or no data at all.
 */
export function staleAlert(history: readonly TopSample[]): Alert {
  const last = history[history.length - 1];
  if (!last) return {level: 'stale', reason: 'no data: the database has not been read yet', lastReadAt: null};
  const at = new Date(last.t).toISOString();
  return {level: 'stale', reason: `no data since ${at.slice(11, 19)} UTC (the last successful read)`, lastReadAt: at};
}

/**
 * The alert level of the due backlog (due tasks of every type: what the alert rules sum; delayed
 * tasks are not late and running ones are bounded by the slots), with the rules' thresholds: P1
 * above BACKLOG_P1; P2 above BACKLOG_P2 when, over the last BACKLOG_GROWING_MS, it stayed above it
 * and grew (a positive least-squares slope, as Prometheus' deriv()). Needs that much history for
 * P2 (the reason says so). The rules also wait their `for:` before firing; this view does not.
 * Judges the newest sample: callers whose latest read failed use staleAlert instead.
 */
export function alertLevel(history: readonly TopSample[]): Alert {
  const last = history[history.length - 1];
  if (!last) return {level: 'ok', reason: 'no data yet'};
  if (last.due > BACKLOG_P1) return {level: 'P1', reason: `due ${last.due} > ${BACKLOG_P1}`};
  if (last.due <= BACKLOG_P2) return {level: 'ok', reason: `due ${last.due} ≤ ${BACKLOG_P2}`};
  const from = last.t - BACKLOG_GROWING_MS;
  if ((history[0]?.t ?? last.t) > from) return {level: 'ok', reason: `due > ${BACKLOG_P2}; its trend needs 5m of history`};
  const window = history.filter((s) => s.t >= from);
  const slope = slopePerS(window.map((s) => ({t: s.t, v: s.due})));
  if (window.every((s) => s.due > BACKLOG_P2) && slope !== null && slope > 0)
    return {level: 'P2', reason: `due > ${BACKLOG_P2} and growing for 5m (+${Math.round(slope * 60)}/min)`};
  return {level: 'ok', reason: `due > ${BACKLOG_P2} but not growing for 5m`};
}
