/**
 * A small time-series line chart drawn as SVG (no library): x by time, y from 0 to a round
 * maximum, one polyline per series, the legend and latest values as text beside it. Named by
 * `label` (aria-label and <title>); <desc> says the latest values for screen readers.
 */
import {clock} from '../format';

export interface Line {
  name: string;
  /** A CSS class giving its stroke colour (c-submitted, c-succeeded…). */
  cls: string;
  values: number[];
}

const W = 640;
const H = 170;
const L = 44;
const R = 8;
const T = 8;
const B = 20;

/** 1, 2, 5 × 10^n at or above `v` (at least 1). */
function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function axis(v: number): string {
  if (v >= 1000) return `${(v / 1000).toFixed(v >= 10_000 ? 0 : 1)}k`;
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

export function Chart({label, times, lines, unit}: {label: string; times: string[]; lines: Line[]; unit: string}) {
  const ts = times.map((t) => Date.parse(t));
  const t0 = ts[0] ?? 0;
  const t1 = ts[ts.length - 1] ?? t0;
  const span = Math.max(1, t1 - t0);
  const max = niceMax(Math.max(0, ...lines.flatMap((l) => l.values.filter(Number.isFinite))));
  const x = (t: number): number => L + ((t - t0) / span) * (W - L - R);
  const y = (v: number): number => T + (1 - Math.min(v, max) / max) * (H - T - B);
  const latest = lines.map((l) => `${l.name} ${axis(l.values[l.values.length - 1] ?? 0)}${unit}`).join(', ');
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={label}>
        <title>{label}</title>
        <desc>{ts.length === 0 ? 'no data yet' : `latest: ${latest}`}</desc>
        {[0, 0.5, 1].map((f) => (
          <g key={f}>
            <line className="grid" x1={L} x2={W - R} y1={y(max * f)} y2={y(max * f)} />
            <text className="tick" x={L - 4} y={y(max * f) + 4} textAnchor="end">
              {axis(max * f)}
            </text>
          </g>
        ))}
        {ts.length > 0 && (
          <>
            <text className="tick" x={L} y={H - 4} textAnchor="start">
              {clock(times[0] ?? '')}
            </text>
            <text className="tick" x={W - R} y={H - 4} textAnchor="end">
              {clock(times[times.length - 1] ?? '')}
            </text>
          </>
        )}
        {ts.length > 1 &&
          lines.map((l) => (
            <polyline
              key={l.name}
              className={`line ${l.cls}`}
              points={ts.map((t, i) => `${x(t).toFixed(1)},${y(l.values[i] ?? 0).toFixed(1)}`).join(' ')}
            />
          ))}
      </svg>
      <figcaption className="legend">
        {lines.map((l) => (
          <span key={l.name} className="legend-item">
            <span className={`swatch ${l.cls}`} aria-hidden="true" />
            {l.name} <strong>{ts.length ? `${axis(l.values[l.values.length - 1] ?? 0)}${unit}` : '—'}</strong>
          </span>
        ))}
      </figcaption>
    </figure>
  );
}
