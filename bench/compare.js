// Same-run comparison of P1 between this tree and another git revision:
//   node bench/run.js --compare <rev> [--runs N] [--n N] [--warmup-n N] [--quick] [--worker child|inproc]
//                     [--queue-types quorum|classic] [--phase-timeout T] [--payload-bytes B] [--no-write]
// (npm run bench -- --compare HEAD~1). Builds <rev> in a temporary `git worktree` (node_modules
// symlinked from this tree) with THIS tree's bench/ copied over it, so both sides run the same
// harness and only ax differs; builds this tree too. Then, in every round, runs P1 once for each
// side, in alternating order (base first in odd rounds, this tree first in even ones), each as its
// own `bench/run.js --only p1 --runs 1` process with its own warm-up. Reports each side's median
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

/** Runs `node <dir>/bench/run.js --only p1 --runs 1 …` and returns its P1 record (the JSON report's run). */
async function runP1(side, o, round) {
  const out = join(o.tmp, `${side.key}-${round}.json`);
  const args = [
    join(side.dir, 'bench', 'run.js'),
    '--only',
    'p1',
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
  const r = rep.runs?.[`p1.${o.queueType}`]?.[0];
  if (!r || !r.ok) throw new Error(`P1 of ${side.label} (round ${round}) did not finish: ${r?.error ?? 'no result'}`);
  return {value: r.value, cpuPerTask: r.cpuPerItem?.total, lost: r.correctness?.lost, duplicates: r.correctness?.duplicates};
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
    },
  });
  const int = (s, d) => (s === undefined ? d : Math.max(1, Number.parseInt(s, 10)));
  const n = int(a.n, a.quick ? 10_000 : 100_000);
  const o = {
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
        const run = runP1(sides[k], {...o, tmp}, round);
        if (!(await within(run, perRunMs))) throw new Error(`P1 of ${sides[k].label} (round ${round}) took over ${perRunMs / 1000} s`);
        r[k] = await run;
        log(`round ${round}/${o.runs} ${sides[k].label}: ${fmt(r[k].value, 0)} tasks/s (lost ${r[k].lost}, duplicates ${r[k].duplicates})`);
      }
      r.ratio = r.head.value / r.base.value;
      log(`round ${round}/${o.runs}: this/base ${fmt(r.ratio, 3)}`);
      rounds.push(r);
    }
    const res = {
      date: new Date().toISOString(),
      options: o,
      base: {rev, sha: baseSha, ...summary(rounds.map((r) => r.base.value))},
      head: {sha: headSha, dirty, ...summary(rounds.map((r) => r.head.value))},
      ratio: summary(rounds.map((r) => r.ratio)),
      cpuRatio: summary(rounds.map((r) => r.head.cpuPerTask / r.base.cpuPerTask)),
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
    const bad = rounds.some((r) => r.base.lost || r.head.lost || r.base.duplicates || r.head.duplicates);
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
  return [
    `# P1 same-run comparison (${res.date})`,
    '',
    `${res.rounds.length} rounds of P1 (${fmt(res.options.n, 0)} no-op tasks end to end${res.options.payloadBytes ? ` with ${fmt(res.options.payloadBytes, 0)}-byte payloads` : ''}, ${res.options.queueType} queue, worker ${res.options.worker}), each side in its own process with a warm-up of ${fmt(res.options.warmupN, 0)}, alternating which side goes first.`,
    '',
    '| side | P1 tasks/s, median [min–max] |',
    '| --- | ---: |',
    `| ${sides.base.label} | ${s(res.base)} |`,
    `| ${sides.head.label} | ${s(res.head)} |`,
    '',
    `Paired ratio this/base (median of per-round ratios): **${fmt(res.ratio.median, 3)}** (${pct(res.ratio.median)}; rounds ${fmt(res.ratio.min, 3)}–${fmt(res.ratio.max, 3)}). CPU per task this/base: ${fmt(res.cpuRatio.median, 3)}.`,
    '',
    '| round | order | base tasks/s | this tasks/s | this/base |',
    '| ---: | --- | ---: | ---: | ---: |',
    ...res.rounds.map(
      (r) => `| ${r.round} | ${r.order.join(' → ')} | ${fmt(r.base.value, 0)} | ${fmt(r.head.value, 0)} | ${fmt(r.ratio, 3)} |`,
    ),
  ].join('\n');
}
