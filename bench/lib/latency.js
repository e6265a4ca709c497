// Helpers of the latency benchmark (bench/latency.js): the open-loop schedule, the producer-side
// trace of ax's store and broker calls, the per-step breakdown, and the Markdown section.
import {epochMs} from './latency-sink.js';
import {fmt, fmtSummary, percentiles, sleep, summary} from './stats.js';

/**
 * Calls `submit(i, t)` for i = 0 … round(rate·seconds) − 1 on an open-loop schedule: task i is due
 * at t0 + i/rate and a timer loop calls `submit` for every task that is due, without waiting for
 * earlier calls to settle, so a slow call shifts nothing after it (no coordinated omission). `t` is
 * task i's due time in epochMs(); the call itself comes `lag` later (the timer's granularity, the
 * event loop's own stalls). Resolves once every call has settled with
 * {n, t0: t of task 0, lagMs: {p50, p99, max}, errors, firstError}.
 */
export async function openLoop(rate, seconds, submit) {
  const n = Math.round(rate * seconds);
  const interval = 1000 / rate;
  const t0 = performance.now() + 5;
  const lag = new Float64Array(n);
  const calls = [];
  let errors = 0;
  let firstError;
  const failed = (e) => {
    errors++;
    firstError ??= String(e?.message ?? e);
  };
  for (let i = 0; i < n;) {
    for (let now = performance.now(); i < n && t0 + i * interval <= now; i++, now = performance.now()) {
      const due = t0 + i * interval;
      lag[i] = now - due;
      try {
        calls.push(Promise.resolve(submit(i, performance.timeOrigin + due)).catch(failed));
      } catch (e) {
        failed(e);
      }
    }
    if (i < n) await sleep(Math.max(0, t0 + i * interval - performance.now()));
  }
  await Promise.all(calls);
  const p = percentiles(lag, [50, 99, 100]);
  return {n, t0: performance.timeOrigin + t0, lagMs: {p50: p.p50, p99: p.p99, max: p.p100}, errors, firstError};
}

/** {n, min, p50, p90, p99, max} of a list of milliseconds (NaNs left out). */
export function dist(values) {
  const a = Float64Array.from(values.filter((x) => Number.isFinite(x)));
  const p = percentiles(a, [0, 50, 90, 99, 100]);
  return {n: a.length, min: p.p0, p50: p.p50, p90: p.p90, p99: p.p99, max: p.p100};
}

/**
 * Wraps the producer's store.tasksInsert and broker.publish to record, per task id, when the call
 * that carried it began and returned (epochMs). Records only while `on`; `take()` returns the Map
 * id → {insertCall, insertDone, publishCall, publishDone} and starts a new one. A task written by
 * several calls (a retried batch) keeps the last call's times.
 */
export function traceProducer(store, broker) {
  const t = {on: false, byId: new Map()};
  const wrap = (obj, method, idsOf, call, done) => {
    if (typeof obj[method] !== 'function') return;
    const orig = obj[method].bind(obj);
    obj[method] = async (...args) => {
      if (!t.on) return orig(...args);
      const at = epochMs();
      const r = await orig(...args);
      const end = epochMs();
      for (const id of idsOf(args)) {
        let e = t.byId.get(id);
        if (!e) t.byId.set(id, (e = {}));
        e[call] = at;
        e[done] = end;
      }
      return r;
    };
  };
  wrap(store, 'tasksInsert', (a) => a[0].tasks.map((x) => x.id), 'insertCall', 'insertDone');
  wrap(broker, 'publish', (a) => a[0].map((m) => m.id), 'publishCall', 'publishDone');
  return {
    set on(v) {
      t.on = v;
    },
    take() {
      const m = t.byId;
      t.byId = new Map();
      return m;
    },
  };
}

/** The steps of ax's submit → start, each from the end of the one before (they add up to the total). */
export const STEPS = [
  ['buffer', 'submit → tasksInsert call (the producer buffer)'],
  ['insert', 'tasksInsert: INSERT + COMMIT'],
  ['publish', 'tasksInsert returned → broker.publish confirmed'],
  ['delivery', 'publish confirmed → tasksClaim call (delivery, claim batching)'],
  ['claim', 'tasksClaim: the claim transaction'],
  ['start', 'tasksClaim returned → handler start'],
];

/**
 * Per-step times of ax's samples, pooled over `parts` ([{samples, producer, claims}], one per
 * measurement): each sample ([id, t, start]) is joined with the producer trace (traceProducer's
 * Map) and the worker's claim trace ([[id, call, done]]). Returns {traced, untraced, steps: {step:
 * dist}}. A step can be negative: a delivery may reach the worker before the confirm reaches us.
 */
export function breakdown(parts) {
  const out = Object.fromEntries(STEPS.map(([k]) => [k, []]));
  let traced = 0;
  let untraced = 0;
  for (const {samples, producer, claims} of parts) {
    const claimOf = new Map(claims.map(([id, call, done]) => [id, {call, done}]));
    for (const [id, t, start] of samples) {
      const p = producer.get(id);
      const c = claimOf.get(id);
      if (!p?.publishDone || !c) {
        untraced++;
        continue;
      }
      traced++;
      const marks = [t, p.insertCall, p.insertDone, p.publishDone, c.call, c.done, start];
      STEPS.forEach(([k], i) => out[k].push(marks[i + 1] - marks[i]));
    }
  }
  return {traced, untraced, steps: Object.fromEntries(Object.entries(out).map(([k, v]) => [k, dist(v)]))};
}

const KEYS = ['p50', 'p90', 'p99', 'max'];

/** The Markdown section of a runLatencyBench result (see bench/latency.js). */
export function renderLatency(r) {
  const runs = r.runs.length;
  const sum = (f) => summary(r.runs.map(f));
  const cell = (f, d) => fmtSummary(sum(f), d);
  const lines = [
    `### Latency (P10): submit → handler start, ${r.seconds} s per rate, ${runs} run(s)`,
    '',
    `Open-loop schedule (task i due at t0 + i/rate; the latency runs from the due time); the first ${r.warmupMs / 1000} s of each rate left out. ` +
      `ax: SDK client.submit() per task in the bench, worker (io pool, default settings) in a child process; ` +
      `BullMQ: Queue.add per job, Worker concurrency ${r.bullConcurrency} in a child process, Redis without persistence. ` +
      `Durable floor: the raw drivers in the bench process, one autocommit INSERT, one publish awaited for its confirm (quorum), ` +
      `on delivery one autocommit claim UPDATE (bench/lib/latency-raw.js): the fewest durable steps, a bound from below ` +
      `(at rates up to 200/s: per-row statements and confirms saturate near 2,000/s). ` +
      `Milliseconds, median [min–max] over runs.`,
    '',
    '| rate | system | tasks | p50 | p90 | p99 | max | schedule lag max | goal |',
    '| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  for (const rate of r.rates) {
    const goal = r.goals[rate] ? `p50 ≤ ${r.goals[rate].p50}, p99 ≤ ${r.goals[rate].p99}` : '';
    for (const [sys, label] of [
      ['ax', 'ax'],
      ['bullmq', 'BullMQ'],
      ['raw', 'durable floor (raw drivers)'],
    ]) {
      if (!r.runs.every((x) => x[sys]?.[rate])) continue;
      const at = (x) => x[sys][rate];
      lines.push(
        `| ${fmt(rate, 0)}/s | ${label} | ${cell((x) => at(x).latency.n, 0)} | ${KEYS.map((k) => cell((x) => at(x).latency[k])).join(' | ')} | ${cell((x) => at(x).schedule.lagMs.max)} | ${sys === 'ax' ? goal : ''} |`,
      );
    }
    const ratio = (k) => cell((x) => x.ax[rate].latency[k] / x.bullmq[rate].latency[k]);
    lines.push(`| ${fmt(rate, 0)}/s | ax ÷ BullMQ | | ${ratio('p50')} | | ${ratio('p99')} | | | |`);
    if (r.runs.every((x) => x.raw?.[rate])) {
      const floor = (k) => cell((x) => x.ax[rate].latency[k] / x.raw[rate].latency[k]);
      lines.push(`| ${fmt(rate, 0)}/s | ax ÷ durable floor | | ${floor('p50')} | | ${floor('p99')} | | | |`);
    }
  }
  const o = r.runs.map((x) => x.outbox).filter(Boolean);
  if (o.length > 0) {
    const oc = (f, d) => fmtSummary(summary(o.map(f)), d);
    lines.push(
      '',
      `Outbox: rows INSERTed (autocommit) into task_outbox at ${r.outboxRate}/s, one ax relay (default settings) in the bench, the same ax worker. ` +
        'commit → start runs from the moment the INSERT returned; INSERT → start from its call (the payload’s `t`, set before the INSERT).',
      '',
      '| outbox at 100/s | rows | p50 | p90 | p99 | max |',
      '| --- | ---: | ---: | ---: | ---: | ---: |',
      `| commit → start | ${oc((x) => x.commitToStart.n, 0)} | ${KEYS.map((k) => oc((x) => x.commitToStart[k])).join(' | ')} |`,
      `| INSERT call → start | ${oc((x) => x.insertToStart.n, 0)} | ${KEYS.map((k) => oc((x) => x.insertToStart[k])).join(' | ')} |`,
    );
  }
  for (const rate of r.rates) {
    const b = r.breakdown[rate];
    if (!b) continue;
    lines.push(
      '',
      `Where ax's time goes at ${fmt(rate, 0)}/s (${fmt(b.traced, 0)} tasks of all runs traced${b.untraced ? `, ${fmt(b.untraced, 0)} not (no producer publish or claim seen)` : ''}; ms):`,
      '',
      '| step | p50 | p99 |',
      '| --- | ---: | ---: |',
      ...STEPS.map(([k, label]) => `| ${label} | ${fmt(b.steps[k].p50)} | ${fmt(b.steps[k].p99)} |`),
      `| sum of the p50s | ${fmt(STEPS.reduce((s, [k]) => s + b.steps[k].p50, 0))} | |`,
    );
  }
  lines.push(
    '',
    'Schedule lag: how late the bench made a call (call − due time; included in the figures): timer granularity, and stalls of the ' +
      'bench process’s event loop, where ax’s producer and BullMQ’s Queue run.',
  );
  const failures = r.runs
    .flatMap((x) => Object.values(x.ax).concat(Object.values(x.bullmq), Object.values(x.raw ?? {}), x.outbox ?? []))
    .filter((m) => m.error);
  for (const f of failures) lines.push(`- **${f.label} failed**: ${f.error}`);
  return lines.join('\n');
}
