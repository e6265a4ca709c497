/**
 * The shipped Prometheus files (deploy/prometheus/): the rules load (`promtool check rules`), their
 * unit tests on synthetic series pass (`promtool test rules`: a flat 15k backlog does not page, a
 * growing one does, …), the scrape example is valid, and every alert has its runbook in docs/observability.md.
 */
import {execFile} from 'node:child_process';
import {readFileSync} from 'node:fs';
import {promisify} from 'node:util';
import {describe, expect, it} from 'vitest';
import {ROOT} from '../helpers/spawn.js';

const run = promisify(execFile);
const DIR = `${ROOT}deploy/prometheus`;

async function promtool(...args: string[]): Promise<{code: number; out: string}> {
  try {
    const r = await run('promtool', args, {cwd: DIR});
    return {code: 0, out: r.stdout + r.stderr};
  } catch (e) {
    const x = e as {code?: number; stdout?: string; stderr?: string};
    return {code: typeof x.code === 'number' ? x.code : -1, out: `${x.stdout ?? ''}${x.stderr ?? ''}`};
  }
}

describe('deploy/prometheus', () => {
  it('the rules load', async () => {
    const r = await promtool('check', 'rules', 'ax-rules.yml');
    expect(r.out).toContain('SUCCESS: 10 rules found');
    expect(r.code).toBe(0);
  });

  it('the rules pass their unit tests on synthetic series', async () => {
    const tests = readFileSync(`${DIR}/ax-rules.test.yml`, 'utf8');
    expect(tests).toContain('a flat 15k backlog does not page, a growing one does');
    const r = await promtool('test', 'rules', 'ax-rules.test.yml');
    expect(r.out, r.out).toContain('SUCCESS');
    expect(r.code).toBe(0);
  });

  it('the scrape example is a valid configuration', async () => {
    const r = await promtool('check', 'config', 'prometheus.yml');
    expect(r.code, r.out).toBe(0);
  });

  it('every alert has a runbook in docs/observability.md "Alerts"', () => {
    const rules = readFileSync(`${DIR}/ax-rules.yml`, 'utf8');
    const page = readFileSync(`${ROOT}docs/observability.md`, 'utf8');
    const alerts = [...rules.matchAll(/- alert: (\w+)/g)].map((m) => m[1]!);
    expect(alerts.length).toBe(10);
    for (const a of alerts) {
      expect(rules).toContain(`runbook: 'docs/observability.md#${a.toLowerCase()}'`);
      expect(page, a).toMatch(new RegExp(`^### ${a}$`, 'm'));
    }
  });
});
