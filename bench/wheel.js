#!/usr/bin/env node
// Micro-benchmark of the hashed timing wheel (src/core/timing/wheel.ts) against one setTimeout per
// task, in the same process and run.
//
//   cd /work/main && npx tsc -p tsconfig.build.json && node --expose-gc bench/wheel.js [--quick]
//
// Measures, with N pending timers (1,000,000; --quick 100,000):
//   - insert rate, cancel rate and heap bytes per pending timer, for the wheel with dues spread over
//     the next 100 s (mostly in the slots) and over the next hour (mostly in overflow chunks);
//   - ticks/s advancing tick by tick (100 ms) with N pending over an hour (~N/36,000 fire per tick),
//     and the rate of a bulk clock jump that fires everything left;
//   - setTimeout with the same dues: insert rate (setTimeout + Map id→handle, like the wheel's
//     cancel-by-id; and bare handles kept in an array), clearTimeout rate, heap bytes per timer.
// Bytes are process.memoryUsage().heapUsed deltas after forced GC. Ids and dues are created
// before the baseline, so they are not counted; values are undefined (a real caller's value object
// is extra). Timers are never allowed to fire (nothing yields to the event loop while they are pending).
//
// `runWheelBench({quick})` returns the numbers (and the Markdown table) for the main bench runner.
import os from 'node:os';
import v8 from 'node:v8';
import vm from 'node:vm';
import {fileURLToPath} from 'node:url';
import {TimingWheel} from '../dist/core/timing/wheel.js';

const HOUR = 3_600_000;
const TICK = 100;

/** global.gc, or one obtained at runtime when node was started without --expose-gc. */
function getGc() {
  if (typeof globalThis.gc === 'function') return globalThis.gc;
  try {
    v8.setFlagsFromString('--expose-gc');
    return vm.runInNewContext('gc');
  } catch {
    return undefined;
  }
}

/** mulberry32 */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffled(n, rnd) {
  const p = new Uint32Array(n);
  for (let i = 0; i < n; i++) p[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    const t = p[i];
    p[i] = p[j];
    p[j] = t;
  }
  return p;
}

export async function runWheelBench({quick = false, n: nOpt, ticks: ticksOpt, log = () => {}} = {}) {
  const n = nOpt ?? (quick ? 100_000 : 1_000_000);
  const tickSteps = ticksOpt ?? (quick ? 2_000 : 10_000);
  const gc = getGc();
  const heap = () => {
    if (!gc) return NaN;
    for (let i = 0; i < 3; i++) gc();
    return process.memoryUsage().heapUsed;
  };
  const rate = (count, ms) => (count / ms) * 1000;
  const start = 1_764_403_200_000; // a fixed "database clock" origin
  const rnd = prng(20261129);
  const ids = Array.from({length: n}, (_, i) => `task-${i.toString(36).padStart(6, '0')}`);
  for (const id of ids) id.charCodeAt(0); // flatten the strings before any baseline
  const duesNear = new Float64Array(n);
  const duesHour = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    duesNear[i] = start + 1 + Math.floor(rnd() * 100_000);
    duesHour[i] = start + 1 + Math.floor(rnd() * HOUR);
  }
  const order = shuffled(n, rnd);
  const noop = () => {};

  // Warm-up: JIT every path on a small set.
  {
    const m = Math.min(n, 20_000);
    const w = new TimingWheel({startMs: start});
    for (let i = 0; i < m; i++) w.schedule(ids[i], duesHour[i]);
    for (let t = start; t < start + 200 * TICK; t += TICK) w.advance(t);
    for (let i = 0; i < m; i += 2) w.cancel(ids[i]);
    w.advance(start + 2 * HOUR);
    const hs = [];
    for (let i = 0; i < m; i++) hs.push(setTimeout(noop, HOUR + i));
    for (const h of hs) clearTimeout(h);
  }

  const result = {n, tickSteps, tickMs: TICK, slots: 1024, gc: Boolean(gc), loadavg: os.loadavg().map((x) => Math.round(x * 100) / 100)};

  // 1. Wheel, dues over the next 100 s: insert, bytes, cancel (shuffled).
  {
    log('wheel, dues over 100 s …');
    const h0 = heap();
    const w = new TimingWheel({startMs: start});
    let t0 = performance.now();
    for (let i = 0; i < n; i++) w.schedule(ids[i], duesNear[i]);
    const insertMs = performance.now() - t0;
    const bytes = (heap() - h0) / n;
    t0 = performance.now();
    for (let i = 0; i < n; i++) w.cancel(ids[order[i]]);
    const cancelMs = performance.now() - t0;
    if (w.size !== 0) throw new Error('wheel not empty after cancelling everything');
    result.wheelNear = {insertPerSec: rate(n, insertMs), cancelPerSec: rate(n, cancelMs), bytesPerTimer: bytes};
  }

  // 2. Wheel, dues over the next hour: insert, bytes, ticks with N pending, bulk jump, cancel.
  {
    log('wheel, dues over 1 h …');
    const h0 = heap();
    const w = new TimingWheel({startMs: start});
    let t0 = performance.now();
    for (let i = 0; i < n; i++) w.schedule(ids[i], duesHour[i]);
    const insertMs = performance.now() - t0;
    const bytes = (heap() - h0) / n;
    let fired = 0;
    t0 = performance.now();
    for (let k = 1; k <= tickSteps; k++) fired += w.advance(start + k * TICK).length;
    const ticksMs = performance.now() - t0;
    // cancel a quarter of what is left (shuffled), then jump 2 h: everything left fires in bulk
    let cancelled = 0;
    t0 = performance.now();
    for (let i = 0; i < n; i += 4) if (w.cancel(ids[order[i]])) cancelled++;
    const cancelMs = performance.now() - t0;
    const left = w.size;
    const statsBefore = w.stats();
    t0 = performance.now();
    const jumped = w.advance(start + 2 * HOUR).length;
    const jumpMs = performance.now() - t0;
    if (jumped !== left || w.size !== 0) throw new Error(`jump fired ${jumped} of ${left}`);
    result.wheelHour = {
      insertPerSec: rate(n, insertMs),
      bytesPerTimer: bytes,
      ticksPerSec: rate(tickSteps, ticksMs),
      firedWhileTicking: fired,
      firedPerSecTicking: rate(fired, ticksMs),
      cancelPerSec: rate(cancelled, cancelMs),
      jumpFired: jumped,
      jumpMs,
      jumpFirePerSec: rate(jumped, jumpMs),
      jumpSlotVisits: w.stats().slotVisits - statsBefore.slotVisits,
    };
  }

  // 3. setTimeout per task with a Map id → handle (what cancel-by-id needs), dues over the next hour.
  {
    log('setTimeout + Map …');
    const h0 = heap();
    const handles = new Map();
    let t0 = performance.now();
    for (let i = 0; i < n; i++) handles.set(ids[i], setTimeout(noop, HOUR + (duesHour[i] - start)));
    const insertMs = performance.now() - t0;
    const bytes = (heap() - h0) / n;
    t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const id = ids[order[i]];
      clearTimeout(handles.get(id));
      handles.delete(id);
    }
    const clearMs = performance.now() - t0;
    result.setTimeoutMap = {insertPerSec: rate(n, insertMs), cancelPerSec: rate(n, clearMs), bytesPerTimer: bytes};
  }

  // 4. Bare setTimeout handles in an array (the lower bound: no lookup by id).
  {
    log('setTimeout bare …');
    const h0 = heap();
    const handles = new Array(n);
    let t0 = performance.now();
    for (let i = 0; i < n; i++) handles[i] = setTimeout(noop, HOUR + (duesHour[i] - start));
    const insertMs = performance.now() - t0;
    const bytes = (heap() - h0) / n;
    t0 = performance.now();
    for (let i = 0; i < n; i++) clearTimeout(handles[order[i]]);
    const clearMs = performance.now() - t0;
    result.setTimeoutBare = {insertPerSec: rate(n, insertMs), cancelPerSec: rate(n, clearMs), bytesPerTimer: bytes};
  }

  result.markdown = renderTable(result);
  return result;
}

const f0 = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '–');

function renderTable(r) {
  const {wheelNear: a, wheelHour: b, setTimeoutMap: c, setTimeoutBare: d} = r;
  const rows = [
    ['inserts/s', f0(a.insertPerSec), f0(b.insertPerSec), f0(c.insertPerSec), f0(d.insertPerSec)],
    ['cancels/s', f0(a.cancelPerSec), f0(b.cancelPerSec), f0(c.cancelPerSec), f0(d.cancelPerSec)],
    ['heap bytes / pending timer', f0(a.bytesPerTimer), f0(b.bytesPerTimer), f0(c.bytesPerTimer), f0(d.bytesPerTimer)],
    [`ticks/s (${TICK} ms ticks, ${f0(r.n)} pending)`, '', f0(b.ticksPerSec), '', ''],
    ['… entries fired/s while ticking', '', f0(b.firedPerSecTicking), '', ''],
    [
      `bulk jump +2 h: entries fired/s (${f0(b.jumpFired)} in ${f0(b.jumpMs)} ms, ${f0(b.jumpSlotVisits)} slot visits)`,
      '',
      f0(b.jumpFirePerSec),
      '',
      '',
    ],
  ];
  const head = `| N = ${f0(r.n)} | wheel, dues ≤ 100 s | wheel, dues over 1 h | setTimeout + Map id→handle | setTimeout, bare handles |`;
  const lines = [head, '| --- | ---: | ---: | ---: | ---: |', ...rows.map((x) => `| ${x.join(' | ')} |`)];
  lines.push('');
  lines.push(
    `Node ${process.version}, ${os.cpus().length} CPUs, load average ${r.loadavg.join(' ')} at start${r.gc ? '' : ' (no GC access: bytes not measured)'}; ` +
      `wheel: 1024 slots × ${TICK} ms; cancels for the 1 h wheel are a shuffled quarter of the ids after ticking; ` +
      'setTimeout delays are the same dues + 1 h (never fire). Heap bytes exclude the id strings; values are undefined.',
  );
  return lines.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const quick = process.argv.includes('--quick');
  const r = await runWheelBench({quick, log: (s) => process.stderr.write(`${s}\n`)});
  if (process.argv.includes('--json')) console.log(JSON.stringify({...r, markdown: undefined}, null, 2));
  console.log(r.markdown);
}
