/** ax doctor's flow-control findings: a waiting type nobody handles, open breakers, paused types. */
import {describe, expect, it} from 'vitest';
import {diagnose} from '../../src/core/doctor/doctor.js';
import {handledTypesOf} from '../../src/core/doctor/gather.js';
import {doctorSettings} from '../../src/core/doctor/settings.js';
import type {DbEvidence, DoctorData, Finding} from '../../src/core/doctor/types.js';
import type {TypeRecord, TypesReport, WorkerRow} from '../../src/core/store/types.js';
import {workerRow} from '../helpers/worker-row.js';
import {healthyEvidence} from '../helpers/doctor-evidence.js';
import {typeRecord} from '../helpers/type-record.js';

const NOW = new Date('2026-12-01T12:00:00.000Z');
const ago = (ms: number): Date => new Date(NOW.getTime() - ms);
const settings = doctorSettings(
  {},
  {heartbeatMs: 5000, leaseMs: 30_000, poolQueueCapacity: 2000, schedulerHoldMs: 3000, schedulerLoadEveryMs: 1000},
  NOW.getTime(),
);
const w1: WorkerRow = workerRow(NOW, 2000, {host: 'h1', pid: 10, pools: {io: 100}, types: ['order_notify']});
const rec = (type: string, over: Partial<TypeRecord> = {}): TypeRecord =>
  typeRecord(type, ago(86_400_000), {updatedAt: ago(60_000), ...over});
const flow = (over: Partial<TypesReport> = {}): TypesReport => ({at: NOW, types: [], handlers: {}, all: [], parked: {}, ...over});

const db = (over: Partial<DbEvidence> = {}): DbEvidence => healthyEvidence(NOW, [w1], {flow: flow(), ...over});
function run(d: DbEvidence, extra: Partial<DoctorData> = {}) {
  return diagnose({
    settings,
    db: {ok: true, value: d},
    broker: {ok: true, value: {depths: {}, queues: {io: 'q.io', cpu: 'q.cpu', poison: 'q.poison'}}},
    ...extra,
  });
}
const byId = (fs: Finding[], id: string): Finding | undefined => fs.find((f) => f.id === id);
const backlogRow = (type: string, due: number, delayed: number) => ({
  type,
  due,
  delayed,
  running: 0,
  dead: 0,
  oldestDueAt: due ? ago(5000) : null,
});

describe('handled types from the workers', () => {
  it("are the live workers' registered types (stale and stopped ones do not count); unknown when a live one reports none", () => {
    const stopped: WorkerRow = {...w1, id: 'old', stoppedAt: ago(1000), types: undefined};
    const crashed: WorkerRow = {...w1, id: 'gone', heartbeatAt: ago(120_000), heartbeatAgeMs: 120_000, types: undefined};
    expect(handledTypesOf({ok: true, value: db({workers: [w1, stopped, crashed]})}, 5000)).toEqual({w1: ['order_notify']});
    const older: WorkerRow = {...w1, id: 'w2', types: undefined};
    expect(handledTypesOf({ok: true, value: db({workers: [w1, older]})}, 5000)).toBeNull();
    expect(handledTypesOf({ok: false, error: {code: 'unavailable', message: 'down'}}, 5000)).toBeNull();
  });
});

describe('a waiting type no live worker handles', () => {
  it('tasks parked "no handler" (not due: delayed until their recheck) are a problem with the next commands', () => {
    const d = db({backlog: {at: NOW, rows: [backlogRow('nobody_handles', 0, 3)]}, flow: flow({parked: {nobody_handles: {unhandled: 3}}})});
    const handledTypes = handledTypesOf({ok: true, value: d}, 5000) ?? undefined;
    const f = byId(run(d, handledTypes ? {handledTypes} : {}).findings, 'types.unhandled');
    expect(f).toMatchObject({status: 'problem', title: 'no live worker has a handler for 1 waiting type'});
    expect(f?.evidence).toEqual(['nobody_handles: 3 parked waiting for a handler (dead after AX_UNHANDLED_DEAD_AFTER)']);
    expect(f?.next[0]).toMatch(/^ax types show nobody_handles/);
    expect(f?.next[1]).toMatch(/deploy a worker .*ax worker --handlers/);
    // Parked for another reason (paused) is not "no handler"; a handled type is fine.
    expect(
      byId(
        run(db({flow: flow({parked: {order_notify: {unhandled: 2}, x: {paused: 1}}})}), {handledTypes: {w1: ['order_notify']}}).findings,
        'types.unhandled',
      ),
    ).toBeUndefined();
  });
});

describe('breakers and paused types', () => {
  it('an open breaker is a problem naming the type, since when, the next probe and the waiting tasks', () => {
    const t = rec('payment_capture', {
      breaker: {state: 'open', until: new Date(NOW.getTime() + 30_000), openings: 2, changedAt: ago(90_000)},
    });
    const d = db({
      backlog: {at: NOW, rows: [backlogRow('payment_capture', 0, 40)]},
      flow: flow({all: [t], parked: {payment_capture: {breaker: 40}}}),
    });
    const f = byId(run(d).findings, 'breaker.open');
    expect(f?.status).toBe('problem');
    expect(f?.evidence).toEqual([
      'payment_capture: breaker open, open for 1m30s, next probe in 30s, opening 2; 40 tasks waiting (40 parked breaker)',
    ]);
    expect(f?.next[0]).toMatch(/^ax types show payment_capture/);
    expect(f?.next[1]).toMatch(/ax types breaker <type> --reset/);
    const half = rec('payment_capture', {breaker: {state: 'half_open', until: null, openings: 2, changedAt: ago(1000)}});
    expect(byId(run(db({flow: flow({all: [half]})})).findings, 'breaker.open')?.status).toBe('warn');
  });

  it('a paused type with a backlog is a warning naming who paused it and why; without one, context', () => {
    const p = rec('image_resize', {paused: true, pausedBy: 'alice@ops', pausedReason: 'vendor outage INC-7', pausedAt: ago(600_000)});
    const d = db({
      backlog: {at: NOW, rows: [backlogRow('image_resize', 2, 5)]},
      flow: flow({all: [p], parked: {image_resize: {paused: 5}}}),
    });
    const r = run(d);
    const f = byId(r.findings, 'types.paused');
    expect(f?.status).toBe('warn');
    expect(f?.evidence).toEqual(['image_resize: paused by alice@ops 10m ago ("vendor outage INC-7"); 7 tasks waiting (5 parked paused)']);
    expect(f?.next[0]).toMatch(/^ax types resume image_resize/);
    expect(r.verdict).toBe('warn');
    expect(byId(run(db({flow: flow({all: [p]})})).findings, 'types.paused-idle')?.status).toBe('info');
    expect(byId(run(db({flow: flow({all: [p]})})).findings, 'types.paused')).toBeUndefined();
  });

  it('all closed and nothing paused: ok; the registry not read: skipped', () => {
    expect(byId(run(db({flow: flow({all: [rec('order_notify')]})})).findings, 'flow.ok')?.status).toBe('ok');
    const {flow: _f, ...without} = db();
    expect(byId(run(without).findings, 'breaker')?.status).toBe('skipped');
  });
});
