/**
 * The tier lists (test/tiers.ts) name files that exist, each once: a renamed or deleted file would
 * otherwise drop out of its tier silently (it would still run, in `full`).
 */
import {existsSync} from 'node:fs';
import {join} from 'node:path';
import {describe, expect, it} from 'vitest';
import {ALONE, FAST_INTEGRATION, SOAK, SOAK_ALONE} from '../tiers.js';
import {ROOT} from '../helpers/spawn.js';

describe('test tiers', () => {
  const listed = [...FAST_INTEGRATION, ...ALONE, ...SOAK, ...SOAK_ALONE];

  it('lists only test files that exist', () => {
    expect(listed.filter((f) => !f.endsWith('.test.ts') || !existsSync(join(ROOT, f)))).toEqual([]);
  });

  it('lists each file once, in one tier', () => {
    expect(listed.filter((f, i) => listed.indexOf(f) !== i)).toEqual([]);
  });
});
