/**
 * The generated reference (docs/reference/cli/*.md, the topic list of docs/reference/cli.md and the
 * settings table of docs/reference/configuration.md) is what `npm run docs` writes from the built
 * commands and settings now: a changed flag, description or example that was not regenerated fails
 * here, naming the pages. Needs dist/ (oclif reads the built commands), as every e2e test.
 */
import {execFile} from 'node:child_process';
import {promisify} from 'node:util';
import {describe, expect, it} from 'vitest';
import {ROOT} from '../helpers/spawn.js';

const run = promisify(execFile);

describe('the generated reference', () => {
  it('is up to date with the commands and settings (scripts/docs.mjs --check)', {timeout: 60_000}, async () => {
    const r = await run(process.execPath, ['scripts/docs.mjs', '--check'], {cwd: ROOT}).then(
      (x) => ({code: 0, stderr: x.stderr}),
      (e: {code?: number; stderr?: string}) => ({code: e.code ?? -1, stderr: e.stderr ?? ''}),
    );
    expect(r.stderr).not.toContain('out of date');
    expect(r.code, r.stderr).toBe(0);
  });
});
