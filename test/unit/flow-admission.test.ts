/**
 * The admission step (core/flow): the pure policy over a registry snapshot and the time, and the
 * worker's FlowGate that refreshes the snapshot on the injected clock and rings tasks that waited
 * for a handler when one registers.
 */
import {describe, expect, it} from 'vitest';
import {ADMISSION_DEFAULTS, admit, EMPTY_SNAPSHOT, snapshotOf} from '../../src/core/flow/admission.js';
import {FlowGate, type GateStore} from '../../src/core/flow/gate.js';
import type {FlowView, TypeRecord} from '../../src/core/store/types.js';
import type {Broker} from '../../src/core/broker/types.js';
import {createLogger} from '../../src/core/log.js';
import {fakeClock} from '../helpers/clock.js';
import {typeRecord} from '../helpers/type-record.js';

const T0 = Date.parse('2026-12-01T12:00:00Z');
const rec = (type: string, o: Partial<TypeRecord> = {}): TypeRecord => typeRecord(type, new Date(T0), o);
const view = (types: TypeRecord[], handlers: Record<string, string[]> = {}): FlowView => ({at: new Date(T0), types, handlers});

describe('admit (pure)', () => {
  const o = ADMISSION_DEFAULTS;
  it('runs a type nobody said anything about when this worker has its handler', () => {
    expect(admit(EMPTY_SNAPSHOT, 'order_notify', true, T0, o)).toEqual({run: true});
    expect(admit(snapshotOf(view([rec('order_notify')])), 'order_notify', true, T0, o)).toEqual({run: true});
  });

  it('parks a paused type for the paused recheck, naming who paused it and why', () => {
    const s = snapshotOf(view([rec('order_notify', {paused: true, pausedBy: 'alice', pausedReason: 'smtp down'})]));
    expect(admit(s, 'order_notify', true, T0, o)).toEqual({
      run: false,
      delayMs: o.pausedRecheckMs,
      parked: 'paused',
      reason: 'parked: type paused by alice (smtp down)',
    });
    // Other types are not affected.
    expect(admit(s, 'user_register', true, T0, o).run).toBe(true);
  });

  it('parks while the breaker is open, until its probe time; then lets a probe through', () => {
    const until = new Date(T0 + 30_000);
    const s = snapshotOf(view([rec('order_notify', {breaker: {state: 'open', until, openings: 1, changedAt: new Date(T0)}})]));
    expect(admit(s, 'order_notify', true, T0, o)).toMatchObject({run: false, parked: 'breaker', delayMs: 30_000});
    expect(admit(s, 'order_notify', true, T0 + 29_000, o)).toMatchObject({delayMs: 1000});
    expect(admit(s, 'order_notify', true, T0 + 30_000, o)).toEqual({run: true, probe: true});
  });

  it('without a handler here: rung again shortly when another live worker has one, else parked unhandled (never dead here)', () => {
    const s = snapshotOf(view([], {order_notify: ['h:2']}));
    expect(admit(s, 'order_notify', false, T0, o)).toMatchObject({run: false, parked: null, delayMs: o.elsewhereRecheckMs});
    expect(admit(s, 'user_register', false, T0, o)).toMatchObject({run: false, parked: 'unhandled', delayMs: o.unhandledRecheckMs});
    // Before the first read of the registry (database down at start) the same: wait, do not kill.
    expect(admit(EMPTY_SNAPSHOT, 'user_register', false, T0, o)).toMatchObject({run: false, parked: 'unhandled'});
  });

  it('a pause wins over everything else (it is the operator speaking)', () => {
    const s = snapshotOf(
      view([rec('order_notify', {paused: true, breaker: {state: 'open', until: new Date(T0 + 5000), openings: 1, changedAt: null}})]),
    );
    expect(admit(s, 'order_notify', false, T0, o)).toMatchObject({parked: 'paused'});
  });
});

function fakeStore(v: {current: FlowView}) {
  const released: string[] = [];
  let parked = ['t1', 't2'];
  const store: GateStore = {
    flowView: () => Promise.resolve(v.current),
    tasksDefer: () => Promise.reject(new Error('unused')),
    typesRegister: () => Promise.resolve(),
    parkedRelease: (p) => {
      const out =
        p.type === 'order_notify' && p.kinds.includes('unhandled')
          ? parked.map((id) => ({id, type: p.type, pool: 'io' as const, priority: 'normal' as const, fence: 1}))
          : [];
      parked = [];
      return Promise.resolve(out);
    },
    doorbellsMark: (p) => {
      released.push(...p.rung.map((r) => r.id));
      return Promise.resolve();
    },
    outcomeCounts: () => Promise.resolve([]),
    outcomesPurge: () => Promise.resolve(0),
    breakerTransition: () => Promise.resolve(false),
  };
  return {store, released};
}

describe('FlowGate', () => {
  it('sees a pause within one refresh period on the injected clock', async () => {
    const clock = fakeClock(T0);
    const v = {current: view([])};
    const {store} = fakeStore(v);
    const published: string[] = [];
    const broker = {
      publish: (refs: Array<{id: string}>) => (published.push(...refs.map((r) => r.id)), Promise.resolve()),
    } as unknown as Broker;
    const gate = new FlowGate({store, clock, logger: createLogger('silent'), refreshMs: 1000});
    await gate.start(['order_notify'], broker);
    expect(gate.admit('order_notify', true).run).toBe(true);
    // A handler registering rings the tasks that waited for it.
    expect(published).toEqual(['t1', 't2']);
    v.current = view([rec('order_notify', {paused: true})]);
    await clock.advanceAsync(999);
    expect(gate.admit('order_notify', true).run).toBe(true);
    await clock.advanceAsync(1);
    expect(gate.admit('order_notify', true)).toMatchObject({run: false, parked: 'paused'});
    await gate.stop();
  });

  it('keeps deciding from the last snapshot when a refresh fails', async () => {
    const clock = fakeClock(T0);
    const v = {current: view([rec('order_notify', {paused: true})])};
    const {store} = fakeStore(v);
    const gate = new FlowGate({store, clock, logger: createLogger('silent'), refreshMs: 1000});
    await gate.start([], {publish: () => Promise.resolve()} as unknown as Broker);
    store.flowView = () => Promise.reject(new Error('db down'));
    await clock.advanceAsync(3000);
    expect(gate.admit('order_notify', true)).toMatchObject({parked: 'paused'});
    await gate.stop();
  });
});
