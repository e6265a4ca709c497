// The BullMQ peer of the benchmark suite (the non-durable scheduler the goals compare ax with):
// a BullMQ Worker as a consumer handle (same methods as lib/consumers.js, so it runs in a child
// process like ax's worker) and a producer that adds jobs with addBulk. Only bench/ uses bullmq and
// ioredis (dev dependencies). BullMQ runs against the local Redis, which the suite starts without
// persistence (scripts/redis.sh: --save "" --appendonly no): nothing it does is durable.
//
// Settings, chosen as a production deployment would (and as fast as BullMQ's design allows):
//   - jobs added with Queue.addBulk in batches of `batch` (default 500), `inFlight` batches at once
//     (default 2: a MULTI pipeline of addStandardJob scripts per batch, like ax's 500-row INSERT);
//   - Worker concurrency as the workload says (50, 500, 1000); BullMQ fetches the next job in the
//     same script that completes the previous one (moveToFinished), so there is nothing to tune;
//   - removeOnComplete {count: 1000}, removeOnFail {count: 5000} (BullMQ's docs' advice: keep a
//     bounded tail; keeping every job would grow Redis and slow the sorted-set writes);
//   - metrics off (the default), stalled-job check at its default (30 s; a production keeps it);
//   - no QueueEvents listener: completions are counted from the Worker's local 'completed' event.
//     BullMQ's Lua scripts always XADD to the queue's event stream (it cannot be switched off);
//     `streams.events.maxLen` keeps it short (default 10,000; we use 1,000).
import {createRequire} from 'node:module';
import {recordStart, takeLatencies} from './latency-sink.js';

const require = createRequire(import.meta.url);
// bullmq's ESM build imports directories (unsupported by Node's ESM loader): use its CommonJS build.
const {Queue, Worker} = require('bullmq');

export const REDIS_URL = process.env.AX_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** ioredis options for BullMQ: workers need maxRetriesPerRequest null (blocking commands). */
export function connection(url = REDIS_URL) {
  const u = new URL(url);
  return {host: u.hostname, port: Number(u.port || 6379), maxRetriesPerRequest: null, enableOfflineQueue: true};
}

export const JOB_DEFAULTS = {removeOnComplete: {count: 1000}, removeOnFail: {count: 5000}};

/** Redis's version and durability settings, for the report's environment table. */
export async function redisManifest(url = REDIS_URL) {
  const {Redis} = require('ioredis');
  const r = new Redis({...connection(url), lazyConnect: true});
  try {
    await r.connect();
    const info = await r.info('server');
    const [, appendonly] = await r.config('GET', 'appendonly');
    const [, save] = await r.config('GET', 'save');
    return {version: /redis_version:(\S+)/.exec(info)?.[1] ?? '?', appendonly, save};
  } finally {
    r.disconnect();
  }
}

/** A BullMQ Queue (producer side) for `name` under key prefix `prefix`. */
export function openQueue(name, prefix, url) {
  return new Queue(name, {connection: connection(url), prefix, defaultJobOptions: JOB_DEFAULTS, streams: {events: {maxLen: 1000}}});
}

/**
 * Adds `n` jobs named `jobName` with data {n: i, ...data} to `queue`: addBulk of `batch` jobs,
 * `inFlight` batches at once. Resolves when every addBulk has returned (the jobs are in Redis).
 */
export async function bullProduce(queue, n, {jobName = 'noop', data = {}, batch = 500, inFlight = 2} = {}) {
  let next = 0;
  const lane = async () => {
    while (next < n) {
      const lo = next;
      const hi = Math.min(n, lo + batch);
      next = hi;
      const jobs = new Array(hi - lo);
      for (let i = lo; i < hi; i++) jobs[i - lo] = {name: jobName, data: {n: i, ...data}};
      await queue.addBulk(jobs);
    }
  };
  await Promise.all(Array.from({length: inFlight}, lane));
}

/** Empties and deletes the queue's keys in Redis (drain + obliterate), then closes it. */
export async function destroyQueue(queue) {
  await queue.obliterate({force: true}).catch(() => undefined);
  await queue.close().catch(() => undefined);
}

/**
 * A BullMQ Worker on queue `name` as a consumer handle (arm/done/count/resetCounters/stats/stop).
 * The processor sleeps `data.ms` when the job carries it (the P4 peer), otherwise does nothing; a
 * job whose data carries a submit time `t` (bench/latency.js) has its start recorded first.
 * Each job's `data.n` is marked in a bitmap so a job processed twice shows as a duplicate.
 */
export async function startBullWorker({name, prefix, url, concurrency}) {
  let seen = new Uint8Array(0);
  let duplicates = 0;
  let processed = 0;
  let count = 0;
  let goal = Infinity;
  let waiters = [];
  const worker = new Worker(
    name,
    async (job) => {
      if (typeof job.data.t === 'number') recordStart(job.id, job.data.t, job.data.n);
      const i = job.data.n;
      if (i < seen.length) {
        if (seen[i]) duplicates++;
        seen[i] = 1;
      }
      processed++;
      if (job.data.ms) await new Promise((r) => setTimeout(r, job.data.ms));
    },
    {connection: connection(url), prefix, concurrency, ...JOB_DEFAULTS, autorun: true},
  );
  worker.on('completed', () => {
    if (++count >= goal) for (const w of waiters.splice(0)) w({count});
  });
  worker.on('error', (e) => console.error('bullmq worker error:', e?.message ?? e));
  await worker.waitUntilReady();
  return {
    pid: process.pid,
    arm(n) {
      count = 0;
      goal = n;
      waiters = [];
      seen = new Uint8Array(n);
      duplicates = 0;
      processed = 0;
    },
    done: () => (count >= goal ? Promise.resolve({count}) : new Promise((r) => waiters.push(r))),
    count: () => count,
    resetCounters() {},
    latencies: takeLatencies,
    stats: () => ({processed, duplicates, inFlight: processed - count, mem: process.memoryUsage().rss}),
    async stop() {
      await worker.close();
    },
  };
}
