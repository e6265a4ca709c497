#!/usr/bin/env node
// Builds dist/ without ever taking it away from the other `ax` processes of the checkout (a
// worker, `ax top`, a test run): tsc compiles into a fresh directory inside dist/ (.next-<pid>-…),
// then each file is moved over its old version with rename(2), which replaces a file atomically,
// and only then are the files the new build no longer has (moved or deleted sources) removed. So a
// module present in both builds exists at every instant, and a failed compile leaves dist/ as it
// was. dist/.build-stamp records when the last complete build started.
//
//   node scripts/build.mjs              always build (npm run build)
//   node scripts/build.mjs --if-stale   build only when a source, a tsconfig or this script is
//                                       newer than the stamp (npm test, npm run demo, npm run bench
//                                       through scripts/setup.sh)
//   --project <tsconfig> --out <dir>    another project or output (the tests use a small one)
//
// The default build also writes oclif.manifest.json (the commands' ids, flags and help), so `ax`
// finds a command without importing every command module first: 0.6 s of CPU per invocation
// instead of 0.9 s here, which the e2e tests pay hundreds of times. A failed manifest is removed
// (oclif then reads the commands themselves, slower but right); none is written without oclif
// (a production install builds nothing anyway).
import {spawnSync} from 'node:child_process';
import {existsSync, mkdirSync, readdirSync, renameSync, rmSync, rmdirSync, statSync, utimesSync, writeFileSync} from 'node:fs';
import {createRequire} from 'node:module';
import {dirname, join, relative, resolve} from 'node:path';
import {fileURLToPath} from 'node:url';
import {newestMtime} from './lib/mtime.mjs';

const STAMP = '.build-stamp';
const NEXT = '.next-';

/** Every file under `dir` (relative paths), directories left out; [] when it does not exist. */
function filesUnder(dir) {
  if (!existsSync(dir)) return [];
  const out = [];
  const walk = (d) => {
    for (const e of readdirSync(d, {withFileTypes: true})) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(relative(dir, p));
    }
  };
  walk(dir);
  return out;
}

/**
 * Moves the build in `next` into `out`: directories first, then every file renamed over its old
 * version (atomic per file), then the files of `out` the new build lacks removed (the stamp and
 * unfinished builds in `out` excepted) and the directories left empty. `next` is left empty.
 */
export function swapInto(next, out) {
  const fresh = filesUnder(next);
  for (const f of fresh) mkdirSync(dirname(join(out, f)), {recursive: true});
  for (const f of fresh) renameSync(join(next, f), join(out, f));
  const keep = new Set(fresh);
  for (const f of filesUnder(out)) if (!keep.has(f) && f !== STAMP && !f.startsWith(NEXT)) rmSync(join(out, f), {force: true});
  const prune = (d) => {
    for (const e of readdirSync(d, {withFileTypes: true})) {
      if (!e.isDirectory() || e.name.startsWith(NEXT)) continue;
      const p = join(d, e.name);
      prune(p);
      if (readdirSync(p).length === 0) rmdirSync(p);
    }
  };
  prune(out);
}

/** oclif.manifest.json for the build just swapped in; a stale one is removed when that fails. */
function writeManifest(root) {
  const manifest = join(root, 'oclif.manifest.json');
  let oclif;
  try {
    oclif = createRequire(import.meta.url).resolve('oclif/bin/run.js');
  } catch {
    rmSync(manifest, {force: true});
    return;
  }
  const r = spawnSync(process.execPath, [oclif, 'manifest'], {cwd: root, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8'});
  if (r.status !== 0) {
    console.error(`${r.stderr ?? ''}[build] oclif manifest failed: removed, ax reads the commands themselves`);
    rmSync(manifest, {force: true});
  }
}

/** Whether a process with this pid is alive (an unfinished build of a live process is left alone). */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

function main(argv) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const arg = (name, dflt) => {
    const i = argv.indexOf(name);
    return i >= 0 && argv[i + 1] !== undefined ? resolve(argv[i + 1]) : dflt;
  };
  const project = arg('--project', join(root, 'tsconfig.build.json'));
  const out = arg('--out', join(root, 'dist'));
  const sources = [
    join(dirname(project), 'src'),
    dirname(project) === root ? join(root, 'tsconfig.json') : project,
    project,
    fileURLToPath(import.meta.url),
  ];
  const stamp = join(out, STAMP);
  if (argv.includes('--if-stale') && existsSync(stamp) && newestMtime(sources) < statSync(stamp).mtimeMs) {
    console.error(`[build] ${relative(process.cwd(), out) || out} is current`);
    return 0;
  }
  mkdirSync(out, {recursive: true});
  // Builds a killed process left behind.
  for (const e of readdirSync(out))
    if (e.startsWith(NEXT) && !alive(Number(e.slice(NEXT.length).split('-')[0]))) rmSync(join(out, e), {recursive: true, force: true});
  const started = new Date();
  const next = join(out, `${NEXT}${process.pid}-${started.getTime()}`);
  try {
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const r = spawnSync(process.execPath, [tsc, '-p', project, '--outDir', next], {stdio: 'inherit'});
    if (r.status !== 0) {
      console.error(`[build] tsc failed: ${relative(process.cwd(), out) || out} is left as it was`);
      return r.status ?? 1;
    }
    swapInto(next, out);
    if (project === join(root, 'tsconfig.build.json') && out === join(root, 'dist')) writeManifest(root);
    writeFileSync(stamp, '');
    utimesSync(stamp, started, started); // sources changed during the build make the next --if-stale build again
    return 0;
  } finally {
    rmSync(next, {recursive: true, force: true});
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exitCode = main(process.argv.slice(2));
