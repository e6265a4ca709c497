/**
 * The relay's pacing and ringing rules on a fake clock, with in-memory stand-ins for its seams (the
 * business database's task_outbox, ax's tasksInsert/doorbellsMark/doorbellsForget, the broker):
 * when each pass loop claims next (rows found, busy, idle, staggered, after an error, while the
 * broker blocks), and what a batch marks, rings and undoes. The real-server behaviour is
 * test/integration/outbox.test.ts.
 */
import {describe, expect, it} from 'vitest';
import {AxError} from '../../src/core/errors.js';
import {silentLogger} from '../../src/core/log.js';
import type {Broker, TaskMessage} from '../../src/core/broker/types.js';
import {BUSY_POLL_MS} from '../../src/core/outbox/pacing.js';
import {PASS_BACKOFF, Relay, heldRuns, type RelayOptions} from '../../src/core/outbox/relay.js';
import type {InsertResult, OutboxRow, RungRef, TasksInsertParams} from '../../src/core/store/types.js';
import {backoffMs} from '../../src/core/retry/backoff.js';
import {fakeClock} from '../helpers/clock.js';
import {outboxRow} from '../helpers/outbox-row.js';

const T0 = Date.parse('2026-03-01T12:00:00Z');
const INTERVAL = 1000;

/** Lets pending promise callbacks run (the fake clock moves no time). */
const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

function deferred(): {promise: Promise<void>; resolve: () => void} {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return {promise, resolve};
}

/**
 * A relay on a fake clock. The outbox is an array of rows (`add` appends some); ax's tasks a map of
 * id → {fence, published}. Every seam call is recorded with the clock's time.
 */
function harness(
  o: {publish?: (m: TaskMessage[]) => Promise<void>; claimFails?: () => boolean; onInsert?: () => void} & Partial<RelayOptions> = {},
) {
  const clock = fakeClock(T0);
  let seq = 0;
  const rows: Array<OutboxRow & {claimed: boolean; sent: boolean}> = [];
  const claims: Array<{at: number; rows: number}> = [];
  const skips: Array<ReadonlyArray<readonly [number, number]> | undefined> = [];
  const inserts: Array<{ids: string[]; marked: string[]}> = [];
  const published: string[][] = [];
  const marks: RungRef[][] = [];
  const forgotten: RungRef[][] = [];
  const sent: number[][] = [];
  const tasks = new Map<string, {fence: number; published: boolean}>();
  /** Tasks run meanwhile (rung by a scheduler): tasksInsert finds them succeeded. */
  const ran = new Set<string>();
  const listeners = new Map<string, Array<(info?: unknown) => void>>();
  const {publish, claimFails, onInsert, ...rest} = o;
  const outbox: RelayOptions['outbox'] = {
    outboxClaim: ({limit, skip}) => {
      if (claimFails?.()) return Promise.reject(new AxError('unavailable', 'business database down (test)'));
      skips.push(skip);
      const skipped = (id: number): boolean => (skip ?? []).some(([from, to]) => id >= from && id <= to);
      const got = rows.filter((r) => !r.claimed && !r.sent && !skipped(r.id)).slice(0, limit);
      for (const r of got) r.claimed = true;
      claims.push({at: clock.now() - T0, rows: got.length});
      return Promise.resolve(got);
    },
    outboxMarkSent: ({ids}) => {
      sent.push(ids);
      for (const r of rows) if (ids.includes(r.id)) Object.assign(r, {sent: true, claimed: false});
      return Promise.resolve(ids.length);
    },
    outboxMarkFailed: () => Promise.resolve(),
    outboxRelease: ({ids}) => {
      for (const r of rows) if (ids.includes(r.id)) r.claimed = false;
      return Promise.resolve();
    },
    outboxPurgeSent: () => Promise.resolve(0),
    outboxLag: () => Promise.resolve({unsent: 0, failed: 0, oldestAgeMs: null}),
  };
  const store: RelayOptions['store'] = {
    tasksInsertLinked: () => Promise.reject(new Error('no dependencies in these tests')),
    tasksInsert: (p: TasksInsertParams) => {
      const marked = new Set(p.markPublished ?? []);
      inserts.push({ids: p.tasks.map((t) => t.id), marked: [...marked]});
      onInsert?.();
      const r: InsertResult = {inserted: [], existing: [], conflicts: []};
      for (const t of p.tasks) {
        const e = tasks.get(t.id);
        if (e) r.existing.push({id: t.id, existingId: t.id, state: ran.has(t.id) ? 'succeeded' : 'submitted', fence: e.fence});
        else {
          tasks.set(t.id, {fence: 0, published: marked.has(t.id)});
          r.inserted.push(t.id);
        }
      }
      return Promise.resolve(r);
    },
    doorbellsMark: ({rung}) => {
      marks.push(rung);
      for (const {id} of rung) tasks.get(id)!.published = true;
      return Promise.resolve();
    },
    doorbellsForget: ({rung}) => {
      forgotten.push(rung);
      for (const {id} of rung) Object.assign(tasks.get(id)!, {published: false, fence: tasks.get(id)!.fence + 1});
      return Promise.resolve();
    },
  };
  const broker = {
    publish: (m: TaskMessage[]) => {
      published.push(m.map((x) => x.id));
      return publish ? publish(m) : Promise.resolve();
    },
    on: (event: string, fn: (info?: unknown) => void) => listeners.set(event, [...(listeners.get(event) ?? []), fn]),
  } as unknown as Broker;
  const relay = new Relay({
    outbox,
    store,
    broker,
    clock,
    random: () => 0.5,
    logger: silentLogger,
    defaults: {maxRetries: 3, payloadLimitBytes: 65_536, cell: 'default'},
    id: 'relay:test',
    intervalMs: INTERVAL,
    batchSize: 2,
    leaseMs: 30_000,
    retentionMs: 0,
    concurrency: 1,
    ...rest,
  });
  /** Appends outbox rows; `delayMs` makes them due later. */
  const add = (n: number, over: Partial<OutboxRow> = {}): void => {
    for (let i = 0; i < n; i++) {
      const id = ++seq;
      rows.push({...outboxRow({id, payload: `{"n":${id}}`, createdAt: new Date(clock.now()), ...over}), claimed: false, sent: false});
    }
  };
  const emit = (event: string): void => {
    for (const fn of listeners.get(event) ?? []) fn();
  };
  /** The times (ms since T0) of claims in [from, to). */
  const claimTimes = (from = 0, to = Infinity): number[] => claims.filter((c) => c.at >= from && c.at < to).map((c) => c.at);
  return {clock, relay, rows, claims, skips, claimTimes, inserts, published, marks, forgotten, sent, tasks, ran, add, emit};
}

/** n evenly spaced times: from, from + step, … */
const every = (from: number, step: number, n: number): number[] => Array.from({length: n}, (_, i) => from + i * step);

describe('relay pacing', () => {
  it('goes again at once after a pass that found rows, short batch or not', async () => {
    const h = harness({batchSize: 500});
    h.add(3);
    await h.relay.start();
    await h.clock.advanceAsync(0);
    // The short batch (3 of 500) is followed at once by a pass that finds nothing.
    expect(h.claims).toEqual([
      {at: 0, rows: 3},
      {at: 0, rows: 0},
    ]);
    // Rows committed during a busy spell are taken by the next busy poll.
    h.add(1);
    await h.clock.advanceAsync(BUSY_POLL_MS);
    expect(h.claims.slice(2)).toEqual([
      {at: BUSY_POLL_MS, rows: 1},
      {at: BUSY_POLL_MS, rows: 0},
    ]);
    await h.relay.stop();
  });

  it('polls every BUSY_POLL_MS for one interval after the last rows found, then once per interval', async () => {
    const h = harness();
    h.add(1);
    await h.relay.start();
    await h.clock.advanceAsync(3500);
    // Found at 0; busy polls until 1000 (the first pass that is an interval past the last find),
    // then idle: the loop's slots at 2000 and 3000.
    expect(h.claimTimes()).toEqual([0, ...every(0, BUSY_POLL_MS, INTERVAL / BUSY_POLL_MS + 1), 2000, 3000]);
    await h.relay.stop();
  });

  it('staggers the idle polls of its loops over the interval, and a lone row is taken at the next one', async () => {
    const h = harness({concurrency: 2});
    await h.relay.start();
    await h.clock.advanceAsync(2999);
    expect(h.claimTimes()).toEqual([0, 500, 1000, 1500, 2000, 2500]);
    // A row committed at 3100 waits for loop 2's slot at 3500, not loop 1's at 4000.
    await h.clock.advanceAsync(101);
    h.add(1);
    await h.clock.advanceAsync(400);
    expect(h.claims.filter((c) => c.rows > 0)).toEqual([{at: 3500, rows: 1}]);
    expect(h.sent).toEqual([[1]]);
    await h.relay.stop();
  });

  it('has three loops by default: an idle relay looks every third of an interval', async () => {
    const h = harness({concurrency: undefined});
    await h.relay.start();
    await h.clock.advanceAsync(1999);
    expect(h.claimTimes().map(Math.round)).toEqual([0, 333, 667, 1000, 1333, 1667]);
    await h.relay.stop();
  });

  it('falls back into the stagger after a busy spell that both loops went through together', async () => {
    const h = harness({concurrency: 2});
    await h.relay.start();
    await h.clock.advanceAsync(1200);
    h.add(6); // three batches of 2, found by loop 2 at its slot at 1500: busy from then on
    await h.clock.advanceAsync(300);
    expect(h.claims.filter((c) => c.rows > 0)).toEqual(Array(3).fill({at: 1500, rows: 2}));
    await h.clock.advanceAsync(5000 - 1500);
    // Both loops busy-poll until an interval past the find (loop 1 from its slot at 2000), both
    // fall idle at 2500, and from then on each is back on its own slots: 3000/4000, 3500/4500.
    expect(h.claimTimes(2000, 2501)).toEqual(expect.arrayContaining([2000, 2020, 2480, 2500]));
    expect(h.claimTimes(2500, 2501)).toEqual([2500, 2500]);
    expect(h.claimTimes(2501, 5000)).toEqual([3000, 3500, 4000, 4500]);
    await h.relay.stop();
  });

  it('backs off after a failed pass (doubling, jittered) and goes back to its pace after a success', async () => {
    let failing = true;
    const h = harness({claimFails: () => failing});
    await h.relay.start();
    const fails: number[] = [];
    h.relay.events.on('relay:pass', (e) => e.error !== null && fails.push(e.at - T0));
    await h.clock.advanceAsync(2000);
    const first = backoffMs(1, PASS_BACKOFF, () => 0.5);
    const second = backoffMs(2, PASS_BACKOFF, () => 0.5);
    expect(fails).toEqual([0, first, first + second]);
    failing = false;
    h.add(1);
    await h.clock.advanceAsync(first + second + backoffMs(3, PASS_BACKOFF, () => 0.5) - 2000);
    // The pass after the third backoff succeeds, finds the row and goes again at once.
    const ok = first + second + backoffMs(3, PASS_BACKOFF, () => 0.5);
    expect(h.claims).toEqual([
      {at: ok, rows: 1},
      {at: ok, rows: 0},
    ]);
    expect(h.sent).toEqual([[1]]);
    await h.relay.stop();
  });

  it('claims nothing while the broker blocks publishers, and resumes once it unblocks', async () => {
    const h = harness();
    await h.relay.start();
    await h.clock.advanceAsync(100);
    h.emit('blocked');
    h.add(2);
    await h.clock.advanceAsync(3000);
    expect(h.claims.filter((c) => c.at > 0)).toEqual([]);
    expect(h.relay.ready()).toBe(false);
    h.emit('unblocked');
    // The blocked pass at 3000 waits one interval: the next claims at 4000 find the rows.
    await h.clock.advanceAsync(1000);
    expect(h.claims.filter((c) => c.rows > 0)).toEqual([{at: 4000, rows: 2}]);
    await h.relay.stop();
  });
});

describe('relay batches', () => {
  it('writes new due tasks already marked published, rings them, marks no doorbell, then marks the rows sent', async () => {
    const confirm = deferred();
    const h = harness({batchSize: 10, publish: () => confirm.promise});
    h.add(2);
    h.add(1, {delayMs: 60_000});
    const pass = h.relay.once();
    await settle();
    const [a, b, later] = h.inserts[0]!.ids;
    expect(h.inserts).toEqual([{ids: [a, b, later], marked: [a, b]}]);
    expect(h.tasks.get(a!)).toEqual({fence: 0, published: true});
    expect(h.tasks.get(later!)).toEqual({fence: 0, published: false});
    expect(h.published).toEqual([[a, b]]);
    // Rows are sent only after the confirm.
    expect(h.sent).toEqual([]);
    confirm.resolve();
    expect(await pass).toBe(3);
    expect(h.sent).toEqual([[1, 2, 3]]);
    expect(h.marks).toEqual([]);
    expect(h.relay.stats).toMatchObject({relayed: 3, published: 2});
  });

  it('rings a task that fell due while its batch was written, and marks it after the confirm', async () => {
    const h = harness({batchSize: 10, onInsert: () => h.clock.advance(5)});
    h.add(1, {delayMs: 3});
    await h.relay.once();
    const [a] = h.inserts[0]!.ids;
    expect(h.inserts[0]!.marked).toEqual([]);
    expect(h.published).toEqual([[a]]);
    expect(h.marks).toEqual([[{id: a, fence: 0}]]);
  });

  it('rings tasks found already in ax and not yet run, and marks them at the fence they were found with', async () => {
    const h = harness({batchSize: 10});
    h.add(2);
    await h.relay.once();
    const [a, b] = h.inserts[0]!.ids;
    h.tasks.get(b!)!.fence = 4;
    // The relay crashed before marking the rows sent: they are claimed again.
    for (const r of h.rows) r.sent = false;
    await h.relay.once();
    expect(h.inserts[1]).toEqual({ids: [a, b], marked: [a, b]});
    expect(h.published).toEqual([
      [a, b],
      [a, b],
    ]);
    expect(h.marks).toEqual([
      [
        {id: a, fence: 0},
        {id: b, fence: 4},
      ],
    ]);
  });

  it('undoes the mark of new tasks when the publish fails, hands the rows back, and rings them on the next pass', async () => {
    let down = true;
    const h = harness({
      batchSize: 10,
      publish: () => (down ? Promise.reject(new AxError('unavailable', 'RabbitMQ down (test)')) : Promise.resolve()),
    });
    h.add(2);
    await expect(h.relay.once()).rejects.toThrow(/RabbitMQ down/);
    const [a, b] = h.inserts[0]!.ids;
    expect(h.forgotten).toEqual([
      [
        {id: a, fence: 0},
        {id: b, fence: 0},
      ],
    ]);
    expect(h.tasks.get(a!)).toEqual({fence: 1, published: false});
    expect(h.sent).toEqual([]);
    expect(h.rows.every((r) => !r.claimed && !r.sent)).toBe(true);
    expect(h.relay.ready()).toBe(false);
    down = false;
    expect(await h.relay.once()).toBe(2);
    expect(h.published.at(-1)).toEqual([a, b]);
    expect(h.marks).toEqual([
      [
        {id: a, fence: 1},
        {id: b, fence: 1},
      ],
    ]);
    expect(h.sent).toEqual([[1, 2]]);
  });

  it('stays not ready after a failed publish when the retried batch has nothing to ring, until a doorbell is confirmed', async () => {
    let down = true;
    const h = harness({publish: () => (down ? Promise.reject(new AxError('unavailable', 'RabbitMQ down (test)')) : Promise.resolve())});
    h.add(1);
    await h.relay.start();
    await h.clock.advanceAsync(0);
    const [a] = h.inserts[0]!.ids;
    expect(h.published).toEqual([[a]]);
    expect(h.forgotten).toEqual([[{id: a, fence: 0}]]);
    // A scheduler rings the forgotten task and a worker runs it before the pass after the backoff:
    // that pass sends the row with nothing to ring. RabbitMQ still refuses this relay's publishes.
    h.ran.add(a!);
    const retry = backoffMs(1, PASS_BACKOFF, () => 0.5);
    await h.clock.advanceAsync(retry);
    expect(h.sent).toEqual([[1]]);
    expect(h.published).toEqual([[a]]);
    expect(h.relay.stats.lastSuccessAt).toBe(T0 + retry);
    expect(h.relay.ready()).toBe(false);
    // An interval after the failure a pass rings the failed doorbell again: refused, still not ready.
    await h.clock.advanceAsync(INTERVAL - retry);
    expect(h.published).toEqual([[a], [a]]);
    expect(h.relay.ready()).toBe(false);
    // RabbitMQ takes publishes again: the next probe, an interval later, is confirmed.
    down = false;
    await h.clock.advanceAsync(INTERVAL - 1);
    expect(h.published).toHaveLength(2);
    expect(h.relay.ready()).toBe(false);
    await h.clock.advanceAsync(1);
    expect(h.published).toEqual([[a], [a], [a]]);
    expect(h.relay.ready()).toBe(true);
    // A probe marks nothing, and once one is confirmed there is nothing more to probe.
    await h.clock.advanceAsync(3 * INTERVAL);
    expect(h.published).toHaveLength(3);
    expect(h.marks).toEqual([]);
    expect(h.relay.stats).toMatchObject({relayed: 1, published: 0, transientErrors: 1});
    await h.relay.stop();
  });

  it('does not probe while disconnected; a new connection makes a relay whose publish failed ready again', async () => {
    const h = harness({publish: () => Promise.reject(new AxError('unavailable', 'RabbitMQ down (test)'))});
    h.add(1);
    await h.relay.start();
    await h.clock.advanceAsync(0);
    const [a] = h.inserts[0]!.ids;
    h.ran.add(a!);
    h.emit('disconnected');
    await h.clock.advanceAsync(2 * INTERVAL);
    expect(h.sent).toEqual([[1]]);
    expect(h.published).toEqual([[a]]);
    expect(h.relay.ready()).toBe(false);
    // A new connection is a new start: ready again, and nothing left to probe.
    h.emit('connected');
    expect(h.relay.ready()).toBe(true);
    await h.clock.advanceAsync(3 * INTERVAL);
    expect(h.published).toEqual([[a]]);
    await h.relay.stop();
  });

  it("has the other passes' claims skip the id runs of a batch in flight, until its rows are sent", async () => {
    const confirm = deferred();
    let calls = 0;
    const h = harness({batchSize: 3, publish: () => (++calls === 1 ? confirm.promise : Promise.resolve())});
    h.add(5);
    const first = h.relay.once();
    await settle();
    expect(await h.relay.once()).toBe(2);
    expect(h.skips).toEqual([undefined, [[1, 3]]]);
    confirm.resolve();
    expect(await first).toBe(3);
    h.add(1);
    expect(await h.relay.once()).toBe(1);
    expect(h.skips[2]).toBeUndefined();
  });

  it('gives a batch as runs of consecutive ids, and none when it is scattered over more than 8', () => {
    expect(heldRuns([5, 3, 4, 9, 1, 1])).toEqual([
      [1, 1],
      [3, 5],
      [9, 9],
    ]);
    expect(heldRuns(every(0, 2, 8))).toHaveLength(8);
    expect(heldRuns(every(0, 2, 9))).toEqual([]);
  });
});
