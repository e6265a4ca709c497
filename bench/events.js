#!/usr/bin/env node
// Micro-benchmark of the event stream (src/core/events.ts): what one emit costs on the worker's hot
// path, next to the counter increment it replaced.
//
//   npx tsc -p tsconfig.build.json && node bench/events.js [--quick]
//
// Measures ns per operation (best of 5 rounds of N = 10,000,000; --quick 1,000,000) for:
//   - a plain counter increment (`stats.succeeded++`, what the worker did before);
//   - emit(name) with 0 listeners on an emitter that has seen several names (a lookup by name);
//   - channel.emit (what the worker calls per task) with 0 listeners, the event object built at the
//     call, and with a preallocated event (the emitter's own cost);
//   - channel.emit with 1 listener (a counter: the stats subscriber) and 3 listeners (stats, a
//     per-type map counter and a filter like the failure logger's);
//   - has() guarding the build of an event (the producer's task:submitted, once per batch).
// And the heap growth per emit with 0 listeners (heapUsed delta over N emits), to check there is no
// allocation beyond the event object. Prints a Markdown table.
import {AxEvents} from '../dist/core/events.js';

const quick = process.argv.includes('--quick');
const N = quick ? 1_000_000 : 10_000_000;
const ROUNDS = 5;
const types = ['order_notify', 'user_register_credit', 'report_build'];
const NAMES = [
  'task:claimed',
  'task:succeeded',
  'task:failed',
  'task:dead',
  'task:released',
  'outcome:stale',
  'doorbell:stale',
  'lease:lost',
];

function best(fn) {
  let min = Infinity;
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = process.hrtime.bigint();
    fn();
    min = Math.min(min, Number(process.hrtime.bigint() - t0) / N);
  }
  return min;
}

/** An emitter that has seen many names and listeners, as a worker's has (no monomorphic luck). */
function busyEmitter() {
  const ev = new AxEvents();
  for (const n of NAMES) {
    const off = ev.on(n, () => undefined);
    ev.emit(n, {});
    ev.channel(n).emit({});
    off();
  }
  return ev;
}

let sink = 0;
const rows = [];
const stats = {succeeded: 0};
rows.push([
  'counter increment (before)',
  best(() => {
    for (let i = 0; i < N; i++) stats.succeeded++;
  }),
]);
{
  const ev = busyEmitter();
  const ch = ev.channel('task:succeeded');
  rows.push([
    'emit(name), 0 listeners, event built at the call',
    best(() => {
      for (let i = 0; i < N; i++) ev.emit('task:succeeded', {id: 'x', type: types[i % 3], attempt: 1, durationMs: i});
    }),
  ]);
  rows.push([
    'channel.emit, 0 listeners, event built at the call',
    best(() => {
      for (let i = 0; i < N; i++) ch.emit({id: 'x', type: types[i % 3], attempt: 1, durationMs: i});
    }),
  ]);
  const e = {id: 'x', type: 'order_notify', attempt: 1, durationMs: 1};
  rows.push([
    'channel.emit, 0 listeners, preallocated event',
    best(() => {
      for (let i = 0; i < N; i++) ch.emit(e);
    }),
  ]);
  rows.push([
    'has(name) guard, 0 listeners',
    best(() => {
      for (let i = 0; i < N; i++) if (ev.has('task:submitted')) ev.emit('task:submitted', {type: types[i % 3], count: i});
    }),
  ]);
}
{
  const ev = busyEmitter();
  const ch = ev.channel('task:succeeded');
  ev.on('task:succeeded', () => stats.succeeded++);
  rows.push([
    'channel.emit, 1 listener (the stats counter)',
    best(() => {
      for (let i = 0; i < N; i++) ch.emit({id: 'x', type: types[i % 3], attempt: 1, durationMs: i});
    }),
  ]);
  const perType = new Map();
  ev.on('task:succeeded', (e) => perType.set(e.type, (perType.get(e.type) ?? 0) + 1));
  ev.on('task:succeeded', (e) => {
    if (e.attempt > 5) sink++;
  });
  rows.push([
    'channel.emit, 3 listeners (counter, per-type map, filter)',
    best(() => {
      for (let i = 0; i < N; i++) ch.emit({id: 'x', type: types[i % 3], attempt: 1, durationMs: i});
    }),
  ]);
}
let bytesPerEmit;
{
  const ch = busyEmitter().channel('task:succeeded');
  const e = {id: 'x', type: 'order_notify', attempt: 1, durationMs: 1};
  for (let i = 0; i < N; i++) ch.emit(e); // warm up
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < N; i++) ch.emit(e);
  bytesPerEmit = (process.memoryUsage().heapUsed - before) / N;
}

console.log(`| operation (N = ${N.toLocaleString('en')}, best of ${ROUNDS}) | ns per op |`);
console.log('| --- | ---: |');
for (const [name, ns] of rows) console.log(`| ${name} | ${ns.toFixed(2)} |`);
console.log(`\nheap growth per emit with 0 listeners and a preallocated event: ${bytesPerEmit.toFixed(4)} bytes`);
console.log(`node ${process.version}; (sink ${sink + stats.succeeded > 0 ? 'ok' : '0'})`);
