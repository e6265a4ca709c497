import {describe, expect, it} from 'vitest';
import {pickThenLock} from '../../src/core/store/mysql/pick-lock.js';

describe('pickThenLock', () => {
  it('replaces the candidates that moved between the read and the lock, up to the limit', async () => {
    const rows = ['a', 'b', 'c', 'd', 'e'];
    const moved = new Set(['b']);
    const wants: number[] = [];
    const out = await pickThenLock(
      3,
      async (want) => {
        wants.push(want);
        return rows.filter((r) => !moved.has(r) || wants.length === 1).slice(0, want);
      },
      async (ids) => {
        const changed = ids.filter((id) => !moved.has(id));
        for (const id of changed) rows.splice(rows.indexOf(id), 1);
        return changed;
      },
    );
    expect(out).toEqual(['a', 'c', 'd']);
    expect(wants).toEqual([3, 1]);
  });

  it('stops when a read finds fewer candidates than it asked for, or none', async () => {
    let reads = 0;
    const out = await pickThenLock(
      10,
      async () => (++reads === 1 ? ['x', 'y'] : []),
      async (ids) => ids,
    );
    expect(out).toEqual(['x', 'y']);
    expect(reads).toBe(1);
    expect(
      await pickThenLock(
        10,
        async () => [],
        async () => ['never'],
      ),
    ).toEqual([]);
  });

  it('gives up after its rounds when every round loses its candidates', async () => {
    let reads = 0;
    const out = await pickThenLock(
      2,
      async () => {
        reads++;
        return ['p', 'q'];
      },
      async () => [],
    );
    expect(out).toEqual([]);
    expect(reads).toBe(5);
  });
});
