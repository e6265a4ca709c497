// Same-run comparison of P1 (and, with --only p1,p2, P2) between this tree and another git revision:
//   node bench/run.js --compare <rev> [--only p1|p2|p1,p2] [--runs N] [--n N] [--warmup-n N] [--quick]
//                     [--worker child|inproc] [--queue-types quorum|classic] [--phase-timeout T]
//                     [--payload-bytes B] [--no-write]
// (npm run bench -- --compare HEAD~1). Builds <rev> in a temporary `git worktree` (node_modules
// symlinked from this tree) with THIS tree's bench/ copied over it, so both sides run the same
// harness and only ax differs; builds this tree too. Then, in every round, runs the workloads once
// for each side, in alternating order (base first in odd rounds, this tree first in even ones), each
// side as its own `bench/run.js --only p1 --runs 1` process (`--only p2,p1` with P2) with its own
// warm-up. Reports each side's median
// [min–max] and the paired ratio: the median of the per-round ratios this/base, which cancels the
// machine's slow drifts better than the ratio of the medians. Writes bench/results/<date>-compare.{json,md}.
// The temporary worktree is removed at the end, also after a failure or Ctrl-C.
import {execFileSync, spawn} from 'node:child_process';
import {cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, mkdirSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {parseArgs} from 'node:util';
import {phaseTimeouts, stopChildren, trackChild, within} from './lib/guard.js';
import {fmt, summary} from './lib/stats.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const log = (msg) => process.stderr.write(`[bench compare ${String(Math.round(performance.now() / 1000)).padStart(4)} s] ${msg}\n`);
const git = (args, cwd = ROOT) => execFileSync('git', args, {cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe']}).trim();

function build(dir) {
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], {
    cwd: dir,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
}

/** Producer store calls per 1,000 tasks, by method, from a run's counters. */
function callsPerK(calls, n) {
  const out = {};
  for (const m of ['tasksInsert', 'doorbellsMark', 'doorbellsForget']) out[m] = ((calls?.[m]?.calls ?? 0) * 1000) / n;
  return out;
}

/**
 * Runs `node <dir>/bench/run.js --only <workloads> --runs 1 …` and returns, per workload (p1, p2),
 * its record (the JSON report's run): rate, CPU per task (all, and mariadbd's), producer calls.
 */
async function runSide(side, o, round) {
  const out = join(o.tmp, `${side.key}-${round}.json`);
  const args = [
    join(side.dir, 'bench', 'run.js'),
    '--only',
    o.only.join(','),
    '--core-only',
    '--runs',
    '1',
    '--n',
    String(o.n),
    '--warmup-n',
    String(o.warmupN),
    '--queue-types',
    o.queueType,
    '--worker',
    o.worker,
    '--no-write',
    '--json-out',
    out,
  ];
  if (o.phaseTimeout) args.push('--phase-timeout', o.phaseTimeout);
  if (o.payloadBytes !== null) args.push('--payload-bytes', String(o.payloadBytes));
  const child = trackChild(
    spawn(process.execPath, args, {
      cwd: side.dir,
      env: {...process.env, AX_BENCH_COMMIT: side.commit},
      stdio: ['ignore', 'ignore', 'pipe'],
    }),
  );
  let err = '';
  child.stderr.on('data', (d) => (err += d.toString()));
  const code = await new Promise((resolve) => child.once('exit', (c, s) => resolve(c ?? s)));
  if (code !== 0 || !existsSync(out)) {
    throw new Error(`P1 of ${side.label} (round ${round}) failed (exit ${code}):\n${err.split('\n').slice(-15).join('\n')}`);
  }
  const rep = JSON.parse(readFileSync(out, 'utf8'));
  const res = {};
  if (o.only.includes('p1')) {
    const r = rep.runs?.[`p1.${o.queueType}`]?.[0];
    if (!r || !r.ok) throw new Error(`P1 of ${side.label} (round ${round}) did not finish: ${r?.error ?? 'no result'}`);
    res.p1 = {
      value: r.value,
      cpuPerTask: r.cpuPerItem?.total,
      mariadbPerTask: r.cpuPerItem?.mariadbd,
      mariadbOursPerTask: r.cpuPerItem?.['mariadbd (our connections)'],
      lost: r.correctness?.lost,
      duplicates: r.correctness?.duplicates,
      producerCallsPerK: callsPerK(r.producerCalls, r.n),
    };
  }
  if (o.only.includes('p2')) {
    const r = rep.runs?.p2?.[0];
    if (!r || !Number.isFinite(r.value)) throw new Error(`P2 of ${side.label} (round ${round}) did not finish`);
    res.p2 = {
      value: r.value,
      cpuPerTask: r.cpuPerItem?.total,
      mariadbPerTask: r.cpuPerItem?.mariadbd,
      mariadbOursPerTask: r.cpuPerItem?.['mariadbd (our connections)'],
      unpublished: r.unpublished,
      producerCallsPerK: callsPerK(r.calls, r.n),
    };
  }
  return res;
}

/**
 * The --compare mode of bench/run.js. `argv` is run.js's command line. Returns the exit code: 0,
 * 1 when a run failed (a lost or duplicated task counts as failed), 2 on bad arguments.
 */
export async function runCompare({rev, argv}) {
  const {values: a} = parseArgs({
    args: argv,
    strict: false,
    options: {
      compare: {type: 'string'},
      quick: {type: 'boolean', default: false},
      runs: {type: 'string'},
      n: {type: 'string'},
      'warmup-n': {type: 'string'},
      worker: {type: 'string'},
      'queue-types': {type: 'string'},
      'phase-timeout': {type: 'string'},
      'payload-bytes': {type: 'string'},
      'no-write': {type: 'boolean', default: false},
      only: {type: 'string'},
    },
  });
  const only = (a.only ?? 'p1')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  if (only.length === 0 || only.some((w) => w !== 'p1' && w !== 'p2')) {
    console.error(`--compare: --only takes p1, p2 or p1,p2 (got ${JSON.stringify(a.only)})`);
    return 2;
  }
  const int = (s, d) => (s === undefined ? d : Math.max(1, Number.parseInt(s, 10)));
  const n = int(a.n, a.quick ? 10_000 : 100_000);
  const o = {
    // P2 first, as in bench/run.js's rounds.
    only: ['p2', 'p1'].filter((w) => only.includes(w)),
    runs: int(a.runs, a.quick ? 3 : 5),
    n,
    warmupN: int(a['warmup-n'], a.quick ? 2000 : Math.max(1000, Math.round(n / 10))),
    worker: a.worker === 'inproc' ? 'inproc' : 'child',
    queueType: (a['queue-types'] ?? 'quorum').split(',')[0].trim() === 'classic' ? 'classic' : 'quorum',
    phaseTimeout: a['phase-timeout'],
    payloadBytes: a['payload-bytes'] === undefined ? null : Number(a['payload-bytes']),
  };
  let baseSha;
  try {
    baseSha = git(['rev-parse', '--verify', `${rev}^{commit}`]);
  } catch {
    console.error(`--compare: ${JSON.stringify(rev)} is not a git revision of ${ROOT}`);
    return 2;
  }
  // A whole P1 process (setup, warm-up, run) per side and round: its own limit, above the phase's.
  const perRunMs = 2 * phaseTimeouts(o.phaseTimeout, a.quick ? 5 * 60_000 : 30 * 60_000)('p1') + 120_000;
  const headSha = git(['rev-parse', 'HEAD']);
  const dirty = git(['status', '--porcelain', '--', 'src']).length > 0;
  const tmp = mkdtempSync(join(tmpdir(), 'ax-bench-compare-'));
  const baseDir = join(tmp, 'base');
  let removed = false;
  const removeWorktree = () => {
    if (removed) return;
    removed = true;
    try {
      git(['worktree', 'remove', '--force', baseDir]);
    } catch {
      // Not created (or already gone): nothing to remove.
    }
    rmSync(tmp, {recursive: true, force: true});
  };
  const onSigint = () => {
    log('interrupted: removing the temporary worktree');
    removeWorktree();
    process.exit(130);
  };
  process.once('SIGINT', onSigint);
  try {
    log(`base ${rev} = ${baseSha.slice(0, 10)}: worktree in ${baseDir}`);
    git(['worktree', 'add', '--detach', baseDir, baseSha]);
    symlinkSync(join(ROOT, 'node_modules'), join(baseDir, 'node_modules'), 'dir');
    // The same harness on both sides: this tree's bench/ over the base's.
    cpSync(join(ROOT, 'bench'), join(baseDir, 'bench'), {recursive: true, filter: (src) => !src.includes(`${join('bench', 'results')}`)});
    log('building the base');
    build(baseDir);
    log('building this tree');
    build(ROOT);
    const sides = {
      base: {key: 'base', label: `base ${rev} (${baseSha.slice(0, 10)})`, dir: baseDir, commit: baseSha.slice(0, 10)},
      head: {
        key: 'head',
        label: `this tree (${headSha.slice(0, 10)}${dirty ? ' + uncommitted src' : ''})`,
        dir: ROOT,
        commit: `${headSha.slice(0, 10)}${dirty ? '+dirty' : ''}`,
      },
    };
    const rounds = [];
    for (let round = 1; round <= o.runs; round++) {
      const order = round % 2 === 1 ? ['base', 'head'] : ['head', 'base'];
      const r = {round, order};
      for (const k of order) {
        const run = runSide(sides[k], {...o, tmp}, round);
        if (!(await within(run, perRunMs * o.only.length)))
          throw new Error(`${o.only.join(',')} of ${sides[k].label} (round ${round}) took over ${(perRunMs * o.only.length) / 1000} s`);
        r[k] = await run;
        const parts = o.only.map((w) =>
          w === 'p1'
            ? `P1 ${fmt(r[k].p1.value, 0)} tasks/s (lost ${r[k].p1.lost}, duplicates ${r[k].p1.duplicates})`
            : `P2 ${fmt(r[k].p2.value, 0)} tasks/s`,
        );
        log(`round ${round}/${o.runs} ${sides[k].label}: ${parts.join('; ')}`);
      }
      r.ratio = Object.fromEntries(o.only.map((w) => [w, r.head[w].value / r.base[w].value]));
      log(`round ${round}/${o.runs}: this/base ${o.only.map((w) => `${w} ${fmt(r.ratio[w], 3)}`).join(', ')}`);
      rounds.push(r);
    }
    const per = (w) => {
      const med = (f) => summary(rounds.map(f));
      return {
        base: med((r) => r.base[w].value),
        head: med((r) => r.head[w].value),
        ratio: med((r) => r.ratio[w]),
        cpuRatio: med((r) => r.head[w].cpuPerTask / r.base[w].cpuPerTask),
        cpuPerTask: {base: med((r) => r.base[w].cpuPerTask), head: med((r) => r.head[w].cpuPerTask)},
        mariadbPerTask: {base: med((r) => r.base[w].mariadbPerTask), head: med((r) => r.head[w].mariadbPerTask)},
        mariadbOursPerTask: {base: med((r) => r.base[w].mariadbOursPerTask), head: med((r) => r.head[w].mariadbOursPerTask)},
        mariadbOursRatio: med((r) => r.head[w].mariadbOursPerTask / r.base[w].mariadbOursPerTask),
        producerCallsPerK: {base: rounds[0].base[w].producerCallsPerK, head: rounds[0].head[w].producerCallsPerK},
      };
    };
    const workloads = Object.fromEntries(o.only.map((w) => [w, per(w)]));
    const head = workloads.p1 ?? workloads.p2;
    const res = {
      date: new Date().toISOString(),
      options: o,
      // The first workload's figures at the top level, as before P2 could be compared too.
      base: {rev, sha: baseSha, ...head.base},
      head: {sha: headSha, dirty, ...head.head},
      ratio: head.ratio,
      cpuRatio: head.cpuRatio,
      workloads,
      rounds,
    };
    const md = renderCompare(res, sides);
    process.stdout.write(`${md}\n`);
    if (!a['no-write']) {
      const dir = join(ROOT, 'bench', 'results');
      mkdirSync(dir, {recursive: true});
      const stamp = res.date.replace(/:/g, '-').replace(/\.\d+Z$/, 'Z');
      writeFileSync(join(dir, `${stamp}-compare.json`), `${JSON.stringify(res, null, 2)}\n`);
      writeFileSync(join(dir, `${stamp}-compare.md`), `${md}\n`);
      log(`wrote bench/results/${stamp}-compare.{json,md}`);
    }
    const bad = rounds.some((r) => r.base.p1?.lost || r.head.p1?.lost || r.base.p1?.duplicates || r.head.p1?.duplicates);
    return bad ? 1 : 0;
  } catch (e) {
    log(`FAILED: ${e?.message ?? e}`);
    return 1;
  } finally {
    process.off('SIGINT', onSigint);
    await stopChildren();
    removeWorktree();
  }
}

function renderCompare(res, sides) {
  const s = (x) => `${fmt(x.median, 0)} [${fmt(x.min, 0)}–${fmt(x.max, 0)}]`;
  const pct = (x) => `${x >= 1 ? '+' : ''}${fmt((x - 1) * 100, 1)} %`;
  const names = {p1: 'P1', p2: 'P2'};
  const what = {
    p1: `P1 (${fmt(res.options.n, 0)} no-op tasks end to end${res.options.payloadBytes ? ` with ${fmt(res.options.payloadBytes, 0)}-byte payloads` : ''}, ${res.options.queueType} queue, worker ${res.options.worker})`,
    p2: `P2 (${fmt(res.options.n, 0)} tasks submitted and flushed, nothing consuming)`,
  };
  const cpu = (x, k) =>
    `${fmt(x.cpuPerTask[k].median, 3)} / ${fmt(x.mariadbPerTask[k].median, 3)} / ${fmt(x.mariadbOursPerTask[k].median, 3)}`;
  const calls = (c) => `${fmt(c.tasksInsert, 2)} / ${fmt(c.doorbellsMark, 2)} / ${fmt(c.doorbellsForget, 2)}`;
  const lines = [
    `# Same-run comparison (${res.date})`,
    '',
    `${res.rounds.length} rounds of ${res.options.only.map((w) => what[w]).join(' and ')}, each side in its own process with a warm-up of ${fmt(res.options.warmupN, 0)}, alternating which side goes first.`,
    '',
  ];
  for (const w of res.options.only) {
    const x = res.workloads[w];
    lines.push(
      `## ${names[w]}`,
      '',
      `| side | ${names[w]} tasks/s, median [min–max] | CPU per task, core-ms (all / mariadbd / mariadbd for our connections) | producer store calls per 1,000 tasks (tasksInsert / doorbellsMark / doorbellsForget) |`,
      '| --- | ---: | ---: | ---: |',
      `| ${sides.base.label} | ${s(x.base)} | ${cpu(x, 'base')} | ${calls(x.producerCallsPerK.base)} |`,
      `| ${sides.head.label} | ${s(x.head)} | ${cpu(x, 'head')} | ${calls(x.producerCallsPerK.head)} |`,
      '',
      `Paired ratio this/base (median of per-round ratios): **${fmt(x.ratio.median, 3)}** (${pct(x.ratio.median)}; rounds ${fmt(x.ratio.min, 3)}–${fmt(x.ratio.max, 3)}). CPU per task this/base: ${fmt(x.cpuRatio.median, 3)} (all), ${fmt(x.mariadbOursRatio.median, 3)} (mariadbd for our connections).`,
      '',
    );
  }
  lines.push(
    `| round | order | ${res.options.only.map((w) => `base ${names[w]} | this ${names[w]} | this/base ${names[w]}`).join(' | ')} |`,
    `| ---: | --- | ${res.options.only.map(() => '---: | ---: | ---:').join(' | ')} |`,
    ...res.rounds.map(
      (r) =>
        `| ${r.round} | ${r.order.join(' → ')} | ${res.options.only.map((w) => `${fmt(r.base[w].value, 0)} | ${fmt(r.head[w].value, 0)} | ${fmt(r.ratio[w], 3)}`).join(' | ')} |`,
    ),
  );
  return lines.join('\n');
}
