import {describe, expect, it} from 'vitest';
import {splitWorkers} from '../../src/core/doctor/evidence.js';
import {listWorkers} from '../../src/core/inspect/workers.js';
import {DEFAULT_HEARTBEAT_MS, staleAfterMs, workerStatus} from '../../src/core/liveness.js';
import {createLogger} from '../../src/core/log.js';
import {CellMetrics} from '../../src/core/metrics/cell.js';
import {MetricsRegistry} from '../../src/core/metrics/registry.js';
import type {WorkerRow} from '../../src/core/store/types.js';
import {STALE_AFTER_BEATS} from '../../src/core/thresholds.js';
import {fakeClock} from '../helpers/clock.js';
import {workerRow} from '../helpers/worker-row.js';
import {sample} from '../helpers/metrics.js';

const T0 = new Date('2026-12-01T12:00:00Z');
const row = (id: string, ageMs: number, o: Partial<WorkerRow> = {}): WorkerRow => workerRow(T0, ageMs, {id, ...o});

describe('worker liveness', () => {
  it('stale after STALE_AFTER_BEATS of the interval the worker reports, the configured one when it reports none', () => {
    expect(STALE_AFTER_BEATS).toBe(3);
    expect(staleAfterMs(2000)).toBe(6000);
    const own = {heartbeatMs: 2000, types: {}};
    expect(workerStatus(row('a', 6000, {stats: own}), 60_000)).toBe('live'); // its own 2 s wins over the reader's
    expect(workerStatus(row('a', 6001, {stats: own}), 60_000)).toBe('stale');
    expect(workerStatus(row('a', 29_000), 10_000)).toBe('live'); // no stats: the reader's AX_HEARTBEAT
    expect(workerStatus(row('a', 31_000), 10_000)).toBe('stale');
    expect(workerStatus(row('a', 3 * DEFAULT_HEARTBEAT_MS + 1))).toBe('stale'); // no interval anywhere: the default
    expect(workerStatus(row('a', 0, {stoppedAt: T0}))).toBe('stopped');
  });

  it('ax workers, ax doctor and the ax_workers gauge classify the same rows alike', async () => {
    const hb = 2000; // a configured AX_HEARTBEAT other than the default
    const rows = [
      row('fresh', 1000),
      row('late', 7000),
      row('older', 5000, {stats: {heartbeatMs: 1000, types: {}}}),
      row('gone', 0, {stoppedAt: T0}),
    ];
    const byStatus = (s: string): string[] => rows.filter((w) => workerStatus(w, hb) === s).map((w) => w.id);
    expect(byStatus('live')).toEqual(['fresh']);
    expect(byStatus('stale')).toEqual(['late', 'older']);

    const listed = await listWorkers({workersList: async () => rows}, undefined, hb);
    expect(listed.workers.map((w) => [w.id, w.status])).toEqual([
      ['fresh', 'live'],
      ['late', 'stale'],
      ['older', 'stale'],
      ['gone', 'stopped'],
    ]);

    const {live, stale} = splitWorkers(rows, hb);
    expect(live.map((w) => w.id)).toEqual(byStatus('live'));
    expect(stale.map((w) => w.id)).toEqual(byStatus('stale'));

    const m = new MetricsRegistry({cell: 'c1', processMetrics: false});
    const cell = new CellMetrics({
      metrics: m,
      clock: fakeClock(0),
      logger: createLogger('silent', {}),
      everyMs: 5000,
      heartbeatMs: hb,
      store: {backlog: async () => ({at: T0, rows: []}), workersList: async () => rows},
    });
    await cell.runOnce();
    const t = (await m.text()).body;
    expect(sample(t, 'ax_workers', {pool: 'io', status: 'live'})).toBe(1);
    expect(sample(t, 'ax_workers', {pool: 'io', status: 'stale'})).toBe(2);
  });
});
