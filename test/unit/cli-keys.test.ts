/** `ax types show`'s keys section (cli/keys.ts): the totals, the top keys, the dominant key's line; key text made printable. */
import {describe, expect, it} from 'vitest';
import {keysLines} from '../../src/cli/keys.js';
import {keysView} from '../../src/core/types/keys.js';

const view = (top: Array<[string, number, number]>, typeBacklog: number) =>
  keysView(
    {
      backlog: top.reduce((n, [, b]) => n + b, 0),
      withBacklog: top.filter(([, b]) => b > 0).length,
      running: top.reduce((n, [, , r]) => n + r, 0),
      withRunning: top.filter(([, , r]) => r > 0).length,
      top: top.map(([key, backlog, running]) => ({key, backlog, running})),
    },
    typeBacklog,
  );

describe('keysLines', () => {
  it('lists the top keys with backlog and running, then the dominant key with the advice', () => {
    expect(
      keysLines(
        'order_notify',
        view(
          [
            ['tenant:42', 111_600, 3],
            ['tenant:7', 400, 1],
          ],
          120_000,
        ),
        {},
      ).map((l) => l.trimEnd()),
    ).toEqual([
      'keys: 2 with a backlog (112,000 tasks), 2 running (4 attempts)',
      '  KEY        BACKLOG  RUNNING',
      '  tenant:42  111,600        3',
      '  tenant:7       400        1',
      "! key tenant:42 holds 93 % of order_notify's backlog of 120,000: consider --fair or --max-running-per-key",
    ]);
  });

  it('says fair dispatch is on instead of advising it', () => {
    expect(keysLines('order_notify', view([['tenant:42', 900, 0]], 1000), {fair: true}).at(-1)).toBe(
      "! key tenant:42 holds 90 % of order_notify's backlog of 1,000 (fair dispatch or a per-key limit is on)",
    );
  });

  it('says so when no task has a key', () => {
    expect(keysLines('order_notify', view([], 50), {})).toEqual(['keys: no task with a key waiting or running']);
  });

  it('never writes escape sequences or bidirectional overrides from a key', () => {
    const evil = 'tenant:\u001b[2J\u202eevil';
    const out = keysLines('order_notify', view([[evil, 500, 0]], 500), {}).join('\n');
    expect(out).not.toMatch(/[\u001b\u202e]/);
    expect(out).toContain('tenant:\uFFFD[2J\uFFFDevil');
  });
});
