import {describe, expect, it} from 'vitest';
import {leveledPool, validateWeights, WeightedPicker} from '../../src/core/worker/levels.js';
import {Lane} from '../../src/core/worker/intake.js';
import {NOT_STARTED, WITHDRAWN, type ExecutionPool, type JobResult, type PoolJob} from '../../src/core/worker/pool.js';
import {PRIORITIES, type Priority} from '../../src/core/task/model.js';
import {validatePriority, validateTaskSpec} from '../../src/core/task/validate.js';
import {validateCronInput} from '../../src/core/cron/schedule.js';
import {groupDoorbells} from '../../src/core/broker/types.js';
import {topology} from '../../src/core/broker/amqp/topology.js';

const all = (): boolean => true;

describe('WeightedPicker (smooth weighted round robin)', () => {
  it('interleaves 6:3:1 when every level waits, the same way every time', () => {
    const p = new WeightedPicker();
    const seq = Array.from({length: 10}, () => p.pick(all)![0]).join('');
    expect(seq).toBe('hnhhnhlhnh');
    // The cycle repeats exactly: 600 / 300 / 100 over 1000 picks.
    const counts: Record<string, number> = {high: 0, normal: 0, low: 0};
    for (let i = 0; i < 1000; i++) counts[p.pick(all)!]!++;
    expect(counts).toEqual({high: 600, normal: 300, low: 100});
  });

  it('shares among the levels that wait only, and none starves', () => {
    const p = new WeightedPicker();
    const counts: Record<string, number> = {high: 0, normal: 0, low: 0};
    for (let i = 0; i < 400; i++) counts[p.pick((l) => l !== 'high')!]!++;
    expect(counts).toEqual({high: 0, normal: 300, low: 100});
    // Low alone gets every pick; nothing waiting gives null.
    expect(p.pick((l) => l === 'low')).toBe('low');
    expect(p.pick(() => false)).toBeNull();
  });

  it('a level that had nothing waiting banks no credit: a burst after a quiet spell gets its share, not more', () => {
    const p = new WeightedPicker({high: 1, normal: 1, low: 1});
    for (let i = 0; i < 50; i++) p.pick((l) => l === 'normal');
    const seq = Array.from({length: 6}, () => p.pick(all)![0]).join('');
    expect(seq).toBe('hnlhnl');
  });

  it('refuses weights that would starve a level or are not whole numbers', () => {
    expect(() => validateWeights({high: 6, normal: 0, low: 1})).toThrow(/weight of normal must be a whole number from 1 to 1000, got 0/);
    expect(() => validateWeights({high: 1.5, normal: 1, low: 1})).toThrow(/weight of high/);
    expect(() => new WeightedPicker({high: 6, normal: 3} as never)).toThrow(/weight of low/);
    expect(validateWeights({high: 2, normal: 2, low: 1})).toEqual({high: 2, normal: 2, low: 1});
  });
});

/** An inner pool (FIFO queue of `capacity`) whose jobs finish when the test says: records the start order. */
function manualPool(size: number, capacity = 100): ExecutionPool & {started: string[]; finish(id: string, r?: JobResult): Promise<void>} {
  const runningJobs = new Map<string, (r: JobResult) => void>();
  const queue: Array<{job: PoolJob; resolve: (r: JobResult) => void}> = [];
  let draining = false;
  const started: string[] = [];
  const start = (job: PoolJob, resolve: (r: JobResult) => void): void => {
    started.push(job.taskId);
    runningJobs.set(job.taskId, resolve);
  };
  return {
    name: 'io',
    size,
    capacity,
    started,
    get running() {
      return runningJobs.size;
    },
    get queued() {
      return queue.length;
    },
    tryRun(job: PoolJob) {
      if (draining || runningJobs.size + queue.length >= size + capacity) return null;
      return new Promise<JobResult>((resolve) => (runningJobs.size < size ? start(job, resolve) : queue.push({job, resolve})));
    },
    drain: () => {
      draining = true;
      return Promise.resolve({notStarted: []});
    },
    abort(id) {
      runningJobs.get(id)?.({kind: 'aborted', message: 'aborted'});
      runningJobs.delete(id);
    },
    withdraw(f) {
      const out = queue.filter((w) => f(w.job));
      for (const w of out) {
        queue.splice(queue.indexOf(w), 1);
        w.resolve({kind: 'aborted', message: WITHDRAWN});
      }
      return out.map((w) => w.job.taskId);
    },
    async finish(id, r = {kind: 'success'}) {
      const f = runningJobs.get(id);
      runningJobs.delete(id);
      f?.(r);
      const next = queue.shift();
      if (next) start(next.job, next.resolve);
      await new Promise((res) => setImmediate(res));
    },
  };
}

const job = (taskId: string, priority?: Priority): PoolJob => ({
  taskId,
  type: 'order_notify',
  attempt: 1,
  payload: {},
  timeoutMs: 1000,
  ...(priority ? {priority} : {}),
});

describe('leveledPool: one local queue per level in front of a pool', () => {
  it('runs at once while a slot is free; then a freed slot goes to the next level by weight, FIFO within a level', async () => {
    const inner = manualPool(1);
    const pool = leveledPool(inner, {});
    void pool.tryRun(job('n0'));
    expect(inner.started).toEqual(['n0']);
    for (let i = 1; i <= 5; i++) void pool.tryRun(job(`n${i}`, 'normal'));
    for (let i = 1; i <= 2; i++) void pool.tryRun(job(`l${i}`, 'low'));
    // The high task arrives behind the normal and low backlog…
    void pool.tryRun(job('h1', 'high'));
    expect(pool.queued).toBe(8);
    // …and takes the next free slot.
    await inner.finish('n0');
    expect(inner.started.at(-1)).toBe('h1');
    for (let i = 0; i < 7; i++) await inner.finish(inner.started.at(-1)!);
    // 3:1 between normal and low once high is empty; each level in its own order.
    expect(inner.started).toEqual(['n0', 'h1', 'n1', 'n2', 'n3', 'l1', 'n4', 'n5', 'l2']);
    expect(pool.queued).toBe(0);
  });

  it('bounds each level by the capacity, so a full normal queue still takes high work', () => {
    const inner = manualPool(1, 2);
    const pool = leveledPool(inner, {});
    void pool.tryRun(job('r'));
    expect(pool.tryRun(job('n1'))).not.toBeNull();
    expect(pool.tryRun(job('n2'))).not.toBeNull();
    expect(pool.tryRun(job('n3'))).toBeNull();
    expect(pool.tryRun(job('h1', 'high'))).not.toBeNull();
    expect(pool.tryRun(job('l1', 'low'))).not.toBeNull();
  });

  it('drain: waiting jobs move to the inner pool by weight as far as it has room; the rest resolve as not started at once', async () => {
    const inner = manualPool(1, 2);
    const pool = leveledPool(inner, {});
    const results = new Map<string, Promise<JobResult>>();
    results.set('a', pool.tryRun(job('a'))!);
    // Inner's own queue stays empty while the pool runs: waiting happens per level here.
    for (const [id, level] of [
      ['n1', 'normal'],
      ['n2', 'normal'],
      ['h1', 'high'],
    ] as const)
      results.set(id, pool.tryRun(job(id, level))!);
    expect(inner.queued).toBe(0);
    const drained = pool.drain(1000);
    expect(pool.tryRun(job('late'))).toBeNull();
    expect(await drained).toEqual({notStarted: ['n2']});
    expect(await results.get('n2')).toEqual({kind: 'aborted', message: NOT_STARTED});
    await inner.finish('a');
    await inner.finish('h1');
    expect(inner.started).toEqual(['a', 'h1', 'n1']);
  });

  it('withdraw takes back the waiting jobs it is asked for, at every level, without starting them; running ones go on', async () => {
    const inner = manualPool(1);
    const pool = leveledPool(inner, {});
    const results = new Map<string, Promise<JobResult>>();
    const put = (id: string, type: string, priority?: Priority) => results.set(id, pool.tryRun({...job(id, priority), type})!);
    put('r', 'paused_type');
    put('p1', 'paused_type');
    put('o1', 'order_notify');
    put('p2', 'paused_type', 'high');
    put('p3', 'paused_type', 'low');
    expect(pool.withdraw((j) => j.type === 'paused_type').sort()).toEqual(['p1', 'p2', 'p3']);
    expect(pool.queued).toBe(1);
    for (const id of ['p1', 'p2', 'p3']) expect(await results.get(id)).toEqual({kind: 'aborted', message: WITHDRAWN});
    await inner.finish('r');
    expect(await results.get('r')).toEqual({kind: 'success'});
    // The slot goes to the one left; none of the withdrawn ever starts.
    await inner.finish('o1');
    expect(inner.started).toEqual(['r', 'o1']);
    expect(pool.withdraw(() => true)).toEqual([]);
  });

  it('abort removes a waiting job (resolved as aborted) without starting it', async () => {
    const inner = manualPool(1);
    const pool = leveledPool(inner, {});
    void pool.tryRun(job('a'));
    const b = pool.tryRun(job('b', 'low'))!;
    pool.abort('b', 'lease lost');
    expect(await b).toEqual({kind: 'aborted', message: 'lease lost'});
    await inner.finish('a');
    expect(inner.started).toEqual(['a']);
    expect(pool.queued).toBe(0);
  });
});

describe('Lane: a worker takes in no more than its pool holds, per queue and level', () => {
  it('admits doorbells while they fit, holds the rest in order, and admits them as tasks finish', () => {
    const lane = new Lane(3);
    const admitted: string[] = [];
    lane.offer(2, () => admitted.push('a'));
    lane.offer(2, () => admitted.push('b'));
    lane.offer(1, () => admitted.push('c'));
    // b does not fit (2 + 2 > 3); c waits behind it (FIFO), though it would fit.
    expect(admitted).toEqual(['a']);
    expect(lane.held).toBe(2);
    lane.done();
    expect(admitted).toEqual(['a', 'b']);
    expect(lane.outstanding).toBe(3);
    lane.done(2);
    expect(admitted).toEqual(['a', 'b', 'c']);
    expect(lane.outstanding).toBe(2);
  });

  it('an empty lane takes a doorbell bigger than its cap (it must not wait forever); clear forgets the waiting ones', () => {
    const lane = new Lane(2);
    const admitted: number[] = [];
    lane.offer(5, () => admitted.push(5));
    lane.offer(1, () => admitted.push(1));
    expect(admitted).toEqual([5]);
    lane.clear();
    lane.done(5);
    expect(admitted).toEqual([5]);
    expect(lane.outstanding).toBe(0);
  });
});

describe('priority on submit, cron and the doorbells', () => {
  const defaults = {maxRetries: 5, payloadLimitBytes: 1024, cell: 'default'};
  const id = (): string => '01890000-0000-7000-8000-000000000000';

  it('defaults to normal; an unknown level is a clear error', () => {
    expect(validateTaskSpec({type: 'order_notify'}, defaults, 0, id).priority).toBe('normal');
    expect(validateTaskSpec({type: 'order_notify', priority: 'high'}, defaults, 0, id).priority).toBe('high');
    expect(() => validateTaskSpec({type: 'order_notify', priority: 'urgent'}, defaults, 0, id)).toThrow(
      'priority "urgent" is not a level: use one of high, normal, low',
    );
    expect(() => validatePriority(1)).toThrow(/priority "1" is not a level/);
    const cron = {name: 'daily-report', cron: '@daily', tz: 'UTC', type: 'report_daily'};
    expect(validateCronInput({...cron, priority: 'low'}, {payloadLimitBytes: 1024, nowMs: 0}).priority).toBe('low');
    expect(validateCronInput(cron, {payloadLimitBytes: 1024, nowMs: 0}).priority).toBe('normal');
    expect(() => validateCronInput({...cron, priority: 'top'}, {payloadLimitBytes: 1024, nowMs: 0})).toThrow(
      /priority "top" is not a level/,
    );
  });

  it('one queue per pool and level; normal keeps the name of the single queue of before', () => {
    const t = topology('ax', 'eu', 'quorum');
    expect(t.queue('io')).toBe('ax.eu.io');
    expect(t.queue('io', 'normal')).toBe('ax.eu.io');
    expect(t.queue('io', 'high')).toBe('ax.eu.io.high');
    expect(t.routingKey('cpu', 'low')).toBe('eu.cpu.low');
    expect(t.allQueues()).toEqual([
      ...['io', 'cpu'].flatMap((p) => PRIORITIES.map((l) => (l === 'normal' ? `ax.eu.${p}` : `ax.eu.${p}.${l}`))),
      'ax.eu.poison',
    ]);
  });

  it('groups doorbells per pool and level: a message never mixes levels', () => {
    const groups = groupDoorbells(
      [
        {id: 'a', type: 'order_notify', pool: 'io', priority: 'high'},
        {id: 'b', type: 'order_notify', pool: 'io'},
        {id: 'c', type: 'order_notify', pool: 'io', priority: 'high'},
        {id: 'd', type: 'order_notify', pool: 'io', priority: 'normal'},
      ],
      10,
    );
    expect(groups.map((g) => g.map((m) => m.id))).toEqual([
      ['a', 'c'],
      ['b', 'd'],
    ]);
  });
});
