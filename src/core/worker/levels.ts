/**
 * Priority levels inside a worker: a pure weighted picker, and a pool wrapper that keeps one local
 * queue per level in front of an execution pool and hands the pool the next job by weight.
 *
 * Why here and not in RabbitMQ: quorum queues (RabbitMQ 3.10) have no message priorities, and even
 * a priority queue would not help once a worker has taken its prefetch of normal doorbells into its
 * local queue. So each level has its own queue in RabbitMQ and its own consumer (a high doorbell is
 * delivered at once, whatever the normal backlog), and its own bounded local queue here (a full
 * normal queue never refuses high work). A free slot goes to the next level by smooth weighted
 * round robin over the levels that have work waiting (like Sidekiq's and Asynq's queue weights):
 * with the default weights 6:3:1, a busy high level gets 60% of the slots and low still gets 10%,
 * so no level starves.
 */
import {DEFAULT_PRIORITY, PRIORITIES, type Priority} from '../task/model.js';
import {invalid} from '../errors.js';
import {NOT_STARTED, WITHDRAWN, type ExecutionPool, type JobResult, type PoolJob} from './pool.js';

/** Relative shares of a pool's slots per level when every level has work waiting. */
export type PriorityWeights = Record<Priority, number>;

export const DEFAULT_PRIORITY_WEIGHTS: Readonly<PriorityWeights> = {high: 6, normal: 3, low: 1};

/** Throws invalid_input unless every level has a whole weight from 1 to 1000 (0 would starve it). */
export function validateWeights(w: PriorityWeights): PriorityWeights {
  for (const l of PRIORITIES) {
    const v = w[l];
    if (!Number.isInteger(v) || v < 1 || v > 1000)
      throw invalid(`priority weight of ${l} must be a whole number from 1 to 1000, got ${String(v)}`);
  }
  return {...w};
}

/**
 * Smooth weighted round robin (nginx's): deterministic, and it interleaves (6:3:1 gives
 * h n h h n h l h n h, not six highs in a row). Only the levels with work waiting take part; a
 * level that has none loses its accumulated credit, so a burst after a quiet spell gets its share,
 * not more.
 */
export class WeightedPicker {
  private readonly current: Record<Priority, number> = {high: 0, normal: 0, low: 0};
  private readonly weights: PriorityWeights;

  constructor(weights: PriorityWeights = DEFAULT_PRIORITY_WEIGHTS) {
    this.weights = validateWeights(weights);
  }

  /** The level to serve next among those for which `waiting(level)` is true; null when none waits. */
  pick(waiting: (level: Priority) => boolean): Priority | null {
    let best: Priority | null = null;
    let total = 0;
    for (const l of PRIORITIES) {
      if (!waiting(l)) {
        this.current[l] = 0;
        continue;
      }
      this.current[l] += this.weights[l];
      total += this.weights[l];
      if (best === null || this.current[l] > this.current[best]) best = l;
    }
    if (best !== null) this.current[best] -= total;
    return best;
  }
}

interface Waiting {
  job: PoolJob;
  resolve: (r: JobResult) => void;
}

/** A FIFO with O(1) shift (a local queue holds up to its capacity: thousands). */
class Fifo<T> {
  private items: T[] = [];
  private head = 0;
  get length(): number {
    return this.items.length - this.head;
  }
  push(x: T): void {
    this.items.push(x);
  }
  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const x = this.items[this.head++];
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return x;
  }
  /** Removes and returns the entries matching `f` (abort, withdraw: rare). */
  remove(f: (x: T) => boolean): T[] {
    const live = this.items.slice(this.head);
    const out = live.filter(f);
    if (out.length > 0) {
      this.items = live.filter((x) => !f(x));
      this.head = 0;
    }
    return out;
  }
  takeAll(): T[] {
    const out = this.items.slice(this.head);
    this.items = [];
    this.head = 0;
    return out;
  }
}

export interface LeveledPoolOptions {
  /** Default DEFAULT_PRIORITY_WEIGHTS. */
  weights?: PriorityWeights;
}

/**
 * Wraps `inner` with one local queue per priority level, each bounded by `inner.capacity`. Jobs go
 * straight to `inner` while it has a free slot (running + queued < size) and nothing waits here —
 * with one level in use this is the inner pool with one callback per finished job. Otherwise a
 * job waits at its level (`job.priority`, default normal) and a freed slot takes the next one by
 * weight. `tryRun` returns null only when the job's own level is full or the pool is draining.
 * `drain` hands the waiting jobs to `inner`'s own queue by weight as far as it has room (those
 * beyond resolve at once as not started, named in `notStarted`), then drains `inner`.
 */
export function leveledPool(inner: ExecutionPool, o: LeveledPoolOptions): ExecutionPool {
  const picker = new WeightedPicker(o.weights);
  const waiting: Record<Priority, Fifo<Waiting>> = {high: new Fifo(), normal: new Fifo(), low: new Fifo()};
  let nWaiting = 0;
  let draining = false;
  let drained: Promise<{notStarted: string[]}> | null = null;
  const hasSlot = (): boolean => inner.running + inner.queued < inner.size;

  const run = (job: PoolJob, resolve: (r: JobResult) => void): void => {
    const p = inner.tryRun(job);
    if (!p) {
      // The inner pool refused (it is draining): the task goes back to storage unused.
      resolve({kind: 'aborted', message: NOT_STARTED});
      return;
    }
    void p.then((r) => {
      resolve(r);
      afterJob();
    });
  };

  /** A slot freed: the next waiting job, if any, takes it. */
  const afterJob = (): void => {
    if (nWaiting > 0) pump();
  };

  const pump = (): void => {
    while (nWaiting > 0 && hasSlot()) {
      const level = picker.pick((l) => waiting[l].length > 0)!;
      const w = waiting[level].shift()!;
      nWaiting--;
      run(w.job, w.resolve);
    }
  };

  return {
    name: inner.name,
    size: inner.size,
    capacity: inner.capacity,
    get running() {
      return inner.running;
    },
    get queued() {
      return inner.queued + nWaiting;
    },
    tryRun(job) {
      if (draining) return null;
      if (nWaiting === 0 && hasSlot()) {
        // The hot path with one level in use: the inner pool's own promise, one callback more.
        const p = inner.tryRun(job);
        if (p) void p.then(afterJob);
        return p;
      }
      const q = waiting[job.priority ?? DEFAULT_PRIORITY];
      if (q.length >= inner.capacity) return null;
      return new Promise<JobResult>((resolve) => {
        q.push({job, resolve});
        nWaiting++;
        pump();
      });
    },
    drain(graceMs) {
      draining = true;
      drained ??= (() => {
        // What waits here goes to the inner pool's own queue, by weight, as far as it has room, so
        // it drains exactly as the inner pool does (the same grace period, the same messages);
        // the rest never gets a slot in time anyway and goes back to storage at once.
        const refused: string[] = [];
        while (nWaiting > 0) {
          const level = picker.pick((l) => waiting[l].length > 0)!;
          const w = waiting[level].shift()!;
          nWaiting--;
          const p = inner.tryRun(w.job);
          if (p) void p.then(w.resolve);
          else {
            refused.push(w.job.taskId);
            w.resolve({kind: 'aborted', message: NOT_STARTED});
          }
        }
        return inner.drain(graceMs).then((r) => ({notStarted: [...refused, ...r.notStarted]}));
      })();
      return drained;
    },
    withdraw(f) {
      const out: string[] = [];
      for (const l of PRIORITIES)
        for (const w of waiting[l].remove((x) => f(x.job))) {
          nWaiting--;
          out.push(w.job.taskId);
          w.resolve({kind: 'aborted', message: WITHDRAWN});
        }
      return [...out, ...inner.withdraw(f)];
    },
    abort(taskId, reason) {
      for (const l of PRIORITIES)
        for (const w of waiting[l].remove((x) => x.job.taskId === taskId)) {
          nWaiting--;
          w.resolve({kind: 'aborted', message: reason});
        }
      inner.abort(taskId, reason);
    },
  };
}
