/**
 * A steady stream of submits for fault scenarios: every tick a batch of tasks is submitted and
 * flushed; the ids whose flush resolved are the acknowledged ones the witness checks
 * (test/helpers/witness.ts) must find, each with the earliest time it may run. Ticks never overlap:
 * when a flush is slow (a fault), the stream waits, as a producer with a full buffer would.
 */
import type {AxClient} from '../../src/core/client.js';
import type {TaskSpec} from '../../src/core/task/model.js';

export interface SteadyLoad {
  /** Acknowledged task ids, in order. */
  readonly ids: string[];
  /** Earliest start of each acknowledged task: the time before its submit plus its delay. */
  readonly dueAt: Map<string, number>;
  /** Flushes that failed (their tasks are not counted as acknowledged), with why. */
  readonly failures: string[];
  /** Longest flush so far, ms. */
  readonly maxFlushMs: number;
  /** Stops after the tick in progress; resolves when it is done. */
  stop(): Promise<void>;
}

/**
 * Submits `perTick` tasks made by `make(n)` (n counts from 0) every `tickMs`, flushing after each
 * batch, until stop().
 */
export function steadyLoad(client: AxClient, o: {perTick: number; tickMs: number; make: (n: number) => TaskSpec}): SteadyLoad {
  const ids: string[] = [];
  const dueAt = new Map<string, number>();
  const failures: string[] = [];
  let maxFlushMs = 0;
  let running = true;
  let n = 0;
  const loop = (async () => {
    while (running) {
      const started = Date.now();
      const batch: Array<{id: string; due: number}> = [];
      for (let k = 0; k < o.perTick; k++) {
        const spec = o.make(n++);
        const before = Date.now();
        const id = await client.submit(spec);
        batch.push({id, due: before + delayOf(spec)});
      }
      try {
        await client.flush();
        for (const b of batch) {
          ids.push(b.id);
          dueAt.set(b.id, b.due);
        }
      } catch (e) {
        failures.push(e instanceof Error ? e.message : String(e));
      }
      maxFlushMs = Math.max(maxFlushMs, Date.now() - started);
      const rest = o.tickMs - (Date.now() - started);
      if (rest > 0 && running) await new Promise((r) => setTimeout(r, rest));
    }
  })();
  return {
    ids,
    dueAt,
    failures,
    get maxFlushMs() {
      return maxFlushMs;
    },
    async stop() {
      running = false;
      await loop;
    },
  };
}

/** A spec's delay in ms (numbers only: the scenarios use numbers). */
function delayOf(spec: TaskSpec): number {
  if (spec.delay === undefined) return 0;
  if (typeof spec.delay !== 'number') throw new Error('steadyLoad: give delays in ms');
  return spec.delay;
}
