import {describe, expect, it} from 'vitest';
import {orderedAcker} from '../../bench/lib/acks.js';

const msg = (tag: number) => ({fields: {deliveryTag: tag}});

describe('bench orderedAcker (hand-built pipeline acks)', () => {
  it('acks with multiple=true only up to the longest settled run at the front', () => {
    const acks: [number, boolean | undefined][] = [];
    const a = orderedAcker({ack: (m, all) => acks.push([m.fields.deliveryTag, all])});
    const ms = [1, 2, 3, 4, 5].map(msg);
    for (const m of ms) a.received(m);
    a.settle([ms[2]!, ms[3]!]); // 3 and 4 settle first: 1 and 2 are not durable yet
    expect(acks).toEqual([]);
    a.settle([ms[0]!]);
    expect(acks).toEqual([[1, true]]);
    a.settle([ms[1]!]); // 2 closes the gap: everything up to 4 in one frame
    expect(acks).toEqual([
      [1, true],
      [4, true],
    ]);
    a.settle([ms[4]!]);
    expect(acks.at(-1)).toEqual([5, true]);
  });

  it('keeps working after compacting its window of thousands of deliveries', () => {
    let last = 0;
    const a = orderedAcker({ack: (m) => (last = m.fields.deliveryTag)});
    const ms = Array.from({length: 10_000}, (_, i) => msg(i + 1));
    for (const m of ms) a.received(m);
    for (let i = 0; i < ms.length; i += 500) a.settle(ms.slice(i, i + 500).reverse());
    expect(last).toBe(10_000);
  });
});
