/** Short numbers for live views (ax workers, ax top): rates, counts, percentages. */

/** `0`, `7.5`, `42`, `1.2k`, `35k`, `1.4M`. */
export function formatCount(n: number): string {
  const a = Math.abs(n);
  if (a >= 1e6) return `${(n / 1e6).toFixed(a >= 1e7 ? 0 : 1)}M`;
  if (a >= 1e3) return `${(n / 1e3).toFixed(a >= 1e4 ? 0 : 1)}k`;
  return String(Math.round(n));
}

/** A rate per second: one decimal below 10, then as formatCount. */
export function formatRate(r: number): string {
  if (r > 0 && r < 10) return r.toFixed(1);
  return formatCount(r);
}

/** A percentage: `0%`, `0.4%`, `12%`. */
export function formatPct(p: number): string {
  return p > 0 && p < 10 ? `${p.toFixed(1)}%` : `${Math.round(p)}%`;
}
