// The consuming side of the end-to-end workloads, usable in-process or in a child process (see
// child.js): an ax worker built through ax's composition root, and the hand-built batched
// consumer of calibration (c). Both expose the same handle:
//   arm(n)       count completions from zero until n
//   done()       resolves {count} once n completions are durable
//   count()      completions since arm
//   stats()      counters (statements, rows, time in the store) since resetCounters()
//   latencies()  the latency benchmark's timestamps since the last call (lib/latency-sink.js)
//   resetCounters(), stop()
import amqp from 'amqplib';
import mysql from 'mysql2/promise';
import {orderedAcker} from './acks.js';
import {HAND_BUILT, bellIds, retrying} from './raw.js';
import {epochMs, recordClaim, takeLatencies} from './latency-sink.js';

function target() {
  let count = 0;
  let goal = Infinity;
  let waiters = [];
  return {
    arm(n) {
      count = 0;
      goal = n;
      waiters = [];
    },
    add(k) {
      count += k;
      if (count >= goal) for (const w of waiters.splice(0)) w({count});
    },
    done() {
      return count >= goal ? Promise.resolve({count}) : new Promise((r) => waiters.push(r));
    },
    get count() {
      return count;
    },
  };
}

/** Wraps `obj[method]` to count calls, items (by `size(args)`) and time spent. */
export function instrument(obj, method, counters, size, extra) {
  // A revision without this method (bench --compare against a tree from before a store rename): not counted.
  if (typeof obj[method] !== 'function') return;
  const orig = obj[method].bind(obj);
  obj[method] = async (...args) => {
    const c = (counters[method] ??= {calls: 0, items: 0, ms: 0});
    const t0 = performance.now();
    c.calls++;
    c.items += size(args);
    try {
      const r = await orig(...args);
      extra?.(c, r);
      return r;
    } finally {
      c.ms += performance.now() - t0;
    }
  };
}

/** Instruments the store/broker methods on ax's hot paths. */
export function instrumentAx(store, broker, counters) {
  instrument(store, 'tasksInsert', counters, (a) => a[0].tasks.length);
  instrument(store, 'doorbellsMark', counters, (a) => a[0].rung.length);
  instrument(store, 'doorbellsForget', counters, (a) => a[0].rung.length);
  instrument(
    store,
    'tasksClaim',
    counters,
    (a) => a[0].ids.length,
    (c, r) => (c.claimed = (c.claimed ?? 0) + r.claimed.length),
  );
  instrument(store, 'outcomesApply', counters, (a) => a[0].outcomes.length);
  instrument(store, 'leasesRenew', counters, (a) => a[0].held.length);
  instrument(store, 'tasksGet', counters, () => 1);
  instrument(broker, 'publish', counters, (a) => a[0].length);
}

/**
 * Records when each claim of a task of `type` was called and returned (lib/latency-sink.js), for
 * the latency benchmark's breakdown; tasks of other types cost one comparison each.
 */
function traceClaims(store, type) {
  if (typeof store.tasksClaim !== 'function') return;
  const orig = store.tasksClaim.bind(store);
  store.tasksClaim = async (...args) => {
    const call = epochMs();
    const r = await orig(...args);
    const done = epochMs();
    for (const t of r.claimed) if (t.type === type) recordClaim(t.id, call, done);
    return r;
  };
}

/** Config of a benchmark ax instance: defaults, except the servers, prefix, queue type and log level. */
export async function axConfig(overrides) {
  const {loadConfig} = await import('../../dist/core/config/config.js');
  return loadConfig({env: {}, cwd: '/nonexistent', overrides: {logLevel: 'warn', ...overrides}});
}

/** An ax worker (IO pool only, default sizing) over ax's own store and broker. */
export async function startAxWorker({overrides, handlersModule, workerId}) {
  const {createRuntime, openStore, openBroker} = await import('./ax.js');
  const {createWorkerService} = await import('../../dist/core/worker/service.js');
  const rt = createRuntime(await axConfig(overrides));
  const store = await openStore(rt);
  const broker = await openBroker(rt, {reconnect: false});
  const counted = {};
  instrumentAx(store, broker, counted);
  traceClaims(store, 'bench_latency');
  const worker = await createWorkerService({...rt, store, broker, handlersModule, pools: ['io'], workerId});
  await worker.start();
  const t = target();
  // `--compare` runs this harness against older revisions too: those have onOutcome, not events.
  if (worker.events) worker.events.on('task:succeeded', () => t.add(1));
  else
    worker.onOutcome((o) => {
      // `kind` since outcomes are keyed by transition; `to`/`release` in older trees.
      if (o.kind === 'complete' || (o.kind === undefined && o.to === 'succeeded' && !o.release)) t.add(1);
    });
  const base = () => ({...worker.stats});
  let statsAtReset = base();
  let metricsOff = null;
  // One registry for the worker's life, as in `ax worker`: prom-client's default collectors (GC
  // observer, event-loop monitor) cannot be stopped, so a registry per phase would pile them up.
  let reg = null;
  return {
    pid: process.pid,
    arm: (n) => t.arm(n),
    done: () => t.done(),
    count: () => t.count,
    resetCounters() {
      for (const k of Object.keys(counted)) delete counted[k];
      statsAtReset = base();
    },
    stats() {
      const now = base();
      const delta = {};
      for (const k of Object.keys(now)) delta[k] = now[k] - statsAtReset[k];
      return {inFlight: worker.inFlight, worker: delta, calls: JSON.parse(JSON.stringify(counted)), mem: process.memoryUsage().rss};
    },
    /**
     * `--metrics`: on, the worker's Prometheus series subscribe to its events (as `ax worker
     * --health-port` does) and the registry is rendered every second (a scrape, 15× Prometheus's
     * usual rate); off, both stop. Returns false in trees without src/core/metrics.
     */
    latencies: takeLatencies,
    async setMetrics(on) {
      metricsOff?.();
      metricsOff = null;
      if (!on) return true;
      const mod = await import('../../dist/core/metrics/worker.js').catch(() => null);
      if (!mod) return false;
      const {MetricsRegistry} = await import('../../dist/core/metrics/registry.js');
      reg ??= new MetricsRegistry({cell: rt.config.cell});
      const off = mod.workerMetrics(reg, worker.events, {pools: () => worker.poolStats(), held: () => worker.inFlight});
      const timer = setInterval(() => void reg.text(), 1000);
      metricsOff = () => (off(), clearInterval(timer));
      return true;
    },
    async stop() {
      metricsOff?.();
      await worker.stop(worker.events ? {graceMs: 5000} : 5000);
      await broker.close();
      await store.close();
    },
  };
}

/** Groups pushed items into batches of up to maxSize, or after maxWaitMs, `concurrency` at a time. */
export class Batcher {
  constructor({maxSize, maxWaitMs, concurrency, run}) {
    Object.assign(this, {maxSize, maxWaitMs, concurrency, run, items: [], running: 0, timer: null});
  }
  push(x) {
    this.items.push(x);
    if (this.items.length >= this.maxSize) this.kick(false);
    else
      this.timer ??= setTimeout(() => {
        this.timer = null;
        this.kick(true);
      }, this.maxWaitMs);
  }
  kick(partial) {
    while (this.running < this.concurrency && this.items.length > 0 && (partial || this.items.length >= this.maxSize)) {
      const batch = this.items.splice(0, this.maxSize);
      this.running++;
      this.run(batch)
        .catch((e) => console.error('hand-built batch failed:', e))
        .finally(() => {
          this.running--;
          this.kick(this.items.length > 0 && this.timer === null);
        });
    }
    if (this.items.length === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }
}

/**
 * The consumer half of calibration (c): consume with manual acks, claim the tasks of up to
 * `batch` ids' worth of deliveries with ONE `UPDATE … WHERE id IN (…) AND state='submitted'`
 * (autocommit), ack them, "run" the no-op, and complete up to `batch` with ONE grouped UPDATE.
 * Windows, statements in flight, prefetch and acking: `settings` (lib/raw.js HAND_BUILT).
 */
export async function startHandBuilt({mysqlUrl, amqpUrl, table, queue, settings = {}}) {
  const o = {...HAND_BUILT, ...settings};
  const batch = o.batch;
  const pool = mysql.createPool({uri: mysqlUrl, connectionLimit: o.connections, timezone: 'Z'});
  const conn = await amqp.connect(amqpUrl);
  const ch = await conn.createChannel();
  await ch.prefetch(o.prefetch);
  const acker = o.ackMultiple ? orderedAcker(ch) : null;
  const worker = `hand-built:${process.pid}`;
  const t = target();
  let counted = {};
  const note = (k, rows, ms) => {
    const c = (counted[k] ??= {calls: 0, items: 0, ms: 0});
    c.calls++;
    c.items += rows;
    c.ms += ms;
  };
  const complete = new Batcher({
    maxSize: batch,
    maxWaitMs: o.completeWaitMs,
    concurrency: o.inFlight,
    run: async (ids) => {
      const t0 = performance.now();
      const [r] = await retrying(
        () =>
          pool.query(
            `UPDATE \`${table}\` SET state = 'succeeded', lease_until = NULL, finished_at = NOW(3), updated_at = NOW(3) WHERE id IN (?) AND state = 'running'`,
            [ids],
          ),
        () => note('deadlockRetries', 1, 0),
      );
      note('complete', ids.length, performance.now() - t0);
      t.add(r.affectedRows);
    },
  });
  const claim = new Batcher({
    // Counted in messages: a batch of messages names up to `batch` ids.
    maxSize: Math.max(1, Math.round(batch / Math.max(1, o.idsPerMessage))),
    maxWaitMs: o.claimWaitMs,
    concurrency: o.inFlight,
    run: async (msgs) => {
      const ids = msgs.flatMap((m) => bellIds(m.content));
      const t0 = performance.now();
      const [r] = await retrying(
        () =>
          pool.query(
            `UPDATE \`${table}\` SET state = 'running', attempt = attempt + 1, fence = fence + 1, worker = ?,
                lease_until = NOW(3) + INTERVAL 30 SECOND, updated_at = NOW(3)
          WHERE id IN (?) AND state = 'submitted'`,
            [worker, ids],
          ),
        () => note('deadlockRetries', 1, 0),
      );
      note('claim', ids.length, performance.now() - t0);
      if (r.affectedRows !== ids.length) note('claimMissed', ids.length - r.affectedRows, 0);
      if (acker) acker.settle(msgs);
      else for (const m of msgs) ch.ack(m);
      for (const id of ids) complete.push(id); // the no-op "handler"
    },
  });
  await ch.consume(
    queue,
    (m) => {
      if (!m) return;
      acker?.received(m);
      claim.push(m);
    },
    {noAck: false},
  );
  return {
    pid: process.pid,
    arm: (n) => t.arm(n),
    done: () => t.done(),
    count: () => t.count,
    resetCounters() {
      counted = {};
    },
    stats: () => ({calls: counted, mem: process.memoryUsage().rss}),
    latencies: takeLatencies,
    async stop() {
      await ch.close().catch(() => undefined);
      await conn.close().catch(() => undefined);
      await pool.end().catch(() => undefined);
    },
  };
}

export const HANDLE_METHODS = ['arm', 'done', 'count', 'resetCounters', 'stats', 'stop', 'setMetrics', 'latencies'];

/** The consumers a child process (child.js) or the bench itself (--worker inproc) can start, by mode. */
export const CONSUMERS = {
  'ax-worker': startAxWorker,
  'hand-built': startHandBuilt,
  // Imported only when used: the BullMQ peer's drivers stay out of the other consumers.
  'bullmq-worker': async (o) => (await import('./bullmq.js')).startBullWorker(o),
};
