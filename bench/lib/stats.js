// Small statistics and formatting helpers for the benchmark report.

/** Median of numbers (mean of the two middle ones for an even count); NaN for none. */
export function median(xs) {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

/** {median, min, max, values} of a list of per-run figures. */
export function summary(xs) {
  const v = xs.filter((x) => Number.isFinite(x));
  return {median: median(v), min: v.length ? Math.min(...v) : NaN, max: v.length ? Math.max(...v) : NaN, values: xs};
}

/** Percentile (nearest rank) of a typed array sorted in place. */
export function percentiles(arr, ps) {
  arr.sort();
  const out = {};
  for (const p of ps) {
    const k = Math.min(arr.length - 1, Math.max(0, Math.ceil((p / 100) * arr.length) - 1));
    out[`p${String(p).replace('.', '_')}`] = arr.length ? arr[k] : NaN;
  }
  return out;
}

/** 12345.6 → "12,346"; small values keep a decimal or two. */
export function fmt(x, digits) {
  if (x === undefined || x === null || !Number.isFinite(x)) return '–';
  const d = digits ?? (Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : 2);
  return x.toLocaleString('en-US', {minimumFractionDigits: d, maximumFractionDigits: d});
}

/** "12,345 [11,900–12,800]" (or just the value for a single run). */
export function fmtSummary(s, digits) {
  if (!s || !Number.isFinite(s.median)) return '–';
  const n = s.values.filter((x) => Number.isFinite(x)).length;
  if (n <= 1) return fmt(s.median, digits);
  return `${fmt(s.median, digits)} [${fmt(s.min, digits)}–${fmt(s.max, digits)}]`;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Milliseconds from a monotonic clock (comparable between processes on Linux is not assumed). */
export const nowMs = () => performance.now();
