/**
 * The text of `ax top`'s panes as plain strings of a given width: the views only colour them. Pure,
 * so widths and contents are tested without a terminal.
 */
import {formatCount, formatPct, formatRate} from '../../cli/format.js';
import {clip} from '../../cli/render.js';
import {formatDuration} from '../../core/duration.js';
import {historySpanMs} from '../../core/inspect/top-history.js';
import {HISTORY_MS, type TopSample, type TopSnapshot, type TopTypeRow} from '../../core/inspect/top.js';
import {sortLabel, type SortColumn, type TopSort} from '../../core/inspect/top-sort.js';
import {BACKLOG_GROWING_MS, BACKLOG_P1, BACKLOG_P2} from '../../core/thresholds.js';
import {sharePct} from '../../core/types/keys.js';

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
  // Stale data goes first, so a narrow terminal cuts the numbers, never the warning.
  const stale = s.alert.level === 'stale' ? `STALE: ${s.alert.reason} · ` : '';
  const two =
    stale +
    `submit ${num(s.submitRate, formatRate)}/s  consume ${num(s.consumeRate, formatRate)}/s  ` +
    `backlog ${b === null ? dash : formatCount(b.total)}${trend}  dead ${b === null ? dash : formatCount(b.dead)}  ` +
    `alert ${s.alert.level === 'stale' ? dash : s.alert.level}`;
  return [fit(one, width), fit(two, width)];
}

/** The windows the sparklines span: the shortest that holds the whole history (at most HISTORY_MS). */
export const SPARK_SPANS_MS = [5 * 60_000, 15 * 60_000, 30 * 60_000, HISTORY_MS];
/** The shortest window: the span of a history younger than 5 minutes. */
export const SPARK_SPAN_MS = SPARK_SPANS_MS[0]!;

/** The window the sparklines of `history` span: 5m at first, up to 60m once the process ran that long. */
export function sparkSpanMs(history: readonly TopSample[]): number {
  const age = historySpanMs(history);
  return SPARK_SPANS_MS.find((s) => s >= age) ?? HISTORY_MS;
}

/**
 * `width` columns over the `spanMs` before the newest sample, each the latest value in its
 * slice of time (null: no sample there, a gap; before the history starts, blank).
 */
export function binned(
  history: readonly TopSample[],
  pick: (s: TopSample) => number | null,
  width: number,
  spanMs = SPARK_SPAN_MS,
): Array<number | null> {
  const last = history[history.length - 1];
  const out = new Array<number | null>(width).fill(null);
  if (!last) return out;
  const step = spanMs / width;
  const start = last.t - spanMs;
  for (const s of history) {
    const i = Math.min(width - 1, Math.floor((s.t - start) / step));
    if (i >= 0) out[i] = pick(s);
  }
  return out;
}

/**
 * A title naming the window (sparkSpanMs), then sparklines of the backlog and the two rates over it
 * (the newest at the right).
 */
export function sparkLines(history: readonly TopSample[], width: number): string[] {
  const label = 9;
  const value = 8;
  const w = Math.max(10, width - label - value - 2);
  const last = history[history.length - 1];
  const span = sparkSpanMs(history);
  const line = (name: string, pick: (s: TopSample) => number | null, v: string): string =>
    `${name.padEnd(label)}${sparkline(binned(history, pick, w, span), w)}  ${v}`;
  return [
    fit(`last ${formatDuration(span)} (history kept up to ${formatDuration(HISTORY_MS)})`, width),
    line('backlog', (s) => s.backlog, last ? formatCount(last.backlog) : dash),
    line('submit/s', (s) => s.submitRate, num(last?.submitRate ?? null, formatRate)),
    line('consume/s', (s) => s.consumeRate, num(last?.consumeRate ?? null, formatRate)),
  ];
}

interface Column {
  head: string;
  /** The `--sort` name of the column. */
  sort: SortColumn;
  width: number;
  cell: (r: TopTypeRow) => string;
}

/** Each column is at least one wider than its head: room for the sort mark (↓ or ↑) in front of it. */
const COLUMNS: Column[] = [
  {head: 'DUE', sort: 'due', width: 5, cell: (r) => formatCount(r.due)},
  {head: 'DELAY', sort: 'delay', width: 6, cell: (r) => formatCount(r.delayed)},
  // Parked is not a delay: held back by a pause, an open breaker, no handler or a limit.
  {head: 'PARKED', sort: 'parked', width: 7, cell: (r) => num(r.parked, formatCount)},
  {head: 'RUN', sort: 'run', width: 5, cell: (r) => formatCount(r.running)},
  {head: 'RATE/s', sort: 'rate', width: 7, cell: (r) => num(r.rate, formatRate)},
  {head: 'FAIL', sort: 'fail', width: 5, cell: (r) => num(r.failurePct, formatPct)},
  {head: 'P95', sort: 'p95', width: 5, cell: (r) => num(r.p95Ms, formatDuration)},
  // Closed is the normal state: "ok", so an OPEN breaker stands out in a 4-character column.
  {
    head: 'BRK',
    sort: 'brk',
    width: 4,
    cell: (r) => (r.breaker === null ? dash : r.breaker === 'closed' ? 'ok' : r.breaker === 'open' ? 'OPEN' : 'half'),
  },
  {head: 'PAUSE', sort: 'pause', width: 6, cell: (r) => (r.paused === null ? dash : r.paused ? 'yes' : 'no')},
  {head: 'DEAD', sort: 'dead', width: 5, cell: (r) => formatCount(r.dead)},
];

/** Columns given up, in this order, until the type name has MIN_TYPE_WIDTH characters. */
const DROP_ORDER = ['PAUSE', 'BRK', 'DELAY', 'P95', 'RUN'];
const MIN_TYPE_WIDTH = 14;

/**
 * A type's name in the table, with "!93% tenant:42" after it when one task key holds most of its
 * backlog (TopTypeRow.dominantKey). The key comes from a producer: the table clips it (printable).
 */
export function typeLabel(r: TopTypeRow): string {
  const d = r.dominantKey;
  return d === null ? r.type : `${r.type} !${sharePct(d.share).replace(' ', '')} ${d.key}`;
}

/**
 * The per-type table: a header line and one line per row, at most `width − 2` wide (the views put
 * a selection mark in front). Narrow terminals lose the PAUSE, BRK, DELAY, P95 and RUN columns
 * first. The head marks the sorted column with ↓ or ↑ (`sort`; none: the table is not sorted).
 */
export function typeTableLines(rows: readonly TopTypeRow[], width: number, sort?: TopSort): string[] {
  const room = (cols: Column[]): number => width - 2 - cols.reduce((n, c) => n + c.width + 1, 0);
  let cols = COLUMNS;
  for (const head of DROP_ORDER) if (room(cols) < MIN_TYPE_WIDTH) cols = cols.filter((c) => c.head !== head);
  const typeW = Math.max(8, room(cols));
  const line = (type: string, cells: string[]): string =>
    (clip(type, typeW).padEnd(typeW) + cells.map((c, i) => ' ' + c.padStart(cols[i]!.width)).join('')).slice(0, width - 2);
  const mark = (head: string, col: SortColumn): string => (sort?.column === col ? sortLabel(sort).slice(-1) + head : head);
  return [
    line(
      mark('TYPE', 'type'),
      cols.map((c) => mark(c.head, c.sort)),
    ),
    ...rows.map((r) =>
      line(
        typeLabel(r),
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

export const KEYS_LINE = 'q quit  ? help  ↑↓ Enter tasks  p pause  r replay  e errors  w workers  s sort';

export const HELP_LINES = [
  'Keys',
  '  ↑ ↓      select a type (a task in the tasks view)',
  "  Enter    the newest tasks of the selected type; Enter again: the selected task's timeline",
  '  Esc ⌫    back one level (timeline → tasks → table)',
  '  w        the workers: one line each (ax workers)',
  '  s / S    sort by the next column / reverse the order (also --sort)',
  '  p        pause or resume the selected type (asks y/N; audited, reason "ax top")',
  '  r        replay the dead tasks of the selected type (asks first)',
  '  e        the errors of the selected type (last 15m)',
  '  /        filter the types by name; Enter applies, Esc cancels',
  '  ?        this help',
  '  q        quit',
  '',
  'Columns: DUE ready to run · DELAY waiting for run_at or a retry (parked included)',
  'PARKED held back: paused, breaker open, no handler, or a limit · RUN running',
  'RATE/s attempts per second · FAIL failed or dead share · P95 attempt duration',
  "(local queue wait included; over the workers' last heartbeat interval)",
  'BRK breaker: ok (closed), OPEN, half (half-open) · PAUSE paused (— registry not read)',
  'TYPE !93% tenant:42: one task key holds that share of the backlog (ax types show <type>)',
  `Alert: P1 due > ${formatCount(BACKLOG_P1)} · P2 due > ${formatCount(BACKLOG_P2)} and growing for ${formatDuration(BACKLOG_GROWING_MS)}`,
];
