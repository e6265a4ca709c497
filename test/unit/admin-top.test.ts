/**
 * `ax top`'s part of the admin service over fakes: a store that cannot be opened is tried again at
 * the next refresh, the flow states come from one registry read, and the pause key goes through
 * the types service (audited as `types pause`, reason "ax top").
 */
import {describe, expect, test, vi} from 'vitest';
import {initialTopState} from '../../src/core/inspect/top.js';
import {fakeAdmin} from '../helpers/admin.js';

describe('admin top', () => {
  test('connect and refresh throw while MySQL is down, and open it again at the next call', async () => {
    const f = fakeAdmin({down: ['store']});
    await expect(f.admin.top.connect()).rejects.toMatchObject({code: 'unavailable'});
    await expect(f.admin.top.refresh(initialTopState(), {errorsType: null})).rejects.toMatchObject({code: 'unavailable'});
    expect(f.opened).toEqual(['store', 'store']);
  });

  test('the flow states are one registry read; pause goes through the types service as the operator', async () => {
    const typesReport = vi.fn(async () => ({
      at: new Date(0),
      all: [{type: 'a_b', paused: true, breaker: {state: 'half_open'}}],
      parked: {a_b: {paused: 4}, c_d: {unhandled: 2}},
      handlers: {a_b: ['w:1']},
    }));
    const typeSetPaused = vi.fn(async () => ({changed: true, record: {pausedBy: 'op', pausedReason: 'ax top', pausedAt: new Date(0)}}));
    const store = {typesReport, backlog: async () => ({rows: []}), outcomeCounts: async () => [], typeSetPaused};
    const f = fakeAdmin({store});
    expect(Object.fromEntries(await f.admin.top.flow.flowStates())).toEqual({
      a_b: {breaker: 'half-open', paused: true, parked: 4},
      c_d: {breaker: 'closed', paused: false, parked: 2},
    });
    expect(typesReport).toHaveBeenCalledTimes(1);
    expect(await f.admin.top.flow.setPaused({type: 'a_b', paused: true, operator: 'op'})).toMatch(/^paused a_b/);
    expect(typeSetPaused).toHaveBeenCalledWith(
      expect.objectContaining({
        type: 'a_b',
        paused: true,
        reason: 'ax top',
        audit: expect.objectContaining({operator: 'op', command: 'types pause'}),
      }),
    );
    expect(f.opened).toEqual(['store']);
  });

  test('a resume opens RabbitMQ before changing anything: unavailable, nothing resumed, when it is down', async () => {
    const typeSetPaused = vi.fn();
    const store = {
      typesReport: async () => ({
        at: new Date(0),
        all: [{type: 'a_b', paused: true, breaker: {state: 'closed'}}],
        parked: {},
        handlers: {},
      }),
      typeSetPaused,
    };
    const f = fakeAdmin({store, down: ['broker']});
    await expect(f.admin.top.flow.setPaused({type: 'a_b', paused: false, operator: 'op'})).rejects.toMatchObject({code: 'unavailable'});
    expect(typeSetPaused).not.toHaveBeenCalled();
  });
});
