// The archive benchmark (issue 13 §1): `node bench/run.js --only archive [--archive N] [--runs R] [--n P1N]`,
// or `--archive N` next to other workloads (opt-in). In the suite's own database, with its P1 producer
// and worker child; the archiver is the real one (compose's createArchiver, what `ax archive run`
// runs) in a child process of its own (this file with --archiver-child), as in a scheduler:
//   fill   N finished tasks (default 1,000,000; 97% succeeded, 2% cancelled, 1% dead) finished 31–61
//          days ago (past the default 30-day retention), 3 history rows each (2 for the cancelled),
//          200-byte payloads, time-ordered ids, plus 10,000 live tasks — bench/backlog.js's fill,
//          INSERT … SELECT; refilled for each part (the time is reported);
//   A      the archive rate on its own: one run to completion; tasks/s, history rows/s, files and
//          bytes written, the batch size and pause, the time between two batches, CPU of the
//          archiver process and of mariadbd per task;
//   C      around A: tasks / task_history / task_payloads data and index sizes (information_schema,
//          after ANALYZE) and the backlog query's time (HOT_SQL.backlog, what `ax tasks stats` and
//          `ax top` read) before, after, and after OPTIMIZE TABLE (InnoDB does not give the space back
//          by itself);
//   B      on a refilled table: R rounds of P1 (P1N tasks) alone and P1 while the archiver deletes the
//          backlog, order alternating, P1 started once the archiver has committed its first batch;
//          the paired ratio with ÷ alone (the goal: ≥ 0.85), the archiver's progress within each P1
//          window, and InnoDB's row-lock waits (global counters: other tenants count too).
// AX_BENCH_ARCHIVE_PARTS=a or =b runs one part alone (default a,b). Batch size and pause are ax's configuration: AX_ARCHIVE_BATCH and AX_ARCHIVE_PAUSE in the
// environment reach the archiver child (defaults 500 and 100ms).
import {fork} from 'node:child_process';
import {mkdtemp, readdir, rm, stat} from 'node:fs/promises';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {fill} from './backlog.js';
import {cpuDelta, findServerPids, snapshot} from './lib/cpu.js';
import {stopChild, trackChild} from './lib/guard.js';
import {summary} from './lib/stats.js';

const SELF = fileURLToPath(import.meta.url);
const LIVE = 10_000;
const FILL = {ageDays: 31, history: 3, payloadBytes: 200, timedIds: true};

// ---------------------------------------------------------------------------------------------
// The archiver child: {cmd: 'run'} starts a run (progress and its end reported as events),
// {cmd: 'stop'} aborts it between batches, {cmd: 'exit'} closes the store and exits.

async function archiverChild({mysqlUrl, archiveDir}) {
  const {loadConfig} = await import('../dist/core/config/config.js');
  const {createRuntime, openStore, createArchiver} = await import('../dist/compose.js');
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k === 'AX_ARCHIVE_BATCH' || k === 'AX_ARCHIVE_PAUSE'));
  const config = loadConfig({env, cwd: '/nonexistent', overrides: {logLevel: 'warn', mysqlUrl, archiveDir}});
  const rt = createRuntime(config);
  const store = await openStore(rt);
  const archiver = createArchiver(rt, store);
  let abort = null;
  process.on('message', async (m) => {
    if (m.cmd === 'run') {
      abort = new AbortController();
      const byState = {};
      const t0 = performance.now();
      try {
        const report = await archiver.run({
          signal: abort.signal,
          onProgress: (p) => {
            byState[p.state] = p.archived;
            const tasks = Object.values(byState).reduce((a, b) => a + b, 0);
            process.send({ev: 'progress', at: Date.now(), tasks, parts: p.parts});
          },
        });
        process.send({ev: 'done', at: Date.now(), ms: performance.now() - t0, report});
      } catch (e) {
        process.send({
          ev: 'stopped',
          at: Date.now(),
          ms: performance.now() - t0,
          aborted: abort.signal.aborted,
          error: String(e?.message ?? e),
        });
      }
    } else if (m.cmd === 'stop') abort?.abort(new Error('stopped by the bench'));
    else if (m.cmd === 'exit') {
      await store.close();
      process.exit(0);
    }
  });
  process.on('disconnect', () => setTimeout(() => process.exit(0), 100).unref());
  process.send({ev: 'ready', batch: config.archiveBatch, pauseMs: config.archivePauseMs, retentionMs: config.retentionMs});
}

if (process.argv[1] === SELF && process.argv[2] === '--archiver-child') await archiverChild(JSON.parse(process.argv[3]));

/** Starts the archiver child; `run()` resolves with its end event, `nextProgress()` with the next batch. */
async function startArchiver(o) {
  const child = trackChild(fork(SELF, ['--archiver-child', JSON.stringify(o)], {stdio: ['ignore', 'inherit', 'inherit', 'ipc']}));
  const events = [];
  let waiters = [];
  let gone = null;
  child.on('message', (m) => {
    events.push(m);
    waiters = waiters.filter((w) => !(w.pred(m) && (w.resolve(m), true)));
  });
  child.once('exit', (code, signal) => {
    gone = new Error(`archiver child exited (${code ?? signal})`);
    for (const w of waiters.splice(0)) w.reject(gone);
  });
  const next = (pred) =>
    new Promise((resolve, reject) => {
      if (gone) reject(gone);
      else waiters.push({pred, resolve, reject});
    });
  const ready = await next((m) => m.ev === 'ready');
  const isEnd = (m) => m.ev === 'done' || m.ev === 'stopped';
  return {
    pid: child.pid,
    settings: ready,
    events,
    /** Starts a run; returns {firstBatch, end}: promises of the first committed batch and of the run's end. */
    start() {
      const from = events.length;
      const end = next(isEnd);
      child.send({cmd: 'run'});
      const firstBatch = next((m) => m.ev === 'progress' || isEnd(m));
      return {from, end, firstBatch};
    },
    stop: () => child.send({cmd: 'stop'}),
    async close() {
      if (child.exitCode === null && child.connected) child.send({cmd: 'exit'});
      await stopChild(child, {graceMs: 5000});
    },
  };
}

// ---------------------------------------------------------------------------------------------

async function walk(dir) {
  const out = {files: 0, dataFiles: 0, bytes: 0, dataBytes: 0};
  for (const e of await readdir(dir, {withFileTypes: true, recursive: true})) {
    if (!e.isFile()) continue;
    const size = (await stat(join(e.parentPath ?? e.path, e.name))).size;
    out.files++;
    out.bytes += size;
    if (e.name.endsWith('.ndjson.gz')) {
      out.dataFiles++;
      out.dataBytes += size;
    }
  }
  return out;
}

const pctOf = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};

/** Cumulative tasks archived at wall time `t` (the last progress event at or before it) within events[from…]. */
function archivedAt(events, from, t) {
  let n = 0;
  for (let i = from; i < events.length; i++) {
    const e = events[i];
    if (e.ev !== 'progress') continue;
    if (e.at > t) break;
    n = e.tasks;
  }
  return n;
}

/**
 * Runs parts A, C and B (see the header). `ctx` is bench/run.js's: sql (the bench database), settle,
 * log, and `p1(n)`: one P1 on the table as it is (its own rows scoped by type; returns run.js's P1
 * result with wall-clock start and end).
 */
export async function runArchiveBench(ctx, {n = 1_000_000, rounds = 3, p1N, warmupN, parts = process.env.AX_BENCH_ARCHIVE_PARTS ?? 'a,b'}) {
  const want = new Set(parts.split(',').map((x) => x.trim()));
  const {sql, log} = ctx;
  const dir = await mkdtemp(join(tmpdir(), 'ax-bench-archive-'));
  const archiver = await startArchiver({mysqlUrl: ctx.mysqlUrl, archiveDir: dir});
  const settings = archiver.settings;
  log(`archive: batch ${settings.batch}, pause ${settings.pauseMs} ms, retention ${settings.retentionMs / 86_400_000} d; files in ${dir}`);
  try {
    const refill = async () => {
      for (const t of ['tasks', 'task_history', 'task_payloads']) await sql(`TRUNCATE TABLE ${t}`);
      const t0 = performance.now();
      await fill(sql, n, LIVE, (m) => log(`archive fill: ${m}`), FILL);
      return performance.now() - t0;
    };
    // P1's rows (fresh, never archived) go after each run, so every run sees the same table.
    const deleteP1Rows = async () => {
      const ids = (
        await sql(
          "SELECT id FROM tasks WHERE cell = 'default' AND state IN ('succeeded', 'dead', 'cancelled', 'submitted', 'failed', 'running') AND type = 'bench_noop'",
        )
      ).map((x) => x.id);
      for (let i = 0; i < ids.length; i += 5000) {
        const chunk = ids.slice(i, i + 5000);
        await sql('DELETE FROM task_history WHERE task_id IN (?)', [chunk]);
        await sql('DELETE FROM task_payloads WHERE task_id IN (?)', [chunk]);
        await sql('DELETE FROM tasks WHERE id IN (?)', [chunk]);
      }
    };
    const {HOT_SQL} = await import('../dist/core/store/mysql/hot-sql.js');
    const measure = async (label) => {
      await sql('ANALYZE TABLE tasks, task_history, task_payloads');
      const rows = await sql(
        `SELECT table_name AS t, table_rows AS r, data_length AS d, index_length AS i, data_free AS f FROM information_schema.tables
          WHERE table_schema = DATABASE() AND table_name IN ('tasks', 'task_history', 'task_payloads')`,
      );
      const sizes = Object.fromEntries(
        rows.map((r) => [r.t, {rows: Number(r.r), dataBytes: Number(r.d), indexBytes: Number(r.i), freeBytes: Number(r.f)}]),
      );
      // The .ibd file itself (innodb_file_per_table): what the disk holds, whatever data_length says.
      for (const f of await sql(
        "SELECT SUBSTRING_INDEX(NAME, '/', -1) AS t, FILE_SIZE AS b FROM information_schema.INNODB_SYS_TABLESPACES WHERE NAME LIKE CONCAT(DATABASE(), '/%')",
      ))
        if (sizes[f.t]) sizes[f.t].fileBytes = Number(f.b);
      const [{c}] = await sql('SELECT COUNT(*) AS c FROM tasks');
      await sql(HOT_SQL.backlog, ['default']); // warm
      const ms = [];
      for (let i = 0; i < 11; i++) {
        const t = performance.now();
        await sql(HOT_SQL.backlog, ['default']);
        ms.push(performance.now() - t);
      }
      const out = {label, tasks: Number(c), sizes, backlogMs: summary(ms)};
      log(`archive sizes ${label}: ${JSON.stringify(out)}`);
      return out;
    };

    // A and C: the rate on its own, sizes and the backlog query around it.
    const partA = async () => {
      const fillMsA = await refill();
      const before = await measure('before archiving');
      await ctx.settle(20_000);
      const pids = findServerPids();
      const procs = {'node (archiver)': archiver.pid, mariadbd: pids.mariadbd ?? []};
      const cpu0 = snapshot(procs);
      const runA = archiver.start();
      const endA = await runA.end;
      const cpuA = cpuDelta(cpu0, snapshot(procs));
      if (endA.ev !== 'done') throw new Error(`archive run failed: ${endA.error}`);
      const progress = archiver.events.slice(runA.from).filter((e) => e.ev === 'progress');
      const gaps = progress.slice(1).map((e, i) => e.at - progress[i].at);
      const files = await walk(dir);
      const r = endA.report;
      const tasksA = r.tasks.succeeded + r.tasks.dead + r.tasks.cancelled;
      const rateA = {
        fillMs: fillMsA,
        ms: endA.ms,
        tasks: tasksA,
        history: r.history,
        tasksPerSecond: (tasksA * 1000) / endA.ms,
        historyPerSecond: (r.history * 1000) / endA.ms,
        rowsPerSecond: ((tasksA + r.history) * 1000) / endA.ms,
        parts: r.parts,
        batches: progress.length,
        files,
        batch: settings.batch,
        pauseMs: settings.pauseMs,
        batchGapMs: {p50: pctOf(gaps, 50), p95: pctOf(gaps, 95), max: pctOf(gaps, 100)},
        cpuMsPerTask: Object.fromEntries(Object.entries(cpuA.perProcess).map(([k, v]) => [k, v / tasksA])),
        machineBusyCores: cpuA.machine / cpuA.wallMs,
      };
      log(`archive A: ${JSON.stringify(rateA)}`);
      const after = await measure('after archiving');
      await sql('OPTIMIZE TABLE tasks, task_history, task_payloads');
      const optimized = await measure('after OPTIMIZE TABLE');
      await rm(dir, {recursive: true, force: true});
      return {rateA, before, after, optimized};
    };
    const a = want.has('a') ? await partA() : null;

    // B: P1 alone vs P1 while the archiver deletes the refilled backlog, alternating.
    const partB = async () => {
      const fillMsB = await refill();
      await ctx.settle(20_000);
      if (warmupN) {
        await ctx.p1(warmupN);
        await deleteP1Rows();
      }
      const lockStatus = async () =>
        Object.fromEntries(
          (await sql("SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_row_lock_waits', 'Innodb_row_lock_time')")).map((x) => [
            x.Variable_name,
            Number(x.Value),
          ]),
        );
      const p1Run = async (withArchiver) => {
        const [{c: remaining}] = await sql(
          "SELECT COUNT(*) AS c FROM tasks WHERE cell = 'default' AND state IN ('succeeded', 'dead', 'cancelled') AND finished_at < NOW(3) - INTERVAL 30 DAY",
        );
        const l0 = await lockStatus();
        let run = null;
        if (withArchiver) {
          run = archiver.start();
          const first = await run.firstBatch;
          if (first.ev !== 'progress') throw new Error(`the archiver ended before its first batch: ${first.error ?? 'nothing to archive'}`);
        } else await ctx.settle(20_000);
        const p1 = await ctx.p1(p1N);
        const l1 = await lockStatus();
        if (run) archiver.stop();
        const out = {
          value: p1.value,
          ok: p1.ok,
          lost: p1.correctness.lost,
          duplicates: p1.correctness.duplicates,
          backlogBefore: Number(remaining),
          latencyMs: p1.latencyMs,
          cpuPerTask: p1.cpuPerItem,
          rowLockWaits: l1.Innodb_row_lock_waits - l0.Innodb_row_lock_waits,
          rowLockMs: l1.Innodb_row_lock_time - l0.Innodb_row_lock_time,
        };
        if (run) {
          const {start, end} = p1.wall;
          const inWindow = archivedAt(archiver.events, run.from, end) - archivedAt(archiver.events, run.from, start);
          const ended = archiver.events.slice(run.from).find((e) => e.ev === 'done' || e.ev === 'stopped');
          const e = await run.end;
          out.archiver = {
            tasksInWindow: inWindow,
            tasksPerSecondInWindow: (inWindow * 1000) / (end - start),
            finishedBeforeP1Ended: ended !== undefined && ended.at <= end,
            end: e.ev === 'done' ? 'done' : e.aborted ? 'stopped' : `failed: ${e.error}`,
          };
          if (e.ev === 'stopped' && !e.aborted) throw new Error(`archive run failed: ${e.error}`);
        }
        await deleteP1Rows();
        return out;
      };
      const alone = [];
      const withA = [];
      for (let round = 1; round <= rounds; round++) {
        const order = round % 2 === 1 ? [false, true] : [true, false];
        for (const w of order) {
          const res = await p1Run(w);
          (w ? withA : alone).push(res);
          log(
            `archive B round ${round}/${rounds}: P1 ${w ? 'while archiving' : 'alone'} ${Math.round(res.value)} tasks/s` +
              (res.archiver ? `; archiver ${Math.round(res.archiver.tasksPerSecondInWindow)} tasks/s in the window` : '') +
              `; lock waits ${res.rowLockWaits} (${res.rowLockMs} ms); lost ${res.lost}, duplicates ${res.duplicates}`,
          );
        }
      }
      const ratios = withA.map((x, i) => x.value / alone[i].value);
      return {
        n: p1N,
        rounds,
        fillMs: fillMsB,
        alone: summary(alone.map((x) => x.value)),
        withArchiver: summary(withA.map((x) => x.value)),
        pairedRatio: summary(ratios),
        ratios,
        archiverTasksPerSecond: summary(withA.map((x) => x.archiver.tasksPerSecondInWindow)),
        runs: {alone, withArchiver: withA},
      };
    };
    const result = {
      n,
      live: LIVE,
      fill: FILL,
      settings,
      rate: a?.rateA ?? null,
      sizes: a ? {before: a.before, after: a.after, optimized: a.optimized} : null,
      p1: want.has('b') ? await partB() : null,
    };
    result.markdown = markdown(result);
    return result;
  } finally {
    await archiver.close().catch(() => undefined);
    await rm(dir, {recursive: true, force: true}).catch(() => undefined);
  }
}

function markdown(r) {
  const f = (x, d = 0) => (Number.isFinite(x) ? x.toLocaleString('en-US', {maximumFractionDigits: d, minimumFractionDigits: d}) : 'n/a');
  const mb = (b) => `${f(b / 1048576, 1)} MB`;
  const s = (x, d = 0) => `${f(x.median, d)} [${f(x.min, d)}–${f(x.max, d)}]`;
  const size = (m) =>
    ['tasks', 'task_history', 'task_payloads']
      .map((t) => {
        const x = m.sizes[t];
        return x ? `${t} ${mb(x.dataBytes)} + ${mb(x.indexBytes)} (free ${mb(x.freeBytes)}, file ${mb(x.fileBytes ?? NaN)})` : '';
      })
      .filter(Boolean)
      .join('; ');
  const out = [`### Archive (${f(r.n)} finished tasks, ${f(r.live)} live; batch ${r.settings.batch}, pause ${r.settings.pauseMs} ms)`, ''];
  const a = r.rate;
  if (a)
    out.push(
      `**Rate on its own** (fill ${f(a.fillMs / 1000, 1)} s): ${f(a.tasks)} tasks and ${f(a.history)} history rows in ${f(a.ms / 1000, 1)} s = ` +
        `**${f(a.tasksPerSecond)} tasks/s** (${f(a.historyPerSecond)} history rows/s, ${f(a.rowsPerSecond)} rows/s); ${a.batches} batches, ` +
        `${a.parts} parts, ${a.files.files} files, ${mb(a.files.bytes)} (data ${mb(a.files.dataBytes)}); time between two batches ` +
        `p50 ${f(a.batchGapMs.p50)} ms, p95 ${f(a.batchGapMs.p95)} ms, max ${f(a.batchGapMs.max)} ms (pause included); CPU per task: ` +
        Object.entries(a.cpuMsPerTask)
          .map(([k, v]) => `${k} ${f(v * 1000, 1)} µs`)
          .join(', ') +
        `; machine busy ${f(a.machineBusyCores, 2)} cores.`,
      '',
      '| table state | tasks rows | data + index (data_free, .ibd file) | backlog query ms, median [min–max] of 11 |',
      '| --- | ---: | --- | ---: |',
      ...[r.sizes.before, r.sizes.after, r.sizes.optimized].map(
        (m) => `| ${m.label} | ${f(m.tasks)} | ${size(m)} | ${s(m.backlogMs, 1)} |`,
      ),
      '',
    );
  const p = r.p1;
  if (p)
    out.push(
      `**P1 while archiving** (${f(p.n)} tasks per run, ${p.rounds} rounds, order alternating; fill ${f(p.fillMs / 1000, 1)} s): ` +
        `alone ${s(p.alone)} tasks/s, while archiving ${s(p.withArchiver)} tasks/s, **paired ratio ${s(p.pairedRatio, 3)}** ` +
        `(goal ≥ 0.85); the archiver meanwhile ${s(p.archiverTasksPerSecond)} tasks/s.`,
      '',
      '| round | alone tasks/s | while archiving | ratio | archiver tasks in the window (tasks/s) | row-lock waits alone / archiving | backlog rows at start |',
      '| ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...p.runs.withArchiver.map((w, i) => {
        const al = p.runs.alone[i];
        return `| ${i + 1} | ${f(al.value)} | ${f(w.value)} | ${f(p.ratios[i], 3)} | ${f(w.archiver.tasksInWindow)} (${f(w.archiver.tasksPerSecondInWindow)})${w.archiver.finishedBeforeP1Ended ? ' finished early' : ''} | ${al.rowLockWaits} / ${w.rowLockWaits} | ${f(w.backlogBefore)} |`;
      }),
    );
  return out.join('\n');
}
