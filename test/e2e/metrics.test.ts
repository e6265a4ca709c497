/**
 * Prometheus metrics of real processes: `ax worker`, `ax scheduler` and `ax relay` spawned from the
 * build (`npx tsc -p tsconfig.build.json` first) against the real MariaDB and RabbitMQ, scraped
 * after tasks ran; every scrape passes `promtool check metrics`, and the named series carry the
 * values the run implies. Also: bad ports exit with a clear message and the right code.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {createProcessTestEnv, type ProcessTestEnv} from '../helpers/processes.js';
import {createBusinessDb, type BusinessDb} from '../helpers/outbox.js';
import {eventually} from '../helpers/env.js';
import {promtoolCheckMetrics, sample, scrape} from '../helpers/metrics.js';
import type {Spawned} from '../helpers/spawn.js';

let o: ProcessTestEnv;
let biz: BusinessDb;

beforeAll(async () => {
  o = await createProcessTestEnv();
  biz = await createBusinessDb({migrate: true});
});
afterAll(async () => {
  await o?.dispose();
  await biz?.dispose();
});

/** oclif's wrapped error lines as one line. */
const flat = (stderr: string): string => stderr.replace(/\s*\n\s*›\s*/g, ' ');

/** The endpoint a process printed ("health on http://127.0.0.1:PORT"). */
const endpointOf = (p: Spawned, what: string): Promise<string> =>
  eventually(async () => /health on (http:\/\/127\.0\.0\.1:\d+)/.exec(p.stderr())?.[1], 30_000, `the ${what} endpoint`);

/** Scrapes until `ready(text)` holds, then checks the text with promtool and returns it. */
async function scrapeWhen(base: string, ready: (text: string) => boolean, what: string): Promise<string> {
  const text = await eventually(
    async () => {
      const s = await scrape(base);
      return s.status === 200 && ready(s.text) ? s.text : undefined;
    },
    30_000,
    what,
  );
  const lint = await promtoolCheckMetrics(text);
  expect(lint.out).toBe('');
  expect(lint.code).toBe(0);
  return text;
}

describe('metrics of running processes', () => {
  it('worker and scheduler: attempts, durations, start delay, pools; the cell backlog, dead tasks, workers, new dead tasks, paused types, breaker states', async () => {
    const vars = {...o.env.env, AX_METRICS_CELL_EVERY: '1s', AX_DLQ_SCAN_EVERY: '1s'};
    const worker = o.spawn(
      ['worker', '--handlers', 'test/fixtures/handlers.js', '--pools', 'io', '--health-port', '0', '--summary-every', '0'],
      vars,
    );
    const scheduler = o.spawn(['scheduler', '--health-port', '0', '--summary-every', '0'], vars);
    const [w, s] = await Promise.all([endpointOf(worker, 'worker'), endpointOf(scheduler, 'scheduler')]);

    for (let i = 0; i < 20; i++) await o.client.submit({type: 'test_noop', payload: {i}});
    await o.client.submit({type: 'test_fail', payload: {}, maxRetries: 0});
    await o.client.submit({type: 'test_noop', payload: {later: true}, delay: '1h'});
    await o.client.flush();

    const wt = await scrapeWhen(
      w,
      (t) =>
        sample(t, 'ax_attempts_total', {type: 'test_noop', outcome: 'succeeded'}) === 20 &&
        sample(t, 'ax_attempts_total', {type: 'test_fail', outcome: 'dead'}) === 1,
      'the worker to count 20 successes and 1 death',
    );
    const cell = o.env.config.cell;
    expect(sample(wt, 'ax_tasks_claimed_total', {type: 'test_noop', pool: 'io', cell})).toBe(20);
    expect(sample(wt, 'ax_attempt_duration_seconds_count', {type: 'test_noop'})).toBe(20);
    expect(sample(wt, 'ax_attempt_duration_seconds_bucket', {type: 'test_noop', le: '+Inf'})).toBe(20);
    const durSum = sample(wt, 'ax_attempt_duration_seconds_sum', {type: 'test_noop'})!;
    expect(durSum).toBeGreaterThanOrEqual(0);
    expect(durSum).toBeLessThan(20 * 5); // seconds, not milliseconds
    expect(sample(wt, 'ax_task_start_delay_seconds_count', {type: 'test_noop'})).toBe(20);
    expect(sample(wt, 'ax_task_start_delay_seconds_sum', {type: 'test_noop'})).toBeLessThan(20 * 30);
    expect(sample(wt, 'ax_pool_size', {pool: 'io'})).toBeGreaterThan(0);
    expect(sample(wt, 'ax_pool_queue_capacity', {pool: 'io'})).toBe(2000);
    expect(sample(wt, 'ax_pool_running', {pool: 'io'})).toBe(0);
    expect(sample(wt, 'ax_pool_queued', {pool: 'io'})).toBe(0);
    expect(sample(wt, 'ax_claims_released_total')).toBeUndefined(); // none released: no series yet
    expect(sample(wt, 'ax_doorbells_duplicate_total')).toBe(0);
    expect(sample(wt, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    // The worker serves no cell gauges: one process per cell (the scheduler) does.
    expect(sample(wt, 'ax_backlog_tasks')).toBeUndefined();

    const st = await scrapeWhen(
      s,
      (t) =>
        sample(t, 'ax_backlog_tasks', {type: 'test_noop', state: 'delayed'}) === 1 &&
        sample(t, 'ax_dead_tasks', {type: 'test_fail'}) === 1 &&
        sample(t, 'ax_dlq_new_total', {type: 'test_fail'}) === 1 &&
        sample(t, 'ax_workers', {pool: 'io', status: 'live'}) === 1,
      'the scheduler to see the delayed task, the dead one and the live worker',
    );
    expect(sample(st, 'ax_backlog_tasks', {type: 'test_noop', state: 'due'})).toBe(0);
    expect(sample(st, 'ax_oldest_due_age_seconds', {type: 'test_noop'})).toBe(0);
    expect(sample(st, 'ax_running_tasks', {type: 'test_noop'})).toBe(0);
    expect(sample(st, 'ax_cell_metrics_up')).toBe(1);
    expect(sample(st, 'ax_cell_metrics_age_seconds')).toBeLessThan(10);
    expect(sample(st, 'ax_workers', {pool: 'io', status: 'stale'})).toBe(0);
    // Flow control from the type registry, in the same refresh: the worker's types, closed and running.
    expect(sample(st, 'ax_type_paused', {type: 'test_noop'})).toBe(0);
    expect(sample(st, 'ax_breaker_state', {type: 'test_noop', state: 'closed'})).toBe(1);
    expect(sample(st, 'ax_breaker_state', {type: 'test_noop', state: 'open'})).toBe(0);
    // Paused by an operator: 1 with the next refresh (ax_parked_tasks is unit-tested: which task a
    // worker parks depends on when its snapshot sees the pause).
    await o.client.types.pause('test_noop', 'e2e: metrics');
    const paused = await scrapeWhen(
      s,
      (t) => sample(t, 'ax_type_paused', {type: 'test_noop'}) === 1,
      'the scheduler to see test_noop paused',
    );
    expect(sample(paused, 'ax_breaker_state', {type: 'test_noop', state: 'closed'})).toBe(1);

    // A port in use: a clear message and exit 4 (conflict), before anything connects.
    const port = new URL(s).port;
    const clash = o.spawn(['worker', '--handlers', 'test/fixtures/handlers.js', '--health-port', port], vars);
    expect((await clash.exited).code).toBe(4);
    expect(flat(clash.stderr())).toMatch(new RegExp(`127\\.0\\.0\\.1:${port}: the port is in use`));
  });

  it('relay: rows relayed, tasks submitted by type, the outbox lag gauges', async () => {
    const relay = o.spawn(['relay', '--health-port', '0', '--summary-every', '0'], {
      ...o.env.env,
      AX_OUTBOX_MYSQL_URL: biz.url,
      AX_RELAY_INTERVAL: '100ms',
    });
    const r = await endpointOf(relay, 'relay');
    await biz.sql(
      `INSERT INTO task_outbox (type, payload) VALUES ${Array.from({length: 7}, (_, i) => `('order_notify', '{"i": ${i}}')`).join(', ')}`,
    );
    const t = await scrapeWhen(r, (x) => sample(x, 'ax_outbox_relayed_total') === 7, 'the relay to relay 7 rows');
    expect(sample(t, 'ax_tasks_submitted_total', {type: 'order_notify'})).toBe(7);
    expect(sample(t, 'ax_doorbells_published_total', {by: 'relay'})).toBe(7);
    expect(sample(t, 'ax_relay_passes_total', {result: 'ok'})).toBeGreaterThan(0);
    expect(sample(t, 'ax_relay_blocked')).toBe(0);
    expect(sample(t, 'ax_outbox_unsent_rows')).toBeGreaterThanOrEqual(0);
    expect(sample(t, 'ax_outbox_lag_seconds')).toBeGreaterThanOrEqual(0);
  });

  it('an out-of-range AX_METRICS_PORT is bad input (exit 2), --health-port out of range too', async () => {
    const bad = o.spawn(['scheduler'], {...o.env.env, AX_METRICS_PORT: '70000'});
    expect((await bad.exited).code).toBe(2);
    expect(flat(bad.stderr())).toMatch(/AX_METRICS_PORT.*from 0 to 65535/);
    const flag = o.spawn(['relay', '--health-port', '65536'], o.env.env);
    expect((await flag.exited).code).toBe(2);
  });
});
