/**
 * The worker's admission and withdrawal decisions on a fake clock, with in-memory stand-ins for its
 * seams: a store of task rows (claim, defer, outcomes) under a flow registry the test edits, and a
 * broker whose consume() hands the test the delivery callback. What is parked before the claim and
 * what is claimed and run; a pause that lands after the claim read the registry; the tasks waiting
 * in the local queue that a refresh withdraws while the running one finishes. The real-server
 * behaviour is test/integration/worker-safety.test.ts and pause-local-queue.test.ts.
 */
import {describe, expect, it} from 'vitest';
import {silentLogger} from '../../src/core/log.js';
import {type Broker, type Delivery, encodeMessage} from '../../src/core/broker/types.js';
import type {
  ClaimedTask,
  FlowView,
  Outcome,
  ProgressRow,
  TasksClaimParams,
  TypeRecord,
  WorkerStatsDoc,
} from '../../src/core/store/types.js';
import type {TaskState} from '../../src/core/task/state.js';
import {FlowGate} from '../../src/core/flow/gate.js';
import {defineHandlers, TaskResult} from '../../src/core/worker/handlers.js';
import {createIoPool} from '../../src/core/worker/io-pool.js';
import {Worker, type WorkerStore} from '../../src/core/worker/worker.js';
import {fakeClock} from '../helpers/clock.js';
import {typeRecord} from '../helpers/type-record.js';

const T0 = Date.parse('2026-03-01T12:00:00Z');

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}
function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return {promise, resolve};
}

/** Lets pending promise callbacks run (the fake clock moves no time). */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

/**
 * A worker (id `w1`, one IO slot and `capacity` local places) on a fake clock over in-memory rows.
 * `registry` is what the flow refresh reads (edit it, then advance the clock 1 s); `onClaim` runs
 * inside each claim, before it returns (a refresh that reads a pause committed meanwhile).
 */
function harness(
  o: {
    capacity?: number;
    onClaim?: (p: TasksClaimParams) => Promise<void>;
    clockAheadMs?: number;
    /** A dependent (id, type) each task's outcome makes due, as the store's links do (ClaimResult.due). */
    dependents?: Record<string, {id: string; type: string}>;
  } = {},
) {
  const clock = fakeClock(T0);
  const registry: {types: TypeRecord[]} = {types: []};
  const rows = new Map<string, {type: string; state: TaskState; fence: number}>();
  const claims: string[][] = [];
  const deferredTasks: Array<{id: string; parked: string | null; reason: string}> = [];
  const outcomes: Outcome[] = [];
  const acked: string[] = [];
  const published: string[] = [];
  const gates = new Map<string, Deferred>();
  const started: string[] = [];
  const gate = (id: string): Deferred => gates.get(id) ?? (gates.set(id, deferred()), gates.get(id)!);

  const heartbeats: WorkerStatsDoc[] = [];
  const progressWrites: Array<{at: number; rows: ProgressRow[]}> = [];
  // The database's clock: the worker's own is `clockAheadMs` ahead of it.
  const view = (): FlowView => ({at: new Date(clock.now() - (o.clockAheadMs ?? 0)), types: registry.types, handlers: {}});
  const store: WorkerStore = {
    parentsOf: async () => [],
    tasksClaim: async (p) => {
      claims.push([...p.ids]);
      await o.onClaim?.(p);
      const claimed: ClaimedTask[] = [];
      const skipped: Array<{id: string; state: TaskState | null}> = [];
      for (const id of p.ids) {
        const r = rows.get(id);
        if (!r || r.state !== 'submitted') {
          skipped.push({id, state: r?.state ?? null});
          continue;
        }
        r.state = 'running';
        r.fence++;
        claimed.push({
          id,
          type: r.type,
          pool: 'io',
          priority: 'normal',
          payload: '{}',
          attempt: 1,
          maxRetries: 3,
          retryBase: 0,
          fence: r.fence,
          timeoutMs: null,
          lateMs: 0,
          replay: null,
        });
      }
      return {claimed, skipped};
    },
    tasksDefer: (p) => {
      deferredTasks.push(...p.tasks.map((t) => ({id: t.id, parked: t.parked, reason: t.reason})));
      return Promise.resolve({deferred: p.tasks.map((t) => t.id), dead: [], skipped: []});
    },
    outcomesApply: (p) => {
      outcomes.push(...p.outcomes);
      for (const out of p.outcomes) rows.get(out.id)!.state = out.kind === 'complete' ? 'succeeded' : 'submitted';
      const due = p.outcomes.flatMap((x) => {
        const d = o.dependents?.[x.id];
        if (!d) return [];
        rows.set(d.id, {type: d.type, state: 'submitted', fence: 0});
        return [{id: d.id, type: d.type, pool: 'io' as const, priority: 'normal' as const, fence: 0}];
      });
      return Promise.resolve({applied: p.outcomes.map((x) => x.id), stale: [], ...(due.length > 0 ? {due} : {})});
    },
    leasesRenew: (p) => Promise.resolve(p.held.map((h) => h.id)),
    progressWrite: (p) => {
      progressWrites.push({at: clock.monotonic(), rows: p.rows});
      return Promise.resolve(p.rows.length);
    },
    doorbellsMark: () => Promise.resolve(),
    workersUpsert: (p) => Promise.resolve(void (p.stats && heartbeats.push(p.stats))),
    workersStop: () => Promise.resolve(),
    flowView: () => Promise.resolve(view()),
    typesRegister: () => Promise.resolve(),
    parkedRelease: () => Promise.resolve([]),
    outcomeCounts: () => Promise.resolve([]),
    outcomesPurge: () => Promise.resolve(0),
    breakerTransition: () => Promise.resolve(false),
  };

  const consumers: Array<(d: Delivery) => void> = [];
  const broker = {
    consume: (_pool: string, _prefetch: number, onDelivery: (d: Delivery) => void) => {
      consumers.push(onDelivery);
      return Promise.resolve({cancel: () => Promise.resolve()});
    },
    consumeControl: () => Promise.resolve({cancel: () => Promise.resolve()}),
    publish: (m: Array<{id: string}>) => Promise.resolve(void published.push(...m.map((x) => x.id))),
    poison: () => Promise.resolve(),
  } as unknown as Broker;

  const handlers = defineHandlers({
    order_notify: {
      async execute(ctx) {
        started.push(ctx.taskId);
        await gate(ctx.taskId).promise;
        return TaskResult.success();
      },
    },
    // Reports 10 and 20, then 30 and 40 after its first gate, 50 after its second; returns a result.
    progress_task: {
      async execute(ctx) {
        started.push(ctx.taskId);
        ctx.progress(10);
        ctx.progress(20, 'b');
        await gate(ctx.taskId).promise;
        ctx.progress(30);
        ctx.progress(40, 'd');
        await gate(`${ctx.taskId}+`).promise;
        ctx.progress(50, 'e');
        return TaskResult.success({done: true});
      },
    },
  });
  const flow = new FlowGate({store, clock, logger: silentLogger, refreshMs: 1000, breakers: false});
  const pool = createIoPool({
    size: 1,
    capacity: o.capacity ?? 4,
    handlers,
    clock,
    logger: silentLogger,
    onProgress: (job, r) => worker.onProgress(job, r),
  });
  const worker = new Worker({
    store,
    broker,
    clock,
    random: () => 0.5,
    logger: silentLogger,
    handlers,
    pools: {io: pool},
    workerId: 'w1',
    leaseMs: 30_000,
    defaultTimeoutMs: 60_000,
    backoff: {baseMs: 1000, maxMs: 3_600_000},
    flow,
  });

  /** Adds a submitted row and rings for it on the normal level; it is claimed at the end of the turn (group commit). */
  const ring = (id: string, type = 'order_notify'): void => {
    if (!rows.has(id)) rows.set(id, {type, state: 'submitted', fence: 0});
    const body = encodeMessage([{id, type}]);
    // consume() is called per level, high, normal, low: index 1 is normal.
    consumers[1]!({body, redelivered: false, ack: () => void acked.push(id)});
  };
  const pause = (type: string): void => {
    registry.types = [typeRecord(type, new Date(clock.now()), {paused: true, pausedBy: 'ops', pausedReason: 'downstream down'})];
  };
  return {
    clock,
    worker,
    flow,
    rows,
    claims,
    deferredTasks,
    outcomes,
    acked,
    published,
    started,
    gate,
    ring,
    pause,
    heartbeats,
    progressWrites,
  };
}

describe('worker: admission before the claim', () => {
  it('claims and runs a type it may run; parks a paused one unclaimed (no attempt), acking both doorbells', async () => {
    const h = harness();
    await h.worker.start();
    h.pause('report_build');
    await h.clock.advanceAsync(1000); // the flow refresh reads the pause
    h.ring('a');
    h.ring('b', 'report_build');
    await h.clock.advanceAsync(2);
    expect(h.claims).toEqual([['a']]);
    expect(h.deferredTasks).toEqual([{id: 'b', parked: 'paused', reason: 'parked: type paused by ops (downstream down)'}]);
    expect(h.rows.get('b')!.state).toBe('submitted');
    expect(h.acked.sort()).toEqual(['a', 'b']);
    expect(h.started).toEqual(['a']);
    h.gate('a').resolve();
    await settle();
    await h.clock.advanceAsync(5);
    expect(h.outcomes).toMatchObject([{kind: 'complete', id: 'a', fence: 1}]);
    await h.worker.stop({graceMs: 0});
  });

  it('parks a task whose type has no handler here, without claiming it', async () => {
    const h = harness();
    await h.worker.start();
    h.ring('x', 'no_such_type');
    await h.clock.advanceAsync(2);
    expect(h.claims).toEqual([]);
    expect(h.deferredTasks).toMatchObject([{id: 'x', parked: 'unhandled'}]);
    expect(h.acked).toEqual(['x']);
    await h.worker.stop({graceMs: 0});
  });

  it('re-decides after the claim when a refresh came during it: a pause committed meanwhile parks the claimed task (no run)', async () => {
    let during: (() => Promise<void>) | undefined;
    const h = harness({onClaim: () => during?.() ?? Promise.resolve()});
    await h.worker.start();
    during = () => {
      during = undefined;
      h.pause('order_notify');
      return h.flow.refresh();
    };
    h.ring('a');
    await h.clock.advanceAsync(2);
    await settle();
    await h.clock.advanceAsync(5); // the outcome batch
    expect(h.claims).toEqual([['a']]);
    expect(h.started).toEqual([]);
    expect(h.outcomes).toMatchObject([{kind: 'park', id: 'a', fence: 1, parked: 'paused'}]);
    await h.worker.stop({graceMs: 0});
  });
});

describe('worker: progress and results (on its injected clock)', () => {
  it('writes progress at most once a second at the attempt’s fence; the last unwritten report and the result ride in the outcome', async () => {
    const h = harness();
    await h.worker.start();
    h.ring('p', 'progress_task');
    await h.clock.advanceAsync(2);
    expect(h.started).toEqual(['p']);
    await h.clock.advanceAsync(0);
    // Claimed and started at once (group commit): the first report of a quiet writer is written at once.
    expect(h.progressWrites).toEqual([{at: T0, rows: [{id: 'p', fence: 1, percent: 20, note: 'b'}]}]);
    h.gate('p').resolve();
    await h.clock.advanceAsync(997);
    expect(h.progressWrites).toHaveLength(1); // 30 and 40 wait for the second to pass
    await h.clock.advanceAsync(1);
    expect(h.progressWrites[1]).toEqual({at: T0 + 1000, rows: [{id: 'p', fence: 1, percent: 40, note: 'd'}]});
    h.gate('p+').resolve();
    await h.clock.advanceAsync(10);
    expect(h.progressWrites).toHaveLength(2);
    expect(h.outcomes).toEqual([
      {
        kind: 'complete',
        id: 'p',
        fence: 1,
        breaker: 'ok',
        type: 'progress_task',
        result: '{"done":true}',
        progress: {percent: 50, note: 'e'},
      },
    ]);
    await h.clock.advanceAsync(5000);
    expect(h.progressWrites).toHaveLength(2);
    // A task that reports nothing: a plain complete, no progress write.
    h.ring('q');
    await h.clock.advanceAsync(2);
    h.gate('q').resolve();
    await h.clock.advanceAsync(2000);
    expect(h.outcomes[1]).toEqual({kind: 'complete', id: 'q', fence: 1, breaker: 'ok', type: 'order_notify'});
    expect(h.progressWrites).toHaveLength(2);
    await h.worker.stop({graceMs: 0});
  });
});

describe('worker: withdrawing refused tasks from the local queue', () => {
  it('after a refresh that pauses a type, parks the queued tasks of that type (attempt given back) and lets the running one finish', async () => {
    const h = harness({capacity: 4});
    await h.worker.start();
    for (const id of ['a', 'b', 'c']) h.ring(id);
    await h.clock.advanceAsync(2);
    expect(h.claims).toEqual([['a', 'b', 'c']]);
    expect(h.started).toEqual(['a']); // one slot: b and c wait in the local queue
    const withdrawn: Array<{count: number; types: string[]}> = [];
    h.worker.events.on('tasks:withdrawn', (e) => withdrawn.push(e));
    h.pause('order_notify');
    await h.clock.advanceAsync(1000);
    await settle();
    await h.clock.advanceAsync(5);
    expect(withdrawn).toEqual([{count: 2, types: ['order_notify']}]);
    expect(h.outcomes).toMatchObject([
      {
        kind: 'park',
        id: 'b',
        parked: 'paused',
        reason: expect.stringMatching(/withdrawn from w1's local queue before it started/) as unknown,
      },
      {kind: 'park', id: 'c', parked: 'paused'},
    ]);
    // The running task is not interrupted: it finishes and its success is written.
    h.gate('a').resolve();
    await settle();
    await h.clock.advanceAsync(5);
    expect(h.outcomes.map((x) => [x.id, x.kind])).toEqual([
      ['b', 'park'],
      ['c', 'park'],
      ['a', 'complete'],
    ]);
    expect(h.started).toEqual(['a']);
    await h.worker.stop({graceMs: 0});
  });

  it('withdraws nothing when the refresh refuses no queued type', async () => {
    const h = harness({capacity: 4});
    await h.worker.start();
    for (const id of ['a', 'b']) h.ring(id);
    await h.clock.advanceAsync(2);
    const withdrawn: unknown[] = [];
    h.worker.events.on('tasks:withdrawn', (e) => withdrawn.push(e));
    h.pause('report_build');
    await h.clock.advanceAsync(1000);
    await settle();
    expect(withdrawn).toEqual([]);
    h.gate('a').resolve();
    h.gate('b').resolve();
    await settle();
    await h.clock.advanceAsync(5);
    await settle();
    await h.clock.advanceAsync(5);
    expect(h.outcomes.map((x) => [x.id, x.kind])).toEqual([
      ['a', 'complete'],
      ['b', 'complete'],
    ]);
    await h.worker.stop({graceMs: 0});
  });
});

describe("worker: its clock against the database's", () => {
  for (const aheadMs of [30_000, -30_000]) {
    it(`writes its offset from the database's clock with each heartbeat (${aheadMs > 0 ? 'ahead' : 'behind'} 30 s), for ax doctor`, async () => {
      const h = harness({clockAheadMs: aheadMs});
      await h.worker.start();
      // The registration comes before the first flow read: no clock yet.
      expect(h.heartbeats[0]?.clock).toBeUndefined();
      await h.worker.runOnce();
      // Read at once by the in-memory store: a round trip of 0, known to NOW(3)'s millisecond.
      expect(h.heartbeats.at(-1)?.clock).toEqual({offsetMs: aheadMs, errorMs: 1});
      await h.clock.advanceAsync(5000);
      expect(h.heartbeats.at(-1)?.clock).toEqual({offsetMs: aheadMs, errorMs: 1});
      await h.worker.stop({graceMs: 0});
    });
  }
});

describe('worker: tasks its outcomes make due (a chain, a batch callback)', () => {
  it('claims a dependent it has a handler and room for itself, without a doorbell', async () => {
    const h = harness({dependents: {parent: {id: 'child', type: 'order_notify'}}});
    await h.worker.start();
    h.ring('parent');
    await settle();
    h.gate('parent').resolve();
    await h.clock.advanceAsync(10); // the outcome batch's wait
    await settle();
    expect(h.claims).toEqual([['parent'], ['child']]);
    expect(h.started).toEqual(['parent', 'child']);
    expect(h.published).toEqual([]);
  });

  it('rings a dependent of a type it has no handler for', async () => {
    const h = harness({dependents: {parent: {id: 'child', type: 'report_build'}}});
    await h.worker.start();
    h.ring('parent');
    await settle();
    h.gate('parent').resolve();
    await h.clock.advanceAsync(10);
    await settle();
    expect(h.claims).toEqual([['parent']]);
    expect(h.published).toEqual(['child']);
  });
});
