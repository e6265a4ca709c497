// The peer workloads of the suite, run in every round of bench/run.js next to ax's own:
//   bullmq.c50, bullmq.c500  BullMQ add + process together, no-op jobs, Worker concurrency 50 / 500
//                            (N jobs, as P1; paired with P1 of the headline queue type);
//   p4                       ax: N4 handlers that await 200 ms, IO pool of 1000, first submit → last
//                            succeeded (goal ≥ 0.9 × 1000 / 200 ms = 4,500/s);
//   bullmq.p4                BullMQ: the same 200 ms jobs at Worker concurrency 1000.
// Each consumer runs in its own child process (like ax's worker), so its CPU is measured apart.
// BullMQ runs on Redis WITHOUT persistence (scripts/redis.sh): its figures are those of a
// non-durable queue; ax's are durable (fsync per commit, confirmed persistent messages).
// Settings and reasons: bench/lib/bullmq.js and docs/benchmarks.md.
import {execFileSync} from 'node:child_process';
import {join} from 'node:path';
import {bullProduce, destroyQueue, openQueue, redisManifest} from './lib/bullmq.js';
import {summary} from './lib/stats.js';

export const P4_MS = 200;
export const P4_CONCURRENCY = 1000;
export const P4_IDEAL = (P4_CONCURRENCY * 1000) / P4_MS;
const BULL_CONCURRENCY = [50, 500];

/**
 * Starts the peers' consumers and returns the workloads to run in every round, in order:
 * [{key, only, label, unit, run(n, round) → result, line(result) → string}]. `ctx` holds run.js's
 * options and helpers (see there). `want(only)` says which of 'bullmq' and 'p4' the run selected.
 */
export async function createPeers(ctx, want) {
  const {tag, log, root, rate} = ctx;
  const workloads = [];
  const wantBull = want('bullmq');
  const wantP4 = want('p4');
  if (!wantBull && !wantP4) return workloads;

  // Redis for BullMQ: the local one is started (without persistence) when it is down; another one
  // (AX_BENCH_REDIS_URL) must be up.
  if (!process.env.AX_BENCH_REDIS_URL) execFileSync('bash', [join(root, 'scripts', 'redis.sh')], {stdio: ['ignore', 'ignore', 'inherit']});
  ctx.manifest.redis = await redisManifest();
  const prefix = `${tag}_bull`;
  const bull = {};
  const startBull = async (key, concurrency) => {
    const name = `q_${key}`;
    const queue = openQueue(name, prefix);
    await queue.waitUntilReady();
    ctx.cleanups.push(() => destroyQueue(queue));
    const worker = await ctx.startConsumer('bullmq-worker', {name, prefix, concurrency}, `BullMQ worker (${key})`);
    bull[key] = {queue, worker, concurrency};
  };

  async function wBull(key, n, data = {}) {
    const {queue, worker} = bull[key];
    await worker.arm(n);
    await ctx.settle();
    const meter = await ctx.startMeter(worker, {servers: ['redis-server']});
    const t0 = performance.now();
    await bullProduce(queue, n, {data});
    const tAdded = performance.now();
    const d = await ctx.waitDone(worker, n);
    const t1 = performance.now();
    const cpu = await meter.stop();
    const st = await worker.stats();
    return {
      value: d.ok ? rate(n, t1 - t0) : NaN,
      ms: t1 - t0,
      addRate: rate(n, tAdded - t0),
      n,
      ok: d.ok && st.duplicates === 0,
      error: d.error ?? (st.duplicates ? `${st.duplicates} job(s) processed twice` : undefined),
      duplicates: st.duplicates,
      worker: st,
      cpu,
      cpuPerItem: ctx.perItem(cpu, n),
    };
  }

  if (wantBull) {
    for (const c of BULL_CONCURRENCY) {
      await startBull(`c${c}`, c);
      workloads.push({
        key: `bullmq.c${c}`,
        label: `BullMQ add + process, concurrency ${c} (Redis without persistence)`,
        unit: 'jobs/s',
        run: (n) => wBull(`c${c}`, n),
        line: (r) => `; addBulk alone ${Math.round(r.addRate)} jobs/s; duplicates ${r.duplicates}`,
      });
    }
  }

  if (wantP4) {
    const ax = await ctx.startAxProducer('quorum', `${tag}_p4`);
    const worker = await ctx.startConsumer(
      'ax-worker',
      {overrides: {...ax.overrides, ioConcurrency: P4_CONCURRENCY}, handlersModule: ctx.handlers, workerId: 'bench-worker-p4'},
      'ax worker (P4, IO pool 1000)',
    );
    await startBull('p4', P4_CONCURRENCY);
    const p4N = (round) => (round === 0 ? Math.min(ctx.opts.warmupN, ctx.opts.p4N) : ctx.opts.p4N);
    const wP4 = async (n) => {
      await ctx.truncate('tasks', 'task_history');
      await ctx.purge(ax.queue);
      ax.resetCounters();
      await worker.arm(n);
      await worker.resetCounters();
      const ids = new Array(n);
      await ctx.settle();
      const meter = await ctx.startMeter(worker);
      const t0 = performance.now();
      for (let i = 0; i < n; i++) ids[i] = await ax.client.submit({type: 'bench_sleep', payload: {n: i, ms: P4_MS}});
      await ax.client.flush();
      const tFlushed = performance.now();
      const d = await ctx.waitDone(worker, n);
      const t1 = performance.now();
      const cpu = await meter.stop();
      const check = await ctx.correctness(ids);
      return {
        value: d.ok ? rate(n, t1 - t0) : NaN,
        ms: t1 - t0,
        flushedAtMs: tFlushed - t0,
        n,
        ok: d.ok,
        error: d.error,
        correctness: check,
        worker: await worker.stats(),
        cpu,
        cpuPerItem: ctx.perItem(cpu, n),
      };
    };
    const p4 = {
      key: 'p4',
      label: `P4 ax, ${P4_MS} ms handlers, IO pool ${P4_CONCURRENCY}`,
      unit: 'tasks/s',
      run: (n, round) => wP4(p4N(round)),
      line: (r) =>
        `; ${(r.value / P4_IDEAL).toFixed(2)}× the ideal ${P4_IDEAL}/s; lost ${r.correctness.lost}, duplicates ${r.correctness.duplicates}`,
    };
    const bullP4 = {
      key: 'bullmq.p4',
      label: `BullMQ ${P4_MS} ms jobs, concurrency ${P4_CONCURRENCY}`,
      unit: 'jobs/s',
      run: (n, round) => wBull('p4', p4N(round), {ms: P4_MS}),
      line: (r) => `; ${(r.value / P4_IDEAL).toFixed(2)}× the ideal; duplicates ${r.duplicates}`,
    };
    // Alternating order: ax first in odd rounds, BullMQ first in even ones (drifts hit both alike).
    workloads.push({...p4, order: 1}, {...bullP4, order: 2});
  }
  log(`peers: ${workloads.map((w) => w.key).join(', ')} (BullMQ keys under prefix ${prefix})`);
  return workloads;
}

/** The peers' workloads of one round, in the order that round runs them (P4 pair swapped in even rounds). */
export function roundOrder(workloads, round) {
  const pair = workloads.filter((w) => w.order);
  const rest = workloads.filter((w) => !w.order);
  return [...rest, ...(round % 2 === 1 ? pair : [...pair].reverse())];
}

/** Summary entries of the peers (medians; ratios paired per round). `paired(num, den, f)` is run.js's. */
export function summarizePeers(results, paired, headline) {
  const s = {};
  const series = (key, f = (r) => r.value) => summary((results[key] ?? []).map(f));
  const p1 = `p1.${headline}`;
  for (const c of BULL_CONCURRENCY) {
    const k = `bullmq.c${c}`;
    if (!results[k]) continue;
    s[k] = series(k);
    s[`${k}.cpuTotal`] = series(k, (r) => r.cpuPerItem.total);
    s[`ratio.${p1}/${k}`] = summary(paired(p1, k));
  }
  if (results['bullmq.c50'] && results['bullmq.c500']) {
    // P1 against BullMQ's better concurrency of the same round.
    const best = (results['bullmq.c50'] ?? []).map((r, i) => Math.max(r.value, results['bullmq.c500'][i]?.value ?? NaN));
    s['bullmq.best'] = summary(best);
    s[`ratio.${p1}/bullmq.best`] = summary((results[p1] ?? []).map((r, i) => r.value / best[i]));
  }
  if (results.p4) {
    s.p4 = series('p4');
    s['p4.ofIdeal'] = series('p4', (r) => r.value / P4_IDEAL);
    s['p4.cpuTotal'] = series('p4', (r) => r.cpuPerItem.total);
  }
  if (results['bullmq.p4']) {
    s['bullmq.p4'] = series('bullmq.p4');
    s['bullmq.p4.ofIdeal'] = series('bullmq.p4', (r) => r.value / P4_IDEAL);
    s['bullmq.p4.cpuTotal'] = series('bullmq.p4', (r) => r.cpuPerItem.total);
    if (results.p4) s['ratio.p4/bullmq.p4'] = summary(paired('p4', 'bullmq.p4'));
  }
  return s;
}
