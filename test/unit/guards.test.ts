/**
 * The guards of state-changing UPDATEs come from the transition table: for every outcome
 * transition the generated WHERE names exactly the table's source states, the fence when the
 * table says fenced, and an expired lease when it says so. Also: the stack kept per failed attempt.
 */
import {describe, expect, it} from 'vitest';
import {fenceCondition, guardedWhere, rungWhere} from '../../src/core/store/mysql/guards.js';
import {outcomeUpdateSql} from '../../src/core/store/mysql/outcomes.js';
import {claimUpdateSql} from '../../src/core/store/mysql/tasks-claim.js';
import {doorbellsForgetSql} from '../../src/core/store/mysql/doorbells.js';
import {MAX_STACK_LENGTH, clipStack} from '../../src/core/store/mysql/rows.js';
import type {Outcome} from '../../src/core/store/types.js';
import {STACK_BYTES, STACK_LINES, stackHead} from '../../src/core/errors.js';
import {AxError} from '../../src/core/errors.js';
import {TRANSITIONS, assertTransition, guardOf, type TransitionName} from '../../src/core/task/state.js';

const OUTCOMES: Record<string, Outcome> = {
  complete: {kind: 'complete', id: 'a', fence: 2},
  fail: {kind: 'fail', id: 'a', fence: 2, error: 'e', retryDelayMs: 1000},
  deadLetter: {kind: 'deadLetter', id: 'a', fence: 2, error: 'e'},
  release: {kind: 'release', id: 'a', fence: 2, reason: 'r'},
  rescue: {kind: 'rescue', id: 'a', fence: 2, error: 'e', retryDelayMs: 0},
  rescueDeadLetter: {kind: 'rescueDeadLetter', id: 'a', fence: 2, error: 'e'},
  park: {kind: 'park', id: 'a', fence: 2, reason: 'parked: type paused', delayMs: 5000, parked: 'paused'},
};

describe('guards from the transition table', () => {
  it('every transition: state IN (its sources), fence and lease exactly as the table says', () => {
    for (const t of Object.keys(TRANSITIONS) as TransitionName[]) {
      const g = guardOf(t);
      const w = guardedWhere(t, [
        {id: 'a', fence: 2},
        {id: 'b', fence: 2},
      ]);
      expect(w.sql, t).toContain(`state IN (${g.from.map((s) => `'${s}'`).join(', ')})`);
      expect(w.sql.includes('fence = ?'), `${t} fenced`).toBe(g.fenced);
      expect(w.sql.includes('lease_until < NOW(3)'), `${t} leaseExpired`).toBe(g.leaseExpired);
      expect(w.params.slice(0, 2)).toEqual(['a', 'b']);
      if (g.fenced) expect(w.params[2]).toBe(2);
    }
  });

  it('every outcome kind is a transition from running, fenced, and its UPDATE carries that guard and target', () => {
    for (const [kind, o] of Object.entries(OUTCOMES)) {
      const t = kind as TransitionName;
      expect(guardOf(t).from, kind).toEqual(['running']);
      expect(guardOf(t).fenced, kind).toBe(true);
      const q = outcomeUpdateSql(t, [o]);
      expect(q.sql, kind).toContain(`SET state = '${TRANSITIONS[t].to}'`);
      expect(q.sql, kind).toContain(guardedWhere(t, [o]).sql);
    }
    expect(outcomeUpdateSql('rescue', [OUTCOMES.rescue!]).sql).toContain('lease_until < NOW(3)');
    // A park gives the attempt back and is due after its delay (5 s = 5e6 µs).
    const park = outcomeUpdateSql('park', [OUTCOMES.park!]);
    expect(park.sql).toContain('attempt = attempt - 1');
    expect(park.params).toContain(5_000_000);
    expect(outcomeUpdateSql('fail', [OUTCOMES.fail!]).sql).not.toContain('lease_until < NOW(3)');
  });

  it('the claim UPDATE carries the fence its read saw and the due guard, from the table', () => {
    expect(guardOf('claim')).toMatchObject({fenced: true, due: true, leaseExpired: false});
    const q = claimUpdateSql(
      [
        {id: 'a', fence: 0},
        {id: 'b', fence: 3},
      ],
      'w1',
      30_000,
    );
    expect(q.sql).toContain(
      guardedWhere('claim', [
        {id: 'a', fence: 0},
        {id: 'b', fence: 3},
      ]).sql,
    );
    expect(q.sql).toContain("state IN ('submitted', 'failed')");
    expect(q.sql).toContain('(fence = ? AND id IN (?)) OR (fence = ? AND id IN (?))');
    expect(q.sql).toContain('run_at <= NOW(3)');
    expect(q.params).toEqual(['w1', 30_000_000, 'a', 'b', 0, 'a', 3, 'b']);
    // Only the claim is due-guarded.
    for (const t of Object.keys(TRANSITIONS) as TransitionName[]) {
      expect(guardedWhere(t, [{id: 'a', fence: 1}]).sql.includes('run_at <= NOW(3)'), t).toBe(t === 'claim');
    }
  });

  it('the not-due reset moves the fence on, guarded by the fence read', () => {
    const q = doorbellsForgetSql([{id: 'a', fence: 4}]);
    expect(q.sql).toMatch(/SET published_at = NULL, fence = fence \+ 1/);
    expect(q.sql).toContain("state IN ('submitted', 'failed') AND fence = ?");
    expect(q.params).toEqual(['a', 4]);
  });

  it('groups fences: one `fence = ?` for a single fence, one IN per fence otherwise', () => {
    expect(fenceCondition([{id: 'a', fence: 0}])).toEqual({sql: 'fence = ?', params: [0]});
    expect(
      fenceCondition([
        {id: 'a', fence: 1},
        {id: 'b', fence: 3},
        {id: 'c', fence: 1},
      ]),
    ).toEqual({sql: '((fence = ? AND id IN (?, ?)) OR (fence = ? AND id IN (?)))', params: [1, 'a', 'c', 3, 'b']});
    expect(rungWhere([{id: 'a', fence: 0}]).sql).toBe("id IN (?) AND state IN ('submitted', 'failed') AND fence = ?");
  });

  it('assertTransition allows what the table allows and refuses the rest with conflict', () => {
    expect(assertTransition('claim', 'failed')).toBe('running');
    expect(assertTransition('release', 'running')).toBe('failed');
    expect(() => assertTransition('complete', 'failed')).toThrow(AxError);
    expect(() => assertTransition('cancel', 'running')).toThrow(/cancel cannot start from running/);
  });
});

describe('stack per failed attempt', () => {
  it('keeps the first lines of a stack, at most 2 KiB, and nothing for a non-Error', () => {
    const e = new Error('boom');
    e.stack = ['Error: boom', ...Array.from({length: 30}, (_, i) => `    at f${i} (file.js:${i}:1)`)].join('\n');
    const head = stackHead(e)!;
    expect(head.split('\n')).toHaveLength(STACK_LINES);
    expect(head.startsWith('Error: boom\n    at f0')).toBe(true);
    const long = new Error('x');
    long.stack = `Error: ${'x'.repeat(5000)}`;
    expect(stackHead(long)!.length).toBe(STACK_BYTES);
    expect(stackHead('a string')).toBeUndefined();
    expect(stackHead({message: 'no stack'})).toBeUndefined();
    expect(clipStack('y'.repeat(MAX_STACK_LENGTH + 10))!.length).toBe(MAX_STACK_LENGTH);
    expect(clipStack('')).toBeNull();
  });
});
