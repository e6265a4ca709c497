import {describe, expect, it} from 'vitest';
import {AxEvents, nextEvent} from '../../src/core/events.js';
import {createLogger} from '../../src/core/log.js';
import {countWorkerEvents, logTaskFailures, stackHead} from '../../src/core/worker/subscribers.js';
import {countRelayEvents} from '../../src/core/outbox/stats.js';
import {countSchedulerEvents} from '../../src/core/scheduler/counters.js';

/** A logger that keeps every line it writes, parsed. */
function captureLogger() {
  const lines: Array<Record<string, unknown>> = [];
  return {lines, logger: createLogger('debug', {}, (l) => lines.push(JSON.parse(l) as Record<string, unknown>))};
}

const attempt = {id: 't1', type: 'order_notify', attempt: 2, fence: 3, durationMs: 12.4};

describe('the event stream', () => {
  it('delivers typed events to each listener in order, and stops after off()', () => {
    const ev = new AxEvents();
    const seen: string[] = [];
    const off = ev.on('task:submitted', (e) => seen.push(`a:${e.type}:${e.count}`));
    ev.on('task:submitted', (e) => seen.push(`b:${e.type}:${e.count}`));
    ev.emit('task:submitted', {type: 'order_notify', count: 3});
    off();
    ev.emit('task:submitted', {type: 'order_notify', count: 1});
    expect(seen).toEqual(['a:order_notify:3', 'b:order_notify:3', 'b:order_notify:1']);
  });

  it('has() says whether a name has listeners; emitting without any does nothing', () => {
    const ev = new AxEvents();
    expect(ev.has('task:claimed')).toBe(false);
    ev.emit('task:claimed', {id: 'x', type: 'a_b', attempt: 1, pool: 'io', lateMs: 0});
    const off = ev.on('task:claimed', () => undefined);
    expect(ev.has('task:claimed')).toBe(true);
    off();
    expect(ev.has('task:claimed')).toBe(false);
  });

  it('channel(name) is one object per name; its emit reaches the listeners added through on()', () => {
    const ev = new AxEvents();
    const ch = ev.channel('task:failed');
    expect(ev.channel('task:failed')).toBe(ch);
    expect(ch.active).toBe(false);
    const seen: number[] = [];
    const off = ev.on('task:failed', (e) => seen.push(e.retryDelayMs));
    expect(ch.active).toBe(true);
    ch.emit({...attempt, error: 'x', retryDelayMs: 7});
    ev.emit('task:failed', {...attempt, error: 'x', retryDelayMs: 8});
    off();
    ch.emit({...attempt, error: 'x', retryDelayMs: 9});
    expect(seen).toEqual([7, 8]);
    expect(ch.active).toBe(false);
  });

  it('a listener that throws is reported and does not stop the others or the emitter', () => {
    const errors: Array<[unknown, string]> = [];
    const ev = new AxEvents({onListenerError: (e, name) => errors.push([e, name])});
    let reached = 0;
    ev.on('lease:lost', () => {
      throw new Error('boom');
    });
    ev.on('lease:lost', () => reached++);
    expect(() => ev.emit('lease:lost', {id: 'x', type: 'a_b'})).not.toThrow();
    expect(reached).toBe(1);
    expect(errors).toHaveLength(1);
    expect(errors[0]![1]).toBe('lease:lost');
  });

  it('a listener may unsubscribe during emit without disturbing that emit', () => {
    const ev = new AxEvents();
    const seen: number[] = [];
    const off1 = ev.on('outcome:stale', () => {
      seen.push(1);
      off1();
    });
    ev.on('outcome:stale', () => seen.push(2));
    ev.emit('outcome:stale', {count: 1});
    ev.emit('outcome:stale', {count: 1});
    expect(seen).toEqual([1, 2, 2]);
  });

  it('nextEvent resolves with the first matching event and unsubscribes', async () => {
    const ev = new AxEvents();
    const p = nextEvent(ev, 'task:succeeded', (e) => e.id === 'b');
    ev.emit('task:succeeded', {...attempt, id: 'a'});
    ev.emit('task:succeeded', {...attempt, id: 'b'});
    expect((await p).id).toBe('b');
    expect(ev.has('task:succeeded')).toBe(false);
  });
});

describe('worker subscribers', () => {
  it('count the worker events into the stats', () => {
    const ev = new AxEvents();
    const s = countWorkerEvents(ev);
    ev.emit('task:claimed', {id: 't1', type: 'a_b', attempt: 1, pool: 'io', lateMs: 0});
    ev.emit('task:succeeded', attempt);
    ev.emit('task:failed', {...attempt, error: 'x', retryDelayMs: 5});
    ev.emit('task:dead', {...attempt, error: 'x'});
    ev.emit('task:released', {...attempt, reason: 'released: pool full'});
    ev.emit('outcome:stale', {count: 3});
    ev.emit('doorbell:stale', {id: 't1', type: 'a_b'});
    ev.emit('doorbell:duplicate', {id: 't1', type: 'a_b', extra: 4});
    ev.emit('doorbell:poisoned', {reason: 'x', bytes: 1});
    ev.emit('lease:lost', {id: 't1', type: 'a_b'});
    expect(s).toEqual({
      claimed: 1,
      succeeded: 1,
      failed: 1,
      dead: 1,
      released: 1,
      staleOutcomes: 3,
      staleDeliveries: 1,
      duplicateDeliveries: 4,
      poisoned: 1,
      leasesLost: 1,
    });
  });

  it('log each failure at warn and each dead-letter at error, with type, id, attempt, error and the stack head', () => {
    const ev = new AxEvents();
    const {lines, logger} = captureLogger();
    logTaskFailures(ev, logger);
    const stack = ['Error: payment API said 503', ...Array.from({length: 20}, (_, i) => `    at frame${i} (handlers.js:${i}:1)`)].join(
      '\n',
    );
    ev.emit('task:succeeded', attempt);
    ev.emit('task:failed', {...attempt, error: 'handler failed: payment API said 503', stack, retryDelayMs: 2100});
    ev.emit('task:dead', {...attempt, attempt: 6, error: 'handler failed: gone (attempt 6 of 6, no retries left)'});
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({
      level: 'warn',
      type: 'order_notify',
      id: 't1',
      attempt: 2,
      retryInMs: 2100,
      durationMs: 12,
      error: 'handler failed: payment API said 503',
    });
    expect(lines[0]!.stack).toBe(stackHead(stack));
    expect(String(lines[0]!.stack).split('\n')).toHaveLength(6);
    expect(lines[1]).toMatchObject({
      level: 'error',
      type: 'order_notify',
      id: 't1',
      attempt: 6,
      error: expect.stringMatching(/no retries left/),
    });
    expect(lines[1]).not.toHaveProperty('stack');
  });
});

describe('relay and scheduler counters', () => {
  it('the relay stats are computed from its events', () => {
    const ev = new AxEvents();
    const s = countRelayEvents(ev);
    ev.emit('relay:batch', {rows: 10, relayed: 9, published: 8, failed: 1});
    ev.emit('relay:batch', {rows: 2, relayed: 2, published: 2, failed: 0});
    ev.emit('relay:pass', {at: 5, error: 'ECONNRESET'});
    expect(s).toMatchObject({
      batches: 2,
      relayed: 11,
      published: 10,
      failedRows: 1,
      transientErrors: 1,
      lastError: 'ECONNRESET',
      lastSuccessAt: null,
    });
    ev.emit('relay:pass', {at: 7, error: null});
    ev.emit('relay:blocked', {blocked: true});
    ev.emit('relay:purged', {rows: 5000});
    ev.emit('relay:lag', {lag: {unsent: 1, failed: 0, oldestAgeMs: 30}});
    expect(s).toMatchObject({lastError: null, lastSuccessAt: 7, blocked: true, purged: 5000, lag: {unsent: 1, failed: 0, oldestAgeMs: 30}});
  });

  it('the scheduler counts only its own doorbells as published', () => {
    const ev = new AxEvents();
    const c = countSchedulerEvents(ev);
    ev.emit('doorbell:published', {by: 'scheduler', count: 3, ids: ['a', 'b', 'c']});
    ev.emit('doorbell:published', {by: 'reconciler', count: 2, ids: ['d', 'e']});
    ev.emit('scheduler:publish-failed', {count: 4, error: 'x'});
    ev.emit('scheduler:loaded', {held: 1, at: 99});
    ev.emit('lease:expired', {id: 'z', attempt: 1, to: 'failed', worker: 'w'});
    expect(c).toMatchObject({published: 3, publishFailures: 4, loads: 1, lastLoadAt: 99, rescued: 1, lastReconcile: null});
  });
});
