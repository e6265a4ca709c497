/** Flow control's cell gauges: paused types, breaker state as an enum, parked counts (0 once drained). */
import {describe, expect, it} from 'vitest';
import {CellMetrics} from '../../src/core/metrics/cell.js';
import {flowGauges} from '../../src/core/metrics/flow.js';
import {MetricsRegistry} from '../../src/core/metrics/registry.js';
import {createLogger} from '../../src/core/log.js';
import type {TypeRecord, TypesReport} from '../../src/core/store/types.js';
import {fakeClock} from '../helpers/clock.js';
import {sample} from '../helpers/metrics.js';
import {typeRecord} from '../helpers/type-record.js';

const at = new Date('2026-12-01T12:00:00Z');
const rec = (type: string, over: Partial<TypeRecord> = {}): TypeRecord => typeRecord(type, at, over);

describe('flow gauges', () => {
  it('read in the cell refresh: ax_type_paused 1/0, ax_breaker_state 1 for the current state only, ax_parked_tasks', async () => {
    const m = new MetricsRegistry({cell: 'c1', processMetrics: false});
    let report: TypesReport = {
      at,
      types: [],
      handlers: {},
      all: [rec('a', {paused: true}), rec('b', {breaker: {state: 'open', until: at, openings: 1, changedAt: at}})],
      parked: {a: {paused: 4}, b: {breaker: 2}},
    };
    const cell = new CellMetrics({
      metrics: m,
      clock: fakeClock(0),
      logger: createLogger('silent', {}),
      everyMs: 5000,
      store: {backlog: async () => ({at, rows: []}), workersList: async () => []},
      extra: [flowGauges(m, {typesReport: async () => report})],
    });
    await cell.runOnce();
    let t = (await m.text()).body;
    expect(sample(t, 'ax_type_paused', {type: 'a', cell: 'c1'})).toBe(1);
    expect(sample(t, 'ax_type_paused', {type: 'b'})).toBe(0);
    expect(sample(t, 'ax_breaker_state', {type: 'b', state: 'open'})).toBe(1);
    expect(sample(t, 'ax_breaker_state', {type: 'b', state: 'closed'})).toBe(0);
    expect(sample(t, 'ax_breaker_state', {type: 'b', state: 'half_open'})).toBe(0);
    expect(sample(t, 'ax_breaker_state', {type: 'a', state: 'closed'})).toBe(1);
    expect(sample(t, 'ax_parked_tasks', {type: 'a', kind: 'paused'})).toBe(4);
    expect(sample(t, 'ax_parked_tasks', {type: 'b', kind: 'breaker'})).toBe(2);
    expect(sample(t, 'ax_cell_metrics_up')).toBe(1);

    // Resumed, breaker half-open, parked backlog drained: 0, not the last value.
    report = {...report, all: [rec('a'), rec('b', {breaker: {state: 'half_open', until: null, openings: 1, changedAt: at}})], parked: {}};
    await cell.runOnce();
    t = (await m.text()).body;
    expect(sample(t, 'ax_type_paused', {type: 'a'})).toBe(0);
    expect(sample(t, 'ax_breaker_state', {type: 'b', state: 'open'})).toBe(0);
    expect(sample(t, 'ax_breaker_state', {type: 'b', state: 'half_open'})).toBe(1);
    expect(sample(t, 'ax_parked_tasks', {type: 'a', kind: 'paused'})).toBe(0);
  });
});
