#!/usr/bin/env node
// Micro-benchmark of the worker's Prometheus series (src/core/metrics/worker.ts): what the
// subscribers add per task (one task:claimed and one task:succeeded emit), next to prom-client's own
// labelled Counter.inc and Histogram.observe, which the hot series avoid (cell metrics, registry.ts).
//
//   npx tsc -p tsconfig.build.json && node bench/metrics.js [--quick]
//
// Prints ns per task (best of 5 rounds of N = 1,000,000; --quick 200,000) over 4 task types.
import {AxEvents} from '../dist/core/events.js';
import {MetricsRegistry} from '../dist/core/metrics/registry.js';
import {workerMetrics} from '../dist/core/metrics/worker.js';

const N = process.argv.includes('--quick') ? 200_000 : 1_000_000;
const types = ['order_notify', 'user_credit', 'mail_send', 'report_build'];
const best = (fn) => Math.min(...Array.from({length: 5}, fn));
const time = (loop) => {
  const t0 = process.hrtime.bigint();
  loop();
  return Number(process.hrtime.bigint() - t0) / N;
};

function perTask(on) {
  const ev = new AxEvents();
  if (on) workerMetrics(new MetricsRegistry({cell: 'c', processMetrics: false}), ev, {pools: () => [], held: () => 0});
  const claimed = ev.channel('task:claimed');
  const ok = ev.channel('task:succeeded');
  return time(() => {
    for (let i = 0; i < N; i++) {
      const type = types[i & 3];
      claimed.emit({id: 'x', type, attempt: 1, pool: 'io', lateMs: i % 50});
      ok.emit({id: 'x', type, attempt: 1, fence: 1, durationMs: i % 100});
    }
  });
}

function promClient() {
  const m = new MetricsRegistry({cell: 'c', processMetrics: false});
  const c = m.counter('bench_total', 'h', ['type', 'outcome']);
  const h = m.histogram('bench_seconds', 'h', ['type']);
  return {
    inc: time(() => {
      for (let i = 0; i < N; i++) c.inc({type: types[i & 3], outcome: 'succeeded'});
    }),
    observe: time(() => {
      for (let i = 0; i < N; i++) h.observe({type: types[i & 3]}, (i % 100) / 1000);
    }),
  };
}

const off = best(() => perTask(false));
const on = best(() => perTask(true));
const pc = promClient();
console.log(`| what | ns per task |
| --- | ---: |
| claimed + succeeded emits, no listener | ${off.toFixed(0)} |
| the same with the worker's metrics subscribed | ${on.toFixed(0)} |
| for comparison: prom-client Counter.inc with labels (one call) | ${pc.inc.toFixed(0)} |
| for comparison: prom-client Histogram.observe with labels (one call) | ${pc.observe.toFixed(0)} |`);
