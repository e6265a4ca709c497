/** ax top's flow control over the type registry: states per type, and p through TypesAdmin with the reason "ax top". */
import {describe, expect, it, vi} from 'vitest';
import {AxError} from '../../src/core/errors.js';
import type {TypeRecord} from '../../src/core/store/types.js';
import type {TypesAdmin} from '../../src/core/types/admin.js';
import {flowStatesOf, TOP_REASON, topFlowControl} from '../../src/core/types/top-flow.js';
import {typeRecord} from '../helpers/type-record.js';

const at = new Date('2026-12-01T12:00:00Z');
const rec = (type: string, over: Partial<TypeRecord> = {}): TypeRecord => typeRecord(type, at, over);

function admin(): TypesAdmin {
  return {
    pause: vi.fn(async (type: string) => ({type, changed: true, paused: {by: 'op', reason: TOP_REASON, since: at}})),
    resume: vi.fn(async (type: string) => ({type, released: 3, unrung: 0})),
  } as unknown as TypesAdmin;
}

describe('ax top flow control', () => {
  it("maps the registry's breaker (half_open → half-open) and pause per type", () => {
    const m = flowStatesOf([rec('a', {paused: true}), rec('b', {breaker: {state: 'half_open', until: null, openings: 1, changedAt: at}})]);
    expect(Object.fromEntries(m)).toEqual({
      a: {breaker: 'closed', paused: true, parked: 0},
      b: {breaker: 'half-open', paused: false, parked: 0},
    });
  });

  it('parked per type from the same registry read (TypesReport.parked, every kind added up), types without a row too', () => {
    const m = flowStatesOf([rec('a', {paused: true})], {a: {paused: 40, unhandled: 2}, c: {breaker: 7}});
    expect(Object.fromEntries(m)).toEqual({
      a: {breaker: 'closed', paused: true, parked: 42},
      c: {breaker: 'closed', paused: false, parked: 7},
    });
  });

  it('pauses and resumes through TypesAdmin as the operator, with the reason "ax top"', async () => {
    const a = admin();
    const operators: string[] = [];
    const flow = topFlowControl({
      report: async () => ({all: [], parked: {}}),
      withAdmin: async (operator, fn) => {
        operators.push(operator);
        return fn(a);
      },
    });
    expect(await flow.setPaused({type: 'x', paused: true, operator: 'alice'})).toMatch(/^paused x/);
    expect(a.pause).toHaveBeenCalledWith('x', TOP_REASON);
    expect(await flow.setPaused({type: 'x', paused: false, operator: 'alice'})).toBe('resumed x: 3 parked tasks released');
    expect(a.resume).toHaveBeenCalledWith('x', {reason: TOP_REASON});
    expect(operators).toEqual(['alice', 'alice']);
    // Resumed by someone else meanwhile: the conflict is the answer, not a failure.
    (a.resume as ReturnType<typeof vi.fn>).mockRejectedValueOnce(new AxError('conflict', 'type "x" is not paused: nothing to resume'));
    expect(await flow.setPaused({type: 'x', paused: false, operator: 'alice'})).toBe('type "x" is not paused: nothing to resume');
  });
});
