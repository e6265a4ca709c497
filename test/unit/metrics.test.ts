/**
 * The metrics subscribers and the cell gauges without servers: events in, exposition text out;
 * the cell refresh on a fake clock and a fake store (a down or hanging database never blocks a
 * scrape); and the endpoint's /metrics route and listen errors.
 */
import {describe, expect, it} from 'vitest';
import {AxEvents} from '../../src/core/events.js';
import {MetricsRegistry} from '../../src/core/metrics/registry.js';
import {workerMetrics} from '../../src/core/metrics/worker.js';
import {schedulerMetrics} from '../../src/core/metrics/scheduler.js';
import {relayMetrics} from '../../src/core/metrics/relay.js';
import {CellMetrics} from '../../src/core/metrics/cell.js';
import {startHealthServer} from '../../src/health.js';
import {isAxError} from '../../src/core/errors.js';
import {createLogger} from '../../src/core/log.js';
import type {BacklogReport, WorkerRow} from '../../src/core/store/types.js';
import {fakeClock} from '../helpers/clock.js';
import {sample} from '../helpers/metrics.js';
import {workerRow} from '../helpers/worker-row.js';

const registry = (): MetricsRegistry => new MetricsRegistry({cell: 'c1', processMetrics: false});
const text = async (m: MetricsRegistry): Promise<string> => (await m.text()).body;
const attempt = {id: 'x', type: 'order_notify', attempt: 1, fence: 1, durationMs: 250};

describe('worker metrics', () => {
  it('count attempts by type and outcome, durations and start delays in seconds, pools on scrape; unsubscribing stops them', async () => {
    const m = registry();
    const ev = new AxEvents();
    let running = 3;
    const off = workerMetrics(m, ev, {pools: () => [{pool: 'io', size: 64, capacity: 2000, running, queued: 7}], held: () => 10});
    ev.emit('task:claimed', {id: 'x', type: 'order_notify', attempt: 1, pool: 'io', lateMs: 1500});
    ev.emit('task:succeeded', attempt);
    ev.emit('task:succeeded', {...attempt, durationMs: 750});
    ev.emit('task:failed', {...attempt, error: 'boom', retryDelayMs: 1000});
    ev.emit('task:dead', {...attempt, type: 'user_credit', error: 'boom'});
    ev.emit('task:released', {...attempt, reason: 'io pool queue full'});
    ev.emit('doorbell:duplicate', {id: 'x', type: 'order_notify', extra: 2});
    ev.emit('task:submitted', {type: 'order_notify', count: 5});
    let t = await text(m);
    expect(sample(t, 'ax_attempts_total', {type: 'order_notify', outcome: 'succeeded', cell: 'c1'})).toBe(2);
    expect(sample(t, 'ax_attempts_total', {type: 'order_notify', outcome: 'failed'})).toBe(1);
    expect(sample(t, 'ax_attempts_total', {type: 'user_credit', outcome: 'dead'})).toBe(1);
    expect(sample(t, 'ax_attempt_duration_seconds_sum', {type: 'order_notify'})).toBeCloseTo(1.25);
    expect(sample(t, 'ax_attempt_duration_seconds_bucket', {type: 'order_notify', le: '0.5'})).toBe(2);
    expect(sample(t, 'ax_task_start_delay_seconds_sum', {type: 'order_notify'})).toBeCloseTo(1.5);
    expect(sample(t, 'ax_claims_released_total', {type: 'order_notify'})).toBe(1);
    expect(sample(t, 'ax_doorbells_duplicate_total')).toBe(2);
    expect(sample(t, 'ax_tasks_submitted_total', {type: 'order_notify'})).toBe(5);
    expect(sample(t, 'ax_pool_running', {pool: 'io'})).toBe(3);
    expect(sample(t, 'ax_pool_queued', {pool: 'io'})).toBe(7);
    expect(sample(t, 'ax_worker_held_tasks')).toBe(10);
    running = 4;
    off();
    ev.emit('task:succeeded', attempt);
    t = await text(m);
    expect(sample(t, 'ax_attempts_total', {type: 'order_notify', outcome: 'succeeded'})).toBe(2);
    expect(sample(t, 'ax_pool_running', {pool: 'io'})).toBe(4); // gauges are read at scrape time
  });
});

describe('scheduler and relay metrics', () => {
  it('count new dead tasks by type and carry the outbox lag', async () => {
    const m = registry();
    const ev = new AxEvents();
    schedulerMetrics(m, ev);
    relayMetrics(m, ev);
    ev.emit('dlq:new', {type: 'order_notify', count: 3, since: 0, until: 1});
    ev.emit('relay:lag', {lag: {unsent: 12, failed: 1, oldestAgeMs: 4500}});
    ev.emit('relay:batch', {rows: 10, relayed: 9, published: 9, failed: 1});
    ev.emit('relay:blocked', {blocked: true});
    const t = await text(m);
    expect(sample(t, 'ax_dlq_new_total', {type: 'order_notify'})).toBe(3);
    expect(sample(t, 'ax_outbox_unsent_rows')).toBe(12);
    expect(sample(t, 'ax_outbox_lag_seconds')).toBe(4.5);
    expect(sample(t, 'ax_outbox_relayed_total')).toBe(9);
    expect(sample(t, 'ax_relay_blocked')).toBe(1);
  });
});

describe('cell metrics', () => {
  const at = new Date('2026-01-01T00:00:00Z');
  const worker = (id: string, heartbeatAgoMs: number, stopped = false): WorkerRow =>
    workerRow(at, heartbeatAgoMs, {id, pools: {io: 64}, startedAt: at, stoppedAt: stopped ? at : null});

  it('serve the backlog, oldest due age and workers; a failing or hanging database leaves the last values and up = 0', async () => {
    const m = registry();
    const clock = fakeClock(1000);
    let report: () => Promise<BacklogReport> = async () => ({
      at,
      rows: [{type: 'order_notify', due: 15, delayed: 4, running: 2, dead: 1, oldestDueAt: new Date(at.getTime() - 90_000)}],
    });
    const cell = new CellMetrics({
      metrics: m,
      clock,
      logger: createLogger('silent', {}),
      everyMs: 5000,
      store: {backlog: () => report(), workersList: async () => [worker('a', 1000), worker('b', 60_000), worker('c', 1000, true)]},
    });
    expect(sample(await text(m), 'ax_cell_metrics_up')).toBe(0); // nothing read yet
    await cell.runOnce();
    let t = await text(m);
    expect(sample(t, 'ax_backlog_tasks', {type: 'order_notify', state: 'due'})).toBe(15);
    expect(sample(t, 'ax_backlog_tasks', {type: 'order_notify', state: 'delayed'})).toBe(4);
    expect(sample(t, 'ax_oldest_due_age_seconds', {type: 'order_notify'})).toBe(90);
    expect(sample(t, 'ax_running_tasks', {type: 'order_notify'})).toBe(2);
    expect(sample(t, 'ax_dead_tasks', {type: 'order_notify'})).toBe(1);
    expect(sample(t, 'ax_workers', {pool: 'io', status: 'live'})).toBe(1);
    expect(sample(t, 'ax_workers', {pool: 'io', status: 'stale'})).toBe(1);
    expect(sample(t, 'ax_cell_metrics_up')).toBe(1);

    // The database fails: last values stay, up drops.
    report = async () => {
      throw new Error('connect ECONNREFUSED');
    };
    await cell.runOnce();
    clock.advance(12_000);
    t = await text(m);
    expect(sample(t, 'ax_cell_metrics_up')).toBe(0);
    expect(sample(t, 'ax_backlog_tasks', {type: 'order_notify', state: 'due'})).toBe(15);
    expect(sample(t, 'ax_cell_metrics_age_seconds')).toBe(12);

    // The database hangs: a scrape still answers at once.
    report = () => new Promise(() => undefined);
    void cell.runOnce();
    t = await text(m);
    expect(sample(t, 'ax_backlog_tasks', {type: 'order_notify', state: 'due'})).toBe(15);
  });

  it('report a type whose tasks are gone as 0, not as its last value', async () => {
    const m = registry();
    let rows: BacklogReport['rows'] = [{type: 'order_notify', due: 15, delayed: 0, running: 0, dead: 0, oldestDueAt: at}];
    const cell = new CellMetrics({
      metrics: m,
      clock: fakeClock(0),
      logger: createLogger('silent', {}),
      everyMs: 5000,
      store: {backlog: async () => ({at, rows}), workersList: async () => []},
    });
    await cell.runOnce();
    rows = [];
    await cell.runOnce();
    expect(sample(await text(m), 'ax_backlog_tasks', {type: 'order_notify', state: 'due'})).toBe(0);
  });
});

describe('the endpoint', () => {
  it('serves /metrics with the exposition content type, 500 when rendering fails; a port in use is a conflict', async () => {
    const m = registry();
    m.counter('ax_test_total', 'a test counter').inc(3);
    let fail = false;
    const s = await startHealthServer({
      host: '127.0.0.1',
      port: 0,
      ready: () => true,
      details: () => ({}),
      metrics: () => (fail ? Promise.reject(new Error('nope')) : m.text()),
    });
    try {
      const res = await fetch(`http://127.0.0.1:${s.port}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(sample(await res.text(), 'ax_test_total', {cell: 'c1'})).toBe(3);
      fail = true;
      expect((await fetch(`http://127.0.0.1:${s.port}/metrics`)).status).toBe(500);
      const clash = await startHealthServer({host: '127.0.0.1', port: s.port, ready: () => true, details: () => ({})}).catch(
        (e: unknown) => e,
      );
      expect(isAxError(clash, 'conflict')).toBe(true);
      expect(String(clash)).toMatch(/in use/);
    } finally {
      await s.close();
    }
  });
});
