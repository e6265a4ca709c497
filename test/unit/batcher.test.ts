/**
 * MicroBatcher, the grouping under the worker's claims and outcomes, on a fake clock: the timed
 * mode (a batch after maxWaitMs or at maxSize) and group commit (at once when a slot is free, the
 * items that arrive meanwhile as the next batch).
 */
import {describe, expect, it} from 'vitest';
import {MicroBatcher} from '../../src/core/batcher.js';
import {fakeClock} from '../helpers/clock.js';

const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

function harness(o: {groupCommit?: boolean; concurrency?: number; maxSize?: number} = {}) {
  const clock = fakeClock(0);
  const batches: Array<{items: number[]; at: number}> = [];
  const gates: Array<() => void> = [];
  const b = new MicroBatcher<number>({
    maxSize: o.maxSize ?? 4,
    maxWaitMs: 5,
    concurrency: o.concurrency ?? 1,
    clock,
    ...(o.groupCommit === undefined ? {} : {groupCommit: o.groupCommit}),
    run: (items) => {
      batches.push({items, at: clock.now()});
      return new Promise<void>((r) => gates.push(r));
    },
  });
  return {clock, b, batches, gates};
}

describe('MicroBatcher, timed', () => {
  it('runs a partial batch maxWaitMs after its first item, and a full one at once', async () => {
    const h = harness();
    h.b.push(1);
    h.b.push(2);
    await h.clock.advanceAsync(4);
    expect(h.batches).toEqual([]);
    await h.clock.advanceAsync(1);
    expect(h.batches).toEqual([{items: [1, 2], at: 5}]);
  });
});

describe('MicroBatcher, group commit', () => {
  it('runs a lone item at the end of the turn, without a timer', async () => {
    const h = harness({groupCommit: true});
    h.b.push(1);
    expect(h.batches).toEqual([]);
    await settle();
    expect(h.batches).toEqual([{items: [1], at: 0}]);
    expect(h.clock.pending()).toBe(0);
  });

  it('groups the items of one turn, and the items pushed while all slots run into the next batch', async () => {
    const h = harness({groupCommit: true});
    h.b.push(1);
    h.b.push(2);
    await settle();
    h.b.push(3);
    h.b.push(4);
    h.b.push(5);
    await h.clock.advanceAsync(100);
    expect(h.batches.map((x) => x.items)).toEqual([[1, 2]]);
    h.gates[0]!();
    await settle();
    expect(h.batches.map((x) => x.items)).toEqual([
      [1, 2],
      [3, 4, 5],
    ]);
  });

  it('uses every free slot, and a full batch still goes at once', async () => {
    const h = harness({groupCommit: true, concurrency: 2, maxSize: 2});
    h.b.push(1);
    await settle();
    h.b.push(2);
    await settle();
    expect(h.batches.map((x) => x.items)).toEqual([[1], [2]]);
    h.b.push(3);
    h.b.push(4);
    h.b.push(5);
    await settle();
    expect(h.batches).toHaveLength(2);
    h.gates[1]!();
    await settle();
    expect(h.batches.map((x) => x.items)).toEqual([[1], [2], [3, 4]]);
    h.gates[0]!();
    await settle();
    expect(h.batches.map((x) => x.items)).toEqual([[1], [2], [3, 4], [5]]);
    const flushed = h.b.flush();
    h.gates[2]!();
    h.gates[3]!();
    await flushed;
    expect(h.b.busy).toBe(false);
  });
});
