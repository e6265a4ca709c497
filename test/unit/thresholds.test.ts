/**
 * The alert rules (deploy/prometheus/ax-rules.yml) repeat core/thresholds.ts' numbers as PromQL
 * literals; `ax top` and `ax workers` use the constants. This keeps the two equal: each rule's
 * block is cut out of the file (no YAML dependency: the file's `- alert:` layout is fixed) and its
 * expression, `for:` and summary are checked against the constants.
 */
import {readFileSync} from 'node:fs';
import {describe, expect, it} from 'vitest';
import {BACKLOG_GROWING_MS, BACKLOG_P1, BACKLOG_P2, SCALE_OUT_TASKS_PER_S} from '../../src/core/thresholds.js';
import {ROOT} from '../helpers/spawn.js';

const RULES = readFileSync(`${ROOT}deploy/prometheus/ax-rules.yml`, 'utf8');

/** The text of one rule, from its `- alert: name` line to the next rule. */
function rule(name: string): {expr: string; for: string | null; summary: string} {
  const start = RULES.indexOf(`- alert: ${name}\n`);
  expect(start, `rule ${name}`).toBeGreaterThan(0);
  const end = RULES.indexOf('- alert:', start + 1);
  const block = RULES.slice(start, end < 0 ? undefined : end);
  const expr = /expr: (\|\n(?: {10,}.*\n)+|.*\n)/.exec(block)?.[1] ?? '';
  return {
    expr: expr.replace(/^\|/, '').replace(/\s+/g, ' ').trim(),
    for: /\n\s+for: (\S+)/.exec(block)?.[1] ?? null,
    summary: /summary: '(.*)'/.exec(block)?.[1] ?? '',
  };
}

const minutes = `${BACKLOG_GROWING_MS / 60_000}m`;
const k = (n: number): string => `${n / 1000}k`;

describe('alert thresholds: deploy/prometheus/ax-rules.yml = core/thresholds.ts', () => {
  it('P2: due backlog above BACKLOG_P2, growing over BACKLOG_GROWING_MS, for BACKLOG_GROWING_MS', () => {
    const r = rule('AxBacklogGrowing');
    expect(r.expr).toContain(`(ax_backlog_tasks{state="due"})) > ${BACKLOG_P2} and on (cell)`);
    expect(r.expr).toContain(`(deriv(ax_backlog_tasks{state="due"}[${minutes}]))) > 0`);
    expect(r.for).toBe(minutes);
    expect(r.summary).toContain(`over ${k(BACKLOG_P2)} due tasks`);
  });

  it('P1: due backlog above BACKLOG_P1', () => {
    const r = rule('AxBacklogCritical');
    expect(r.expr).toBe(`sum by (cell) (max by (cell, type) (ax_backlog_tasks{state="due"})) > ${BACKLOG_P1}`);
    expect(r.summary).toContain(`over ${k(BACKLOG_P1)} due tasks`);
  });

  it('scale out: one worker above SCALE_OUT_TASKS_PER_S', () => {
    const r = rule('AxWorkerScaleOut');
    expect(r.expr).toBe(`sum by (cell, instance) (rate(ax_attempts_total[5m])) > ${SCALE_OUT_TASKS_PER_S}`);
    expect(r.summary).toContain(`over ${SCALE_OUT_TASKS_PER_S.toLocaleString('en-US')} tasks/s`);
  });
});
