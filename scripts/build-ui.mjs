#!/usr/bin/env node
// Builds the console's static assets (ui/, React + Vite) into dist-web/ at the repo root:
// index.html and hashed files under assets/. The server (`ax web`) serves that folder as is.
// dist-web/.build-stamp records when the last complete build started.
//
//   node scripts/build-ui.mjs              always build
//   node scripts/build-ui.mjs --if-stale   build only when something under ui/ (or this script)
//                                          is newer than the stamp
//   --out <dir>                            another output folder
import {existsSync, readdirSync, statSync, utimesSync, writeFileSync} from 'node:fs';
import {dirname, join, relative, resolve} from 'node:path';
import {fileURLToPath} from 'node:url';
import {newestMtime} from './lib/mtime.mjs';

const STAMP = '.build-stamp';

async function main(argv) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const ui = join(root, 'ui');
  const i = argv.indexOf('--out');
  const out = i >= 0 && argv[i + 1] ? resolve(argv[i + 1]) : join(root, 'dist-web');
  const stamp = join(out, STAMP);
  if (argv.includes('--if-stale') && existsSync(stamp) && newestMtime([ui, fileURLToPath(import.meta.url)]) < statSync(stamp).mtimeMs) {
    console.error(`[build-ui] ${relative(process.cwd(), out) || out} is current`);
    return 0;
  }
  const started = new Date();
  const {build} = await import('vite');
  try {
    await build({
      root: ui,
      configFile: join(ui, 'vite.config.ts'),
      logLevel: 'warn',
      build: {outDir: out, emptyOutDir: true},
    });
  } catch (e) {
    console.error(`[build-ui] vite build failed: ${e?.message ?? e}`);
    return 1;
  }
  writeFileSync(stamp, '');
  utimesSync(stamp, started, started); // a source changed during the build makes the next --if-stale build again
  console.error(`[build-ui] ${relative(process.cwd(), out) || out} built in ${Date.now() - started.getTime()} ms`);
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exitCode = await main(process.argv.slice(2));
