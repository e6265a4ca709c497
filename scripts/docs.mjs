// Regenerates the generated parts of the documentation from the built code (run `npm run build`
// first: both read dist/), so the docs cannot drift from the code. test/unit/docs.test.ts checks
// that what is committed is what this writes.
//   - docs/reference/cli/<topic>.md, one page per command topic, and the topic list in
//     docs/reference/cli.md between <!-- commands --> and <!-- commandsstop --> (oclif readme --multi);
//   - the settings table in docs/reference/configuration.md between <!-- config --> and
//     <!-- configstop --> (src/core/config/describe.ts).
// README.md is never touched. Deterministic and idempotent: the CLI pages are written afresh into an
// emptied directory (a removed topic leaves no page behind), and a second run changes nothing.
//   npm run docs
import {execFileSync} from 'node:child_process';
import {readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs';
import {configTable} from '../dist/core/config/describe.js';

const CLI_DIR = 'docs/reference/cli';
const CLI_INDEX = 'docs/reference/cli.md';
const CONFIG = 'docs/reference/configuration.md';

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

// 1. The CLI reference, per topic.
rmSync(CLI_DIR, {recursive: true, force: true});
execFileSync(
  'node_modules/.bin/oclif',
  ['readme', '--multi', '--no-source-links', '--output-dir', CLI_DIR, '--readme-path', CLI_INDEX],
  // COLUMNS pinned: oclif wraps the help at $COLUMNS, which a terminal may set.
  {stdio: ['ignore', 'ignore', 'inherit'], env: {...process.env, COLUMNS: '120'}},
);
for (const f of readdirSync(CLI_DIR)) {
  const path = `${CLI_DIR}/${f}`;
  writeFileSync(path, tidy(readFileSync(path, 'utf8')));
}
// oclif links the topic pages by their path from the repository root; the index lives beside them.
const index = readFileSync(CLI_INDEX, 'utf8');
const start = index.indexOf('<!-- commands -->');
const stop = index.indexOf('<!-- commandsstop -->');
const list = index
  .slice(start + '<!-- commands -->'.length, stop)
  .replace(/^# Command Topics\s*/m, '')
  .replace(/\]\(\/?(?:\.\/)?docs\/reference\/cli\//g, '](cli/');
writeFileSync(CLI_INDEX, `${index.slice(0, start)}<!-- commands -->\n${tidy(list)}${index.slice(stop)}`);

// 2. The configuration table.
splice(CONFIG, '<!-- config -->', '<!-- configstop -->', configTable());
