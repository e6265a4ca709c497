// Regenerates the generated parts of the documentation from the built code (run `npm run build`
// first: both read dist/), so the docs cannot drift from the code:
//   - docs/reference/cli/<topic>.md, one page per command topic, and the topic list in
//     docs/reference/cli.md between <!-- commands --> and <!-- commandsstop --> (oclif readme --multi);
//   - the settings table in docs/reference/configuration.md between <!-- config --> and
//     <!-- configstop --> (src/core/config/describe.ts).
// README.md is never touched. Deterministic and idempotent: the CLI pages are written afresh into an
// emptied directory (a removed topic leaves no page behind), the help is wrapped at a fixed width,
// and a second run changes nothing.
//   npm run docs                      (build, then write the files)
//   node scripts/docs.mjs --check     (write into a scratch copy and compare: exit 1 and name the
//                                      files that differ; test/e2e/docs-generated.test.ts runs it)
import {execFileSync} from 'node:child_process';
import {cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs';
import {configTable} from '../dist/core/config/describe.js';

const REF = 'docs/reference';

/** Replaces what lies between two marker comments of a file (the markers stay). */
function splice(file, start, stop, body) {
  const text = readFileSync(file, 'utf8');
  const a = text.indexOf(start);
  const b = text.indexOf(stop);
  if (a < 0 || b < a) throw new Error(`${file}: markers ${start} … ${stop} not found`);
  writeFileSync(file, `${text.slice(0, a + start.length)}\n${body.trim()}\n${text.slice(b)}`);
}

/** Trailing spaces off, runs of blank lines down to one, one final newline (what oclif leaves varies). */
const tidy = (md) =>
  `${md
    .replace(/[ \t]+$/gm, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim()}\n`;

/** Writes the generated parts under `root` (a path relative to the repository root, '' for in place). */
function generate(root) {
  const ref = `${root}${REF}`;
  const cliDir = `${ref}/cli`;
  const cliIndex = `${ref}/cli.md`;
  // 1. The CLI reference, per topic.
  rmSync(cliDir, {recursive: true, force: true});
  execFileSync(
    'node_modules/.bin/oclif',
    ['readme', '--multi', '--no-source-links', '--output-dir', cliDir, '--readme-path', cliIndex],
    // COLUMNS pinned: oclif wraps the help at $COLUMNS, which a terminal may set. NODE_ENV=production:
    // under a test runner (NODE_ENV=test) oclif would look for the help class in src/*.ts instead of dist/.
    {stdio: ['ignore', 'ignore', 'inherit'], env: {...process.env, COLUMNS: '120', NODE_ENV: 'production'}},
  );
  for (const f of readdirSync(cliDir)) writeFileSync(`${cliDir}/${f}`, tidy(readFileSync(`${cliDir}/${f}`, 'utf8')));
  // oclif links the topic pages by their path from the repository root; the index lives beside them.
  const index = readFileSync(cliIndex, 'utf8');
  const start = index.indexOf('<!-- commands -->');
  const stop = index.indexOf('<!-- commandsstop -->');
  const list = index
    .slice(start + '<!-- commands -->'.length, stop)
    .replace(/^# Command Topics\s*/m, '')
    .replace(/\]\([^)]*?docs\/reference\/cli\//g, '](cli/');
  writeFileSync(cliIndex, `${index.slice(0, start)}<!-- commands -->\n${tidy(list)}${index.slice(stop)}`);
  // 2. The configuration table.
  splice(`${ref}/configuration.md`, '<!-- config -->', '<!-- configstop -->', configTable());
}

/** Every generated file under `root`, as paths relative to it. */
function generatedFiles(root) {
  const cli = existsSync(`${root}${REF}/cli`) ? readdirSync(`${root}${REF}/cli`).map((f) => `${REF}/cli/${f}`) : [];
  return [`${REF}/cli.md`, `${REF}/configuration.md`, ...cli].sort();
}

if (process.argv.includes('--check')) {
  // Inside the repository: oclif takes its paths relative to the working directory.
  const scratch = `.docs-check-${process.pid}/`;
  try {
    mkdirSync(`${scratch}${REF}`, {recursive: true});
    for (const f of ['cli.md', 'configuration.md']) cpSync(`${REF}/${f}`, `${scratch}${REF}/${f}`);
    generate(scratch);
    const names = [...new Set([...generatedFiles(''), ...generatedFiles(scratch)])].sort();
    const differ = names.filter(
      (f) => !existsSync(f) || !existsSync(`${scratch}${f}`) || readFileSync(f, 'utf8') !== readFileSync(`${scratch}${f}`, 'utf8'),
    );
    if (differ.length > 0) {
      console.error(`out of date (run npm run docs): ${differ.join(', ')}`);
      process.exitCode = 1;
    }
  } finally {
    rmSync(scratch, {recursive: true, force: true});
  }
} else generate('');
