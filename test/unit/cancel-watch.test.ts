/**
 * The worker's side of a cancel of a running task (core/worker/cancel.ts) over fake pools, and the
 * control message's wire format: only the attempt held at the fence named is stopped, once; a
 * running job is cancelled gently in its pool, one waiting in a local queue is aborted; a control
 * consumer that cannot start leaves the lease renewal as the fallback; malformed messages are refused.
 */
import {describe, expect, it} from 'vitest';
import {type ControlMessage, decodeControl, encodeControl, MAX_CONTROL_TASKS} from '../../src/core/broker/types.js';
import {AxEvents} from '../../src/core/events.js';
import {createLogger} from '../../src/core/log.js';
import {CancelWatch, type HeldRef} from '../../src/core/worker/cancel.js';
import type {ExecutionPool} from '../../src/core/worker/pool.js';

function fakePool(has: Set<string>) {
  const calls: string[] = [];
  const pool = {
    name: 'io',
    size: 1,
    capacity: 1,
    running: 0,
    queued: 0,
    tryRun: () => null,
    drain: async () => ({notStarted: []}),
    abort: (id: string, reason: string) => void calls.push(`abort ${id} ${reason}`),
    cancel: (id: string, reason: string, graceMs: number) => {
      calls.push(`cancel ${id} ${reason} ${graceMs}`);
      return has.has(id);
    },
  } as unknown as ExecutionPool;
  return {pool, calls};
}

function setup(consume: () => Promise<{cancel(): Promise<void>}> = async () => ({cancel: async () => undefined})) {
  const held = new Map<string, HeldRef>([
    ['a', {fence: 4, attempt: 2, type: 'order_notify', pool: 'io'}],
    ['b', {fence: 1, attempt: 1, type: 'order_notify', pool: 'io'}],
  ]);
  const inner = fakePool(new Set(['a'])); // `b` is not in the pool itself: it waits in a local queue
  const outer = fakePool(new Set());
  const events = new AxEvents();
  const seen: unknown[] = [];
  events.on('task:cancelled', (e) => seen.push(e));
  const lines: string[] = [];
  let handler: ((m: ControlMessage) => void) | undefined;
  const watch = new CancelWatch({
    broker: {
      consumeControl: async (h) => {
        handler = h;
        return consume();
      },
    },
    logger: createLogger('debug', {}, (l) => lines.push(l)),
    events,
    graceMs: 750,
    held: (id) => held.get(id),
    pool: () => outer.pool,
    inner: () => inner.pool,
  });
  return {watch, inner, outer, seen, lines, send: (m: ControlMessage) => handler!(m)};
}

const msg = (tasks: Array<{id: string; fence: number}>): ControlMessage => ({kind: 'cancel', tasks, by: 'alice', reason: 'refunded'});

describe('CancelWatch', () => {
  it('stops only the attempts held at the fence named, once each: running ones in the pool, waiting ones by abort', async () => {
    const {watch, inner, outer, seen, send} = setup();
    await watch.start();
    send(
      msg([
        {id: 'a', fence: 3},
        {id: 'zz', fence: 1},
      ]),
    ); // an older attempt of `a`, and a task held elsewhere
    expect(inner.calls).toEqual([]);
    send(
      msg([
        {id: 'a', fence: 4},
        {id: 'b', fence: 1},
      ]),
    );
    expect(inner.calls).toEqual(['cancel a cancelled by alice: refunded 750', 'cancel b cancelled by alice: refunded 750']);
    expect(outer.calls).toEqual(['abort b cancelled by alice: refunded']);
    expect(seen).toEqual([
      {id: 'a', type: 'order_notify', attempt: 2, by: 'alice', reason: 'refunded', graceMs: 750},
      {id: 'b', type: 'order_notify', attempt: 1, by: 'alice', reason: 'refunded', graceMs: 750},
    ]);
    // The same message again (a second cancel, a duplicate): nothing more.
    send(msg([{id: 'a', fence: 4}]));
    expect(inner.calls).toHaveLength(2);
    // Once its outcome is written the id is forgotten (a replayed task may be claimed again).
    watch.done('a');
    send(msg([{id: 'a', fence: 4}]));
    expect(inner.calls).toHaveLength(3);
  });

  it('a control consumer that cannot start is logged; the worker goes on (lease renewal is the fallback)', async () => {
    const {watch, lines} = setup(async () => {
      throw new Error('RabbitMQ down');
    });
    await expect(watch.start()).resolves.toBeUndefined();
    expect(lines.some((l) => l.includes('cancelled tasks stop at the next lease renewal') && l.includes('RabbitMQ down'))).toBe(true);
    await watch.stop();
  });
});

describe('control messages', () => {
  it('round-trip', () => {
    const m: ControlMessage = {kind: 'cancel', tasks: [{id: 'x', fence: 7}], by: 'alice', reason: null};
    expect(decodeControl(encodeControl(m))).toEqual(m);
  });

  it('refuse anything malformed, too big or of an unknown kind', () => {
    const bad = [
      '',
      'not json',
      '[]',
      '{"v":1,"kind":"pause","tasks":[["x",1]],"by":"a","reason":null}',
      '{"v":1,"kind":"cancel","tasks":[],"by":"a","reason":null}',
      '{"v":1,"kind":"cancel","tasks":[["x","1"]],"by":"a","reason":null}',
      '{"v":1,"kind":"cancel","tasks":[[1,1]],"by":"a","reason":null}',
      '{"v":1,"kind":"cancel","tasks":[["x",1]],"reason":null}',
      '{"v":1,"kind":"cancel","tasks":[["x",1]],"by":"a","reason":5}',
      JSON.stringify({
        v: 1,
        kind: 'cancel',
        tasks: Array.from({length: MAX_CONTROL_TASKS + 1}, (_, i) => [`t${i}`, 1]),
        by: 'a',
        reason: null,
      }),
    ];
    for (const b of bad) expect(decodeControl(Buffer.from(b)), b.slice(0, 60)).toBeNull();
  });
});
