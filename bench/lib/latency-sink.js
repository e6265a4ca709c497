// Where the latency benchmark's handlers and the ax worker's claim trace leave their timestamps in
// the consumer's process (bench/latency.js reads them with the handle's `latencies()` RPC). One
// process-global store, so every importer (the handlers module, lib/consumers.js, lib/bullmq.js)
// writes to the same arrays. Times are `epochMs()`: sub-millisecond wall-clock milliseconds,
// comparable between processes on one machine.
const KEY = Symbol.for('ax.bench.latency');
const sink = (globalThis[KEY] ??= {starts: [], claims: []});

/** Wall-clock milliseconds with the resolution of performance.now(). */
export const epochMs = () => performance.timeOrigin + performance.now();

/** A handler started task `id` (payload `t` = its submit time, `n` = its number). */
export function recordStart(id, t, n) {
  sink.starts.push([String(id), t, epochMs(), n]);
}

/** The ax worker claimed task `id`: the tasksClaim call began at `call` and returned at `done`. */
export function recordClaim(id, call, done) {
  sink.claims.push([id, call, done]);
}

/** Returns {starts: [[id, t, start, n]], claims: [[id, call, done]]} recorded so far and forgets them. */
export function takeLatencies() {
  const r = {starts: sink.starts, claims: sink.claims};
  sink.starts = [];
  sink.claims = [];
  return r;
}
