import {readdirSync, readFileSync} from 'node:fs';
import {describe, expect, it} from 'vitest';
import {configTable} from '../../src/core/config/describe.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

describe('README', () => {
  it('documents every setting with its env variable and default (npm run docs regenerates it)', () => {
    const section = readme
      .slice(readme.indexOf('<!-- config -->') + '<!-- config -->'.length, readme.indexOf('<!-- configstop -->'))
      .trim();
    expect(section).toBe(configTable());
  });
  it('lists every command in its CLI reference (npm run docs regenerates it)', () => {
    const dir = new URL('../../src/commands/', import.meta.url);
    const commands = readdirSync(dir, {recursive: true, encoding: 'utf8'})
      .filter((f) => f.endsWith('.ts'))
      .map((f) => `ax ${f.replace(/\.ts$/, '').split(/[\\/]/).join(' ')}`);
    expect(commands.length).toBeGreaterThan(15);
    for (const cmd of commands) expect(readme, cmd).toContain(`## \`${cmd}`);
  });
});
