/**
 * The text of `ax top`'s panes as plain strings of a given width: the views only colour them. Pure,
 * so widths and contents are tested without a terminal.
 */
import {formatCount, formatPct, formatRate} from '../../cli/format.js';
import {clip} from '../../cli/render.js';
import {formatDuration} from '../../core/duration.js';
import type {TopSample, TopSnapshot, TopTypeRow} from '../../core/inspect/top.js';
import {BACKLOG_GROWING_MS, BACKLOG_P1, BACKLOG_P2} from '../../core/thresholds.js';

/** The narrowest terminal `ax top` draws in. */
export const MIN_WIDTH = 60;

const BARS = '▁▂▃▄▅▆▇█';

/** A sparkline of the last `width` values (null: a gap), scaled from 0 to the largest. */
export function sparkline(values: ReadonlyArray<number | null>, width: number): string {
  const tail = values.slice(-width);
  const max = Math.max(0, ...tail.map((v) => v ?? 0));
  const line = tail.map((v) => (v === null ? ' ' : BARS[max === 0 ? 0 : Math.min(7, Math.round((v / max) * 7))]!)).join('');
  return line.padStart(width);
}

const dash = '—';
/** Cut to `width` with an ellipsis; spacing kept (the header's text is ax's own, not a producer's). */
export const fit = (s: string, width: number): string => (s.length > width ? `${s.slice(0, width - 1)}…` : s);
const num = (n: number | null, f: (n: number) => string): string => (n === null ? dash : f(n));

/** The two header lines: where and who; the four signals and the alert. */
export function headerLines(s: TopSnapshot | null, width: number, intervalMs: number): string[] {
  if (s === null) return [fit(`ax top · connecting… (refresh every ${formatDuration(intervalMs)})`, width), ''];
  const at = s.at === null ? 'database unreachable' : `${s.at.slice(11, 19)} UTC`;
  const w = s.workers;
  const one = `ax top · cell ${s.cell} · ${at} · workers ${w.live} live${w.stale > 0 ? `, ${w.stale} STALE` : ''}`;
  const b = s.backlog;
  const trend =
    b?.trendPerMin === null || b === null
      ? ''
      : ` ${b.trendPerMin > 0.5 ? '↑' : b.trendPerMin < -0.5 ? '↓' : '→'}${formatCount(Math.abs(b.trendPerMin))}/min`;
  const two =
    `submit ${num(s.submitRate, formatRate)}/s  consume ${num(s.consumeRate, formatRate)}/s  ` +
    `backlog ${b === null ? dash : formatCount(b.total)}${trend}  dead ${b === null ? dash : formatCount(b.dead)}  alert ${s.alert.level}`;
  return [fit(one, width), fit(two, width)];
}

/** The time the sparklines span: the last minutes, right up to the newest sample. */
export const SPARK_SPAN_MS = 5 * 60_000;

/**
 * `width` columns over the SPARK_SPAN_MS before the newest sample, each the latest value in its
 * slice of time (null: no sample there, a gap; before the history starts, blank).
 */
export function binned(history: readonly TopSample[], pick: (s: TopSample) => number | null, width: number): Array<number | null> {
  const last = history[history.length - 1];
  const out = new Array<number | null>(width).fill(null);
  if (!last) return out;
  const step = SPARK_SPAN_MS / width;
  const start = last.t - SPARK_SPAN_MS;
  for (const s of history) {
    const i = Math.min(width - 1, Math.floor((s.t - start) / step));
    if (i >= 0) out[i] = pick(s);
  }
  return out;
}

/** Sparklines of the backlog and the two rates over the last SPARK_SPAN_MS (the newest at the right). */
export function sparkLines(history: readonly TopSample[], width: number): string[] {
  const label = 9;
  const value = 8;
  const w = Math.max(10, width - label - value - 2);
  const last = history[history.length - 1];
  const line = (name: string, pick: (s: TopSample) => number | null, v: string): string =>
    `${name.padEnd(label)}${sparkline(binned(history, pick, w), w)}  ${v}`;
  return [
    line('backlog', (s) => s.backlog, last ? formatCount(last.backlog) : dash),
    line('submit/s', (s) => s.submitRate, num(last?.submitRate ?? null, formatRate)),
    line('consume/s', (s) => s.consumeRate, num(last?.consumeRate ?? null, formatRate)),
  ];
}

interface Column {
  head: string;
  width: number;
  cell: (r: TopTypeRow) => string;
}

const COLUMNS: Column[] = [
  {head: 'DUE', width: 5, cell: (r) => formatCount(r.due)},
  {head: 'DELAY', width: 5, cell: (r) => formatCount(r.delayed)},
  {head: 'RUN', width: 5, cell: (r) => formatCount(r.running)},
  {head: 'RATE/s', width: 6, cell: (r) => num(r.rate, formatRate)},
  {head: 'FAIL', width: 5, cell: (r) => num(r.failurePct, formatPct)},
  {head: 'P95', width: 5, cell: (r) => num(r.p95Ms, formatDuration)},
  // Closed is the normal state: "ok", so an OPEN breaker stands out in a 4-character column.
  {
    head: 'BRK',
    width: 4,
    cell: (r) => (r.breaker === null ? dash : r.breaker === 'closed' ? 'ok' : r.breaker === 'open' ? 'OPEN' : 'half'),
  },
  {head: 'PAUSE', width: 5, cell: (r) => (r.paused === null ? dash : r.paused ? 'yes' : 'no')},
  {head: 'DEAD', width: 5, cell: (r) => formatCount(r.dead)},
];

/** Columns given up, in this order, until the type name has MIN_TYPE_WIDTH characters. */
const DROP_ORDER = ['PAUSE', 'BRK', 'DELAY', 'P95'];
const MIN_TYPE_WIDTH = 14;

/**
 * The per-type table: a header line and one line per row, at most `width − 2` wide (the views put
 * a selection mark in front). Narrow terminals lose the PAUSE, BRK, DELAY and P95 columns first.
 */
export function typeTableLines(rows: readonly TopTypeRow[], width: number): string[] {
  const room = (cols: Column[]): number => width - 2 - cols.reduce((n, c) => n + c.width + 1, 0);
  let cols = COLUMNS;
  for (const head of DROP_ORDER) if (room(cols) < MIN_TYPE_WIDTH) cols = cols.filter((c) => c.head !== head);
  const typeW = Math.max(8, room(cols));
  const line = (type: string, cells: string[]): string =>
    (clip(type, typeW).padEnd(typeW) + cells.map((c, i) => ' ' + c.padStart(cols[i]!.width)).join('')).slice(0, width - 2);
  return [
    line(
      'TYPE',
      cols.map((c) => c.head),
    ),
    ...rows.map((r) =>
      line(
        r.type,
        cols.map((c) => clip(c.cell(r), c.width)),
      ),
    ),
  ];
}

/** The error groups of the selected type: count, signature, how long ago the last one was. */
export function errorLines(s: TopSnapshot | null, type: string | undefined, width: number, max: number): string[] {
  if (type === undefined) return ['no type selected'];
  const e = s?.errors;
  if (!e || e.type !== type) return [`errors of ${type}: reading…`];
  if (e.groups.length === 0) return [`no failed attempts of ${type} in the last 15m`];
  const at = s?.at === null || s?.at === undefined ? null : Date.parse(s.at);
  const out = [`errors of ${type}, last 15m (ax errors --type ${type} for more):`];
  for (const g of e.groups.slice(0, max)) {
    const ago = at === null ? '' : ` (${formatDuration(Math.max(0, at - g.lastSeen.getTime()))} ago)`;
    out.push(clip(`${formatCount(g.count).padStart(6)}× ${g.signature}${ago}`, width));
  }
  return out;
}

export const KEYS_LINE = '↑↓ select  p pause  r replay dead  e errors  / filter  ? help  q quit';

export const HELP_LINES = [
  'Keys',
  '  ↑ ↓      select a type',
  '  p        pause or resume the selected type (asks y/N; audited, reason "ax top")',
  '  r        replay the dead tasks of the selected type (asks first)',
  '  e        the errors of the selected type (last 15m)',
  '  /        filter the types by name; Enter applies, Esc cancels',
  '  ?        this help',
  '  Esc      back to the table',
  '  q        quit',
  '',
  'Columns: DUE ready to run · DELAY waiting for run_at or a retry · RUN running',
  'RATE/s attempts per second · FAIL failed or dead share · P95 attempt duration',
  "(local queue wait included; over the workers' last heartbeat interval)",
  'BRK breaker: ok (closed), OPEN, half (half-open) · PAUSE paused (— registry not read)',
  `Alert: P1 due > ${formatCount(BACKLOG_P1)} · P2 due > ${formatCount(BACKLOG_P2)} and growing for ${formatDuration(BACKLOG_GROWING_MS)}`,
];
