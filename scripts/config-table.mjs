// Writes the README's configuration table from the settings table in src/core/config/config.ts,
// so the documentation cannot drift from the code (test/unit/readme.test.ts checks it).
//   npm run docs   (builds, then rewrites the config and command sections of README.md)
import {readFileSync, writeFileSync} from 'node:fs';
import {configTable} from '../dist/core/config/describe.js';

const readme = readFileSync('README.md', 'utf8');
const start = '<!-- config -->';
const stop = '<!-- configstop -->';
const next = `${readme.slice(0, readme.indexOf(start) + start.length)}\n${configTable()}\n${readme.slice(readme.indexOf(stop))}`;
writeFileSync('README.md', next);
