/** ax top's flow control over the type registry: states per type, and p through TypesAdmin with the reason "ax top". */
import {describe, expect, it, vi} from 'vitest';
import {AxError} from '../../src/core/errors.js';
import type {BacklogReport, TypeKeysReport, TypeRecord} from '../../src/core/store/types.js';
import type {TypesAdmin} from '../../src/core/types/admin.js';
import {flowStatesOf, KEYS_REFRESH_MS, KEYS_TYPES, TOP_REASON, topFlowControl} from '../../src/core/types/top-flow.js';
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

  describe('the dominant task key of a type', () => {
    const backlog = (rows: Array<[string, number]>): BacklogReport => ({
      at,
      rows: rows.map(([type, due]) => ({type, due, delayed: 0, running: 0, dead: 0, oldestDueAt: null})),
    });
    const report = (key: string, n: number): TypeKeysReport => ({
      backlog: n,
      withBacklog: 1,
      running: 0,
      withRunning: 0,
      top: [{key, backlog: n, running: 0}],
    });
    function setup(read: (type: string) => Promise<TypeKeysReport>) {
      let now = 0;
      const spy = vi.fn(read);
      const flow = topFlowControl({
        report: async () => ({all: [rec('a', {paused: true})], parked: {}}),
        withAdmin: async (_op, fn) => fn(admin()),
        keys: {read: spy, now: () => now},
      });
      return {flow, spy, advance: (ms: number) => (now += ms)};
    }

    it('is read for the types with a backlog of 100 or more and shown with its share; none without the backlog', async () => {
      const {flow, spy} = setup(async (type) => (type === 'a' ? report('tenant:42', 930) : report('tenant:1', 40)));
      const m = await flow.flowStates(
        backlog([
          ['a', 1000],
          ['b', 150],
          ['c', 99],
        ]),
      );
      expect(m.get('a')).toEqual({breaker: 'closed', paused: true, parked: 0, dominant: {key: 'tenant:42', share: 0.93}});
      expect(m.get('b')).toBeUndefined(); // read: 40 of 150 is no majority
      expect(spy.mock.calls.map(([t]) => t).sort()).toEqual(['a', 'b']);
      // Without the backlog (a caller of before): no keys read.
      expect((await flow.flowStates()).get('a')).toEqual({breaker: 'closed', paused: true, parked: 0});
    });

    it('reads a type again only after KEYS_REFRESH_MS, in the background, showing the previous read meanwhile', async () => {
      let n = 600;
      const {flow, spy, advance} = setup(async () => report('k', n));
      expect((await flow.flowStates(backlog([['a', 1000]]))).get('a')?.dominant).toEqual({key: 'k', share: 0.6});
      n = 100;
      advance(KEYS_REFRESH_MS - 1);
      await flow.flowStates(backlog([['a', 1000]]));
      expect(spy).toHaveBeenCalledTimes(1);
      advance(1);
      // Stale: read again, but this refresh shows the previous read.
      expect((await flow.flowStates(backlog([['a', 1000]]))).get('a')?.dominant).toEqual({key: 'k', share: 0.6});
      expect(spy).toHaveBeenCalledTimes(2);
      await new Promise((r) => setTimeout(r, 0));
      expect((await flow.flowStates(backlog([['a', 1000]]))).get('a')?.dominant).toBeUndefined();
    });

    it('reads at most KEYS_TYPES types, the largest backlogs; a failed read shows none and the flow states still come', async () => {
      const {flow, spy} = setup(async (type) => {
        if (type === 't_0') throw new Error('lock wait timeout');
        return report('k', 10_000);
      });
      const m = await flow.flowStates(backlog(Array.from({length: KEYS_TYPES + 5}, (_, i): [string, number] => [`t_${i}`, 10_000 - i])));
      expect(spy).toHaveBeenCalledTimes(KEYS_TYPES);
      expect(m.get('t_0')).toBeUndefined();
      expect(m.get('t_1')?.dominant).toEqual({key: 'k', share: 1});
      expect(m.get(`t_${KEYS_TYPES}`)).toBeUndefined();
      expect(m.get('a')).toEqual({breaker: 'closed', paused: true, parked: 0});
    });
  });
});
