/** Text for numbers, durations, sizes and times as the console shows them. Pure. */

const int = new Intl.NumberFormat('en-US');

export function num(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  return int.format(n);
}

/** Per-second rates: one decimal below 100, none above. */
export function rate(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  return `${n < 100 ? n.toFixed(1) : int.format(Math.round(n))}/s`;
}

/** A ratio 0..1 as a percentage. */
export function pct(r: number | null | undefined): string {
  if (r === null || r === undefined || !Number.isFinite(r)) return '—';
  return `${(r * 100).toFixed(r > 0 && r < 0.1 ? 1 : 0)}%`;
}

/** `850 ms`, `4.2 s`, `3 m 20 s`, `2 h 5 m`, `3 d 4 h`. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  const a = Math.abs(ms);
  if (a < 1000) return `${Math.round(ms)} ms`;
  if (a < 60_000) return `${(ms / 1000).toFixed(a < 10_000 ? 1 : 0)} s`;
  const s = Math.round(a / 1000);
  const sign = ms < 0 ? '-' : '';
  if (s < 3600) return `${sign}${Math.floor(s / 60)} m ${s % 60} s`;
  if (s < 86_400) return `${sign}${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} m`;
  return `${sign}${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** `12 s ago`, `in 3 m`, `just now` relative to `nowMs`. */
export function relative(iso: string, nowMs: number): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const d = t - nowMs;
  const a = Math.abs(d);
  if (a < 1000) return 'just now';
  let text: string;
  if (a < 60_000) text = `${Math.round(a / 1000)} s`;
  else if (a < 3_600_000) text = `${Math.round(a / 60_000)} min`;
  else if (a < 86_400_000) text = `${(a / 3_600_000).toFixed(a < 36_000_000 ? 1 : 0)} h`;
  else text = `${(a / 86_400_000).toFixed(a < 864_000_000 ? 1 : 0)} d`;
  return d < 0 ? `${text} ago` : `in ${text}`;
}

/** The absolute time for a title: local time with its zone, and the UTC ISO form. */
export function absolute(iso: string): string {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return iso;
  return `${t.toLocaleString(undefined, {dateStyle: 'medium', timeStyle: 'medium'})} (${t.toISOString()})`;
}

/** `HH:MM` local (24 h), for chart axes. */
export function clock(iso: string): string {
  const t = new Date(iso);
  return Number.isNaN(t.getTime()) ? '' : t.toLocaleTimeString(undefined, {hour: '2-digit', minute: '2-digit', hour12: false});
}

/** JSON as a pretty, indented text. */
export function pretty(v: unknown): string {
  try {
    return JSON.stringify(v, null, 2) ?? String(v);
  } catch {
    return String(v);
  }
}

/**
 * A submitted task that waits for parents or for its batch: ax keeps its run_at at year 9999 until
 * it is released (WAITING_RUN_AT in src/core/store/mysql/links.ts), as `ax tasks list` shows it.
 */
export function isWaiting(t: {state: string; runAt: string}): boolean {
  return t.state === 'submitted' && t.runAt.startsWith('9999-');
}
