// Renders the benchmark report (Markdown) from the JSON report built by run.js.
import {fmt, fmtSummary, median, summary} from './stats.js';

const GOALS = {
  p1: 12_000,
  p1Ratio: 0.7,
  p2: 20_000,
  p2Ratio: 0.6,
  submitP99Us: 20,
  cpuPerTask: 0.2,
  p1VsBullmq: 1.0,
  p4: 4_500,
  p1BigTable: 0.85,
};

const verdict = (ok) => (ok === undefined ? '' : ok ? 'met' : '**not met**');
/** 'met' / 'not met' for a figure against a goal; nothing when the workload did not run. */
const against = (x, pred) => verdict(Number.isFinite(x) ? pred(x) : undefined);
const times = (s) => (Number.isFinite(s?.median) ? `${fmtSummary(s, 2)}×` : '–');

function envSection(m, opts) {
  const d = m.durability;
  const dirty = m.srcUncommittedFiles ? ` (+ ${m.srcUncommittedFiles} uncommitted file(s) under src/ built into dist/)` : '';
  return [
    '## Environment',
    '',
    '| | |',
    '| --- | --- |',
    `| date | ${m.date} |`,
    `| commit | ${m.commit ?? '?'}${dirty} |`,
    `| machine | ${m.cores} cores (${m.cpuModel}), ${m.memoryGiB} GiB, ${m.kernel}; load average at start ${m.loadAverageAtStart.join(' / ')} |`,
    `| Node.js | ${m.node} |`,
    `| MariaDB | ${m.mariadb}; innodb_flush_log_at_trx_commit=${d.innodb_flush_log_at_trx_commit}, sync_binlog=${d.sync_binlog}, log_bin=${d.log_bin}, doublewrite=${d.innodb_doublewrite}, flush_method=${d.innodb_flush_method}, buffer pool ${d.innodb_buffer_pool_size_mib} MiB |`,
    `| RabbitMQ | ${m.rabbitmq ?? '?'} (${m.erlang ?? '?'}) |`,
    ...(m.redis
      ? [
          `| Redis (BullMQ) | ${m.redis.version}; appendonly=${m.redis.appendonly}, save="${m.redis.save}"${m.redis.appendonly === 'no' && !m.redis.save ? ' — no persistence: BullMQ is not durable here' : ''} |`,
        ]
      : []),
    `| disk fsync | ${fmt(m.fsync.fsyncsPerSecond, 0)} fsync/s (${fmt(m.fsync.meanMs, 2)} ms each; ${m.fsync.count} × 4 KiB write + fsync in ${m.fsync.dir}) |`,
    `| hand-built (c), (a′) | ${Object.entries(opts.handBuilt ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')} |`,
    `| options | ${opts.quick ? 'quick, ' : ''}${opts.runs} run(s) after a warm-up of ${opts.warmupN}; N = ${opts.n.toLocaleString('en-US')} tasks; RabbitMQ calibration ${opts.amqpN.toLocaleString('en-US')} msg/phase; consumers ${opts.worker === 'child' ? 'in child processes' : 'in-process'} |`,
    '',
  ];
}

function cpuRow(label, runs, unit) {
  if (!runs?.length) return null;
  const keys = ['node (bench)', 'node (worker)', 'mariadbd', 'mariadbd (our connections)', 'beam.smp', 'redis-server', 'total', 'other'];
  const cells = keys.map((k) => {
    const v = runs.map((r) => r.cpuPerItem[k]).filter((x) => x !== undefined);
    return v.length ? fmt(median(v), 3) : '–';
  });
  const busy = median(runs.map((r) => r.cpu.ours / r.cpu.wallMs));
  const other = median(runs.map((r) => r.cpu.other / r.cpu.wallMs));
  return `| ${label} | ${unit} | ${cells.join(' | ')} | ${fmt(busy, 2)} | ${fmt(other, 2)} |`;
}

function callsTable(runs, pick, rows) {
  const out = [];
  for (const [name, label] of rows) {
    const per = runs.map((r) => pick(r)?.[name]).filter(Boolean);
    if (per.length === 0) continue;
    const calls = median(per.map((c) => c.calls));
    const items = median(per.map((c) => c.items / c.calls));
    const ms = median(per.map((c) => c.ms / c.calls));
    const extra = per[0].claimed !== undefined ? ` (${fmt(median(per.map((c) => c.claimed / c.calls)), 1)} claimed)` : '';
    out.push(`| ${label} | ${fmt(calls, 0)} | ${fmt(items, 1)}${extra} | ${fmt(ms, 2)} |`);
  }
  return out;
}

/** Result rows of the peers (bench/peers.js): BullMQ against P1, and P4 against BullMQ's 200 ms jobs. */
function peerRows(s, opts, head) {
  const out = [];
  const n = opts.n.toLocaleString('en-US');
  for (const c of [50, 500]) {
    const k = `bullmq.c${c}`;
    if (!s[k]) continue;
    out.push(
      `| BullMQ | BullMQ 6 add + process together (Redis without persistence: not durable): ${n} no-op jobs, addBulk of 500, Worker concurrency ${c} in a child process | ${fmtSummary(s[k])} jobs/s; ${fmtSummary(s[`${k}.cpuTotal`], 3)} core-ms/job | peer | |`,
      `| P1 | … P1 (${head}) ÷ BullMQ concurrency ${c} | ${times(s[`ratio.p1.${head}/${k}`])} | – | |`,
    );
  }
  if (s['bullmq.best']) {
    const r = s[`ratio.p1.${head}/bullmq.best`];
    out.push(
      `| P1 | … P1 (${head}) ÷ BullMQ's better concurrency of each round | ${times(r)} | ≥ 1.0× | ${against(r.median, (x) => x >= GOALS.p1VsBullmq)} |`,
    );
  }
  const p4n = opts.p4N.toLocaleString('en-US');
  if (s.p4) {
    out.push(
      `| **P4** | ax, ${p4n} handlers that await 200 ms, IO pool of 1000 (worker child), first submit → last succeeded | ${fmtSummary(s.p4)} tasks/s (${times(s['p4.ofIdeal'])} the ideal 5,000); ${fmtSummary(s['p4.cpuTotal'], 3)} core-ms/task | ≥ 4,500 (0.9× ideal) | ${against(s.p4.median, (x) => x >= GOALS.p4)} |`,
    );
  }
  if (s['bullmq.p4']) {
    out.push(
      `| BullMQ | BullMQ, ${p4n} jobs that await 200 ms, Worker concurrency 1000 (not durable) | ${fmtSummary(s['bullmq.p4'])} jobs/s (${times(s['bullmq.p4.ofIdeal'])} the ideal); ${fmtSummary(s['bullmq.p4.cpuTotal'], 3)} core-ms/job | peer | |`,
    );
  }
  if (s['ratio.p4/bullmq.p4']) {
    const r = s['ratio.p4/bullmq.p4'];
    out.push(`| P4 | … P4 ÷ BullMQ 200 ms jobs (paired per round) | ${times(r)} | ≥ 1.0× | ${against(r.median, (x) => x >= 1)} |`);
  }
  if (out.length === 0) out.push('', 'BullMQ and P4 were not selected in this run (`--only … bullmq,p4`).');
  return out;
}

export function renderMarkdown(report, opts) {
  const s = report.summary;
  const R = report.runs;
  const m = report.manifest;
  const head = opts.queueTypes[0];
  const lines = [`# ax benchmark — ${m.date.slice(0, 10)}`, '', ...envSection(m, opts)];

  lines.push(
    `## Results (median [min–max] of ${opts.runs} run(s); ratios are paired within each run)`,
    '',
    '| id | workload | result | goal | status |',
    '| --- | --- | ---: | --- | --- |',
    `| (a) | raw mysql2: 500-row multi-row INSERT of ax-shaped task rows, 1 connection, autocommit | ${fmtSummary(s['a.insert'])} rows/s | calibration | |`,
  );
  lines.push(
    `| (a′) | raw: the producer half of (c) alone — 500-row INSERT then confirmed publish (quorum), 2 batches in flight, no consumer | ${fmtSummary(s['a.insertPublish'])} tasks/s | calibration | |`,
  );
  for (const qt of ['classic', 'quorum']) {
    lines.push(
      `| (b) | raw amqplib, ${qt} queue: publish in confirm windows of 500 / consume with manual acks / both together | ${fmtSummary(s[`b.${qt}.publish`])} / ${fmtSummary(s[`b.${qt}.consume`])} / ${fmtSummary(s[`b.${qt}.together`])} msg/s | calibration | |`,
    );
  }
  for (const qt of opts.queueTypes) {
    lines.push(
      `| (c) | hand-built batched durable pipeline (${qt}): 500-row INSERT, confirmed publish, one-UPDATE claim, one-UPDATE complete | ${fmtSummary(s[`c.${qt}`])} tasks/s | calibration | |`,
    );
  }
  const p2 = s.p2;
  const su = {p50: s['p2.submitUs.p50'], p99: s['p2.submitUs.p99'], p999: s['p2.submitUs.p99_9']};
  lines.push(
    `| P2 | ax SDK submit only (createClient, batch 500), ${opts.n.toLocaleString('en-US')} tasks, submit → flush() durable | ${fmtSummary(p2)} tasks/s | ≥ 20,000 | ${against(p2.median, (x) => x >= GOALS.p2)} |`,
    `| P2 | … ratio to (a) | ${times(s['ratio.p2/a'])} | ≥ 0.6× | ${against(s['ratio.p2/a'].median, (x) => x >= GOALS.p2Ratio)} |`,
    `| P2 | … ratio to (a′), which also publishes (not a goal; for diagnosis) | ${times(s['ratio.p2/a.insertPublish'])} | – | |`,
    `| P2 | … CPU per task of (a′) ÷ CPU per task of P2 (what the ratio tends to when the machine is CPU-bound; less sensitive to others' load) | ${times(s['cpuRatio.a.insertPublish/p2'])} | – | |`,
    `| P2 | … \`await submit()\` latency p50 / p99 / p99.9 | ${fmtSummary(su.p50, 2)} / ${fmtSummary(su.p99, 2)} / ${fmtSummary(su.p999, 1)} µs | p99 ≤ 20 µs | ${against(su.p99.median, (x) => x <= GOALS.submitP99Us)} |`,
  );
  for (const qt of opts.queueTypes) {
    const p1 = s[`p1.${qt}`];
    const runs = R[`p1.${qt}`] ?? [];
    const lost = runs.reduce((n, r) => n + r.correctness.lost, 0);
    const dup = runs.reduce((n, r) => n + r.correctness.duplicates, 0);
    const rerun = runs.reduce((n, r) => n + r.correctness.reExecuted, 0);
    const lat = summary(runs.map((r) => r.latencyMs.p99));
    const lat50 = summary(runs.map((r) => r.latencyMs.p50));
    const isHead = qt === head;
    lines.push(
      `| P1 | ax end to end (${qt}${isHead ? ', headline' : ''}): ${opts.n.toLocaleString('en-US')} no-op tasks, producer + worker (${opts.worker === 'child' ? 'child process' : 'in-process'}) together, first submit → last success | ${fmtSummary(p1)} tasks/s | ≥ 12,000 | ${against(p1.median, (x) => x >= GOALS.p1)} |`,
      `| P1 | … ratio to (c) ${qt} | ${times(s[`ratio.p1.${qt}/c.${qt}`])} | ≥ 0.7× | ${against(s[`ratio.p1.${qt}/c.${qt}`].median, (x) => x >= GOALS.p1Ratio)} |`,
      `| P1 | … CPU per task of (c) ÷ CPU per task of P1 (${qt}; what the ratio tends to when CPU-bound) | ${times(s[`cpuRatio.c.${qt}/p1.${qt}`])} | – | |`,
      `| P1 | … correctness over all runs: lost / duplicate successes / re-executed | ${lost} / ${dup} / ${rerun} | lost 0, duplicates 0 | ${verdict(runs.length ? lost === 0 && dup === 0 : undefined)} |`,
      `| P1 | … row latency insert → succeeded, p50 / p99 (a throughput run: mostly queueing) | ${fmtSummary(lat50, 0)} / ${fmtSummary(lat, 0)} ms | – | |`,
      `| P7 | … CPU per task, ax + MariaDB + RabbitMQ (${qt}) | ${fmtSummary(s[`p1.${qt}.cpuTotal`], 3)} core-ms | ≤ 0.2 | ${against(s[`p1.${qt}.cpuTotal`].median, (x) => x <= GOALS.cpuPerTask)} |`,
    );
    const indexed = s[`ratio.p1x.${qt}/p1.${qt}`];
    if (indexed)
      lines.push(
        `| P1 | … with its payload field n indexed (--payload-index; ${qt}): paired ratio to P1 / CPU per task of P1 ÷ of it | ${times(indexed)} / ${times(s[`cpuRatio.p1.${qt}/p1x.${qt}`])} | – | |`,
      );
    const big = s[`ratio.p1big.${qt}/p1.${qt}`];
    if (big) {
      const sizes = Object.entries(report.bigTable?.sizes ?? {})
        .map(([t, z]) => `${t} ${(z.dataBytes / 2 ** 20).toFixed(0)} MiB data + ${(z.indexBytes / 2 ** 20).toFixed(0)} MiB indexes`)
        .join('; ');
      lines.push(
        `| P1 | … with ${report.bigTable.finishedTasks.toLocaleString('en-US')} finished tasks already in the table (${qt}): ${fmtSummary(s[`p1big.${qt}`])} tasks/s; paired ratio to P1 on the empty table (${sizes}) | ${times(big)} | ≥ 0.85× | ${against(big.median, (x) => x >= GOALS.p1BigTable)} |`,
      );
    }
  }
  lines.push(...peerRows(s, opts, head), '');

  lines.push(
    '## CPU per item (core-ms, medians; from /proc/<pid>/stat)',
    '',
    '"total" is node + worker + mariadbd + beam.smp (+ redis-server for BullMQ, which uses neither MariaDB nor RabbitMQ); "other" is the machine\'s busy time not used by them (other engineers\' work on this shared machine: noise). "… of which our connections" is the CPU of the mariadbd threads serving connections to the benchmark\'s database (information_schema.PROCESSLIST.TID); the rest of mariadbd is background work (redo/page flushing, purge) and other tenants of the shared server — RabbitMQ cannot be split that way. The last two columns are cores kept busy on average (of ' +
      m.cores +
      ').',
    '',
    '| workload | per | node (bench) | node (worker) | mariadbd | … of which our connections | beam.smp | redis-server | total | other | cores busy (ours) | cores busy (other) |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  );
  const cpuRows = [
    cpuRow('(a) raw INSERT', R['a.insert'], 'row'),
    cpuRow('(a′) raw INSERT + publish', R['a.insertPublish'], 'task'),
    cpuRow('(b) classic, all phases', R['b.classic'], 'msg (pub+con)'),
    cpuRow('(b) quorum, all phases', R['b.quorum'], 'msg (pub+con)'),
    cpuRow('P2 ax submit', R.p2, 'task'),
  ];
  for (const qt of opts.queueTypes)
    cpuRows.push(cpuRow(`(c) hand-built ${qt}`, R[`c.${qt}`], 'task'), cpuRow(`P1 ax ${qt}`, R[`p1.${qt}`], 'task'));
  cpuRows.push(
    cpuRow('BullMQ concurrency 50', R['bullmq.c50'], 'job'),
    cpuRow('BullMQ concurrency 500', R['bullmq.c500'], 'job'),
    cpuRow('P4 ax, 200 ms, IO pool 1000', R.p4, 'task'),
    cpuRow('BullMQ 200 ms, concurrency 1000', R['bullmq.p4'], 'job'),
  );
  lines.push(...cpuRows.filter(Boolean), '');

  lines.push(
    '## Batching on the hot paths (medians of per-run figures)',
    '',
    '| where | statement | calls per run | rows per call | ms per call |',
    '| --- | --- | ---: | ---: | ---: |',
  );
  const prod = [
    ['tasksInsert', 'tasksInsert (one transaction: tasks + history)'],
    ['publish', 'broker.publish (confirmed)'],
    ['doorbellsMark', 'doorbellsMark (UPDATE, in its own transaction; before the INSERT marked the rows it rings)'],
    ['doorbellsForget', 'doorbellsForget (UPDATE, only after a failed publish)'],
  ];
  for (const l of callsTable(R.p2 ?? [], (r) => r.calls, prod)) lines.push(`| P2 producer ${l}`);
  for (const qt of opts.queueTypes) {
    const runs = R[`p1.${qt}`] ?? [];
    for (const l of callsTable(runs, (r) => r.producerCalls, prod)) lines.push(`| P1 ${qt} producer ${l}`);
    const wk = [
      ['tasksClaim', 'tasksClaim (one transaction: read, UPDATE, history)'],
      ['outcomesApply', 'outcomesApply (one transaction: read, UPDATE, history)'],
      ['leasesRenew', 'leasesRenew'],
      ['tasksGet', 'tasksGet (per row)'],
      ['publish', 'broker.publish (re-ring)'],
    ];
    for (const l of callsTable(runs, (r) => r.worker?.calls, wk)) lines.push(`| P1 ${qt} worker ${l}`);
    const hb = R[`c.${qt}`] ?? [];
    for (const l of callsTable(hb, (r) => r.stats?.calls, [
      ['claim', 'claim UPDATE (autocommit)'],
      ['complete', 'complete UPDATE (autocommit)'],
    ]))
      lines.push(`| (c) ${qt} consumer ${l}`);
  }
  lines.push('');
  const ws = [];
  for (const qt of opts.queueTypes) {
    for (const [i, r] of (R[`p1.${qt}`] ?? []).entries()) {
      const w = r.worker?.worker ?? {};
      ws.push(
        `- P1 ${qt} run ${i + 1}: ${fmt(r.value, 0)} tasks/s; everything submitted was durable (flush) at ${fmt(r.flushedAtMs / 1000, 1)} s of ${fmt(r.ms / 1000, 1)} s (the submit loop itself is held back by the 10,000-task buffer); worker claimed ${w.claimed}, succeeded ${w.succeeded}, released ${w.released}, stale deliveries ${w.staleDeliveries}, stale outcomes ${w.staleOutcomes}; worker RSS ${fmt((r.worker?.mem ?? 0) / 2 ** 20, 0)} MiB; states ${JSON.stringify(r.correctness.states)}${r.ok ? '' : `; **${r.error}**`}`,
      );
    }
  }
  for (const qt of opts.queueTypes) {
    for (const [i, r] of (R[`c.${qt}`] ?? []).entries()) {
      ws.push(
        `- (c) ${qt} run ${i + 1}: ${fmt(r.value, 0)} tasks/s; its producer half finished at ${fmt(r.produceRate, 0)} tasks/s; deadlocks retried: INSERT ${r.insertRetries ?? 0}, consumer ${r.stats?.calls?.deadlockRetries?.calls ?? 0}${r.ok ? '' : `; **${r.error}**`}`,
      );
    }
  }
  for (const key of ['bullmq.c50', 'bullmq.c500', 'bullmq.p4']) {
    for (const [i, r] of (R[key] ?? []).entries()) {
      ws.push(
        `- ${key} run ${i + 1}: ${fmt(r.value, 0)} jobs/s over ${fmt(r.n, 0)} jobs; addBulk alone ${fmt(r.addRate, 0)} jobs/s; processed twice ${r.duplicates}; worker RSS ${fmt((r.worker?.mem ?? 0) / 2 ** 20, 0)} MiB${r.ok ? '' : `; **${r.error}**`}`,
      );
    }
  }
  for (const [i, r] of (R.p4 ?? []).entries()) {
    ws.push(
      `- P4 run ${i + 1}: ${fmt(r.value, 0)} tasks/s over ${fmt(r.n, 0)} tasks; all durable (flush) at ${fmt(r.flushedAtMs / 1000, 2)} s of ${fmt(r.ms / 1000, 2)} s; lost ${r.correctness.lost}, duplicates ${r.correctness.duplicates}, re-executed ${r.correctness.reExecuted}; worker RSS ${fmt((r.worker?.mem ?? 0) / 2 ** 20, 0)} MiB${r.ok ? '' : `; **${r.error}**`}`,
    );
  }
  for (const [i, r] of (R.p2 ?? []).entries()) {
    ws.push(
      `- P2 run ${i + 1}: ${fmt(r.value, 0)} tasks/s; submit loop ${fmt(r.submitLoopMs / 1000, 2)} s, total ${fmt(r.ms / 1000, 2)} s; inserted ${r.inserted}, unpublished ${r.unpublished}, rows ${r.rowsInDb}; submit() p90 ${fmt(r.submitUs.p90, 2)} µs, max ${fmt(r.submitUs.max, 0)} µs, ${r.submitUs.over1ms} call(s) over 1 ms (waits for buffer space: one call per 500 once the 10,000-task buffer is full)`,
    );
  }
  if (report.outbox) {
    lines.push('## Outbox relay (bench/outbox.js)', '', report.outbox.markdown ?? `**failed**: ${report.outbox.error}`, '');
  }
  if (report.replay)
    lines.push('## Dead-letter replay (bench/replay.js)', '', report.replay.markdown ?? `**failed**: ${report.replay.error}`, '');
  if (report.archive) lines.push('## Archive (bench/archive.js)', '', report.archive.markdown ?? `**failed**: ${report.archive.error}`, '');
  if (report.limits)
    lines.push('## Claims of a limited type (bench/limits.js)', '', report.limits.markdown ?? `**failed**: ${report.limits.error}`, '');
  if (report.latency) lines.push('## Latency (bench/latency.js)', '', report.latency.markdown ?? `**failed**: ${report.latency.error}`, '');
  if (report.wheel) {
    lines.push('## Timing wheel (bench/wheel.js)', '', report.wheel.markdown ?? `**failed**: ${report.wheel.error}`, '');
  }
  if (report.scheduler) {
    lines.push('## Scheduler (bench/scheduler.js)', '', report.scheduler.markdown ?? `**failed**: ${report.scheduler.error}`, '');
  }
  lines.push('## Per run', '', ...ws, '', `Workloads took ${report.elapsedSeconds} s.`);
  return lines.join('\n');
}
