/**
 * The soak's pictures: memory of every process and submit→start latency over time, with the faults
 * shaded, drawn by gnuplot (Debian's gnuplot-nox, installed by scripts/tools.sh) into PNGs. The data
 * is written next to them as whitespace-separated columns, so a run can be re-plotted or compared.
 */
import {execFileSync} from 'node:child_process';
import {mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';

export interface Span {
  name: string;
  /** Seconds since the run started. */
  from: number;
  to: number;
}

export interface Series {
  title: string;
  /** [seconds since the run started, value] */
  points: Array<[number, number]>;
}

/** Draws `series` as lines against minutes, with `spans` shaded, into `dir/name.png` (and `name-N.dat`). */
export function plot(
  dir: string,
  name: string,
  o: {title: string; ylabel: string; logY?: boolean; series: Series[]; spans: Span[]},
): string {
  mkdirSync(dir, {recursive: true});
  const files = o.series.map((s, i) => {
    const f = join(dir, `${name}-${i}.dat`);
    writeFileSync(f, `# minutes ${s.title}\n${s.points.map(([t, v]) => `${(t / 60).toFixed(4)} ${v}`).join('\n')}\n`);
    return f;
  });
  const png = join(dir, `${name}.png`);
  const script = [
    'set terminal pngcairo size 1200,520 font "sans,10"',
    `set output '${png}'`,
    `set title ${JSON.stringify(o.title)}`,
    'set xlabel "minutes"',
    `set ylabel ${JSON.stringify(o.ylabel)}`,
    'set key outside right top',
    'set grid',
    o.logY ? 'set logscale y' : '',
    ...o.spans.map(
      (s, i) =>
        `set object ${i + 1} rect from ${(s.from / 60).toFixed(4)}, graph 0 to ${(s.to / 60).toFixed(4)}, graph 1 behind fc rgb "#f4c7c3" fs solid 0.5 noborder`,
    ),
    `plot ${files.map((f, i) => `'${f}' using 1:2 with lines lw 1.5 title ${JSON.stringify(o.series[i]!.title)}`).join(', ')}`,
  ].join('\n');
  execFileSync('gnuplot', [], {input: script});
  return png;
}
