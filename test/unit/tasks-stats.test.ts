/**
 * tasks stats over an in-memory store: the backlog and the window's terminal counts merged per
 * type, ages from the database clock, totals; --since validated before anything is read.
 */
import {describe, expect, it} from 'vitest';
import {parseStatsSince, tasksStats} from '../../src/core/inspect/stats.js';
import type {BacklogReport, TerminalCountRow} from '../../src/core/store/types.js';

const at = new Date('2026-12-01T12:00:00.000Z');
const ago = (ms: number) => new Date(at.getTime() - ms);

function store(backlog: BacklogReport, finished: TerminalCountRow[]) {
  const asked: Date[] = [];
  return {
    asked,
    backlog: async () => backlog,
    terminalCounts: async ({since}: {since: Date}) => {
      asked.push(since);
      return finished;
    },
  };
}

describe('tasksStats', () => {
  it('merges backlog and window counts per type, with the oldest due age on the database clock and totals', async () => {
    const s = store(
      {
        at,
        rows: [
          {type: 'b_build', due: 3, delayed: 1, running: 2, dead: 0, oldestDueAt: ago(90_000)},
          {type: 'a_send', due: 0, delayed: 5, running: 0, dead: 4, oldestDueAt: null},
        ],
      },
      [
        {type: 'b_build', state: 'succeeded', count: 10},
        {type: 'b_build', state: 'dead', count: 1},
        {type: 'c_only_finished', state: 'cancelled', count: 2},
      ],
    );
    const since = ago(3_600_000);
    const r = await tasksStats(s, since);
    expect(s.asked).toEqual([since]);
    expect(r.at).toBe(at);
    expect(r.types.map((t) => t.type)).toEqual(['a_send', 'b_build', 'c_only_finished']);
    expect(r.types[0]).toMatchObject({due: 0, delayed: 5, dead: 4, oldestDueAgeMs: null, finished: {succeeded: 0, dead: 0, cancelled: 0}});
    expect(r.types[1]).toMatchObject({due: 3, running: 2, oldestDueAgeMs: 90_000, finished: {succeeded: 10, dead: 1, cancelled: 0}});
    expect(r.types[2]).toMatchObject({due: 0, delayed: 0, running: 0, dead: 0, finished: {cancelled: 2}});
    expect(r.totals).toEqual({
      due: 3,
      delayed: 6,
      running: 2,
      dead: 4,
      oldestDueAt: ago(90_000),
      oldestDueAgeMs: 90_000,
      finished: {succeeded: 10, dead: 1, cancelled: 2},
    });
  });
});

describe('parseStatsSince', () => {
  const now = at.getTime();
  it('defaults to one hour back and takes a duration or an ISO time', () => {
    expect(parseStatsSince(undefined, now)).toEqual(ago(3_600_000));
    expect(parseStatsSince('15m', now)).toEqual(ago(900_000));
    expect(parseStatsSince('2026-12-01T00:00:00Z', now)).toEqual(new Date('2026-12-01T00:00:00Z'));
  });
  it('refuses garbage, the future and more than 7 days back', () => {
    expect(() => parseStatsSince('soon', now)).toThrow(/neither a duration/);
    expect(() => parseStatsSince('2026-12-02T00:00:00Z', now)).toThrow(/must be in the past/);
    expect(() => parseStatsSince('8d', now)).toThrow(/more than 7d/);
    expect(parseStatsSince('7d', now)).toEqual(ago(7 * 86_400_000));
  });
});
