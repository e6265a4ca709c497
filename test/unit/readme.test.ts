import {readFileSync} from 'node:fs';
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
  it('lists every command in its CLI reference', () => {
    for (const cmd of [
      'ax migrate',
      'ax submit',
      'ax worker',
      'ax reconcile',
      'ax tasks list',
      'ax tasks show',
      'ax tasks stats',
      'ax tasks cancel',
    ]) {
      expect(readme).toContain(`## \`${cmd}`);
    }
  });
});
