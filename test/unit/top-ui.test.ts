import {createElement} from 'react';
import {render} from 'ink-testing-library';
import {describe, expect, it, vi} from 'vitest';
import type {TopSnapshot, TopState, TopTypeRow} from '../../src/core/inspect/top.js';
import {PAUSE_UNAVAILABLE} from '../../src/core/inspect/top.js';
import {TopApp} from '../../src/ui/top/app.js';
import {initialUi, reduceKey, type KeyContext} from '../../src/ui/top/keymap.js';
import {binned, sparkline, typeTableLines} from '../../src/ui/top/layout.js';
import {TopView} from '../../src/ui/top/views.js';

const typeRow = (type: string, o: Partial<TopTypeRow> = {}): TopTypeRow => ({
  type,
  due: 0,
  delayed: 0,
  running: 0,
  dead: 0,
  rate: null,
  failurePct: null,
  p95Ms: null,
  breaker: null,
  paused: null,
  oldestDueMs: null,
  ...o,
});

const snapshot = (o: Partial<TopSnapshot> = {}): TopSnapshot => ({
  at: '2026-12-01T12:00:00.000Z',
  cell: 'default',
  workers: {live: 2, stale: 1, stopped: 0},
  submitRate: 120,
  consumeRate: 118.4,
  backlog: {total: 12_345, due: 10_000, delayed: 2000, running: 345, dead: 7, trendPerMin: 250},
  alert: {level: 'ok', reason: 'x'},
  types: [
    typeRow('order_notify', {due: 10_000, running: 300, rate: 100, failurePct: 2.5, p95Ms: 240, dead: 7}),
    typeRow('user_register_credit', {delayed: 2000, running: 45, rate: 18.4, p95Ms: 1200}),
  ],
  errors: {
    type: 'order_notify',
    groups: [
      {
        type: 'order_notify',
        signature: 'smtp <n> timeout',
        count: 42,
        firstSeen: new Date(0),
        lastSeen: new Date('2026-12-01T11:59:00Z'),
        sampleId: 'x',
        sampleError: null,
      },
    ],
  },
  flowControl: false,
  failures: [],
  ...o,
});

const ctx = (o: Partial<KeyContext> = {}): KeyContext => ({
  types: [
    {type: 'order_notify', dead: 7, paused: null},
    {type: 'user_register_credit', dead: 0, paused: null},
  ],
  canPause: false,
  ...o,
});

describe('keymap (pure)', () => {
  it('arrows move the selection within the list; q quits', () => {
    let s = initialUi();
    s = reduceKey(s, '', {downArrow: true}, ctx()).state;
    expect(s.selected).toBe('user_register_credit');
    s = reduceKey(s, '', {downArrow: true}, ctx()).state;
    expect(s.selected).toBe('user_register_credit');
    s = reduceKey(s, '', {upArrow: true}, ctx()).state;
    expect(s.selected).toBe('order_notify');
    expect(reduceKey(s, 'q', {}, ctx()).effect).toEqual({kind: 'quit'});
  });

  it('p says pause is not available without flow control; with it, asks first and y pauses (or resumes a paused type)', () => {
    const s = initialUi();
    const r = reduceKey(s, 'p', {}, ctx());
    expect(r.effect).toBeUndefined();
    expect(r.state.message).toBe(PAUSE_UNAVAILABLE);
    const asking = reduceKey(s, 'p', {}, ctx({canPause: true}));
    expect(asking.effect).toBeUndefined();
    expect(asking.state).toMatchObject({mode: 'confirm', pending: {kind: 'pause', type: 'order_notify', paused: true}});
    expect(reduceKey(asking.state, 'y', {}, ctx({canPause: true})).effect).toEqual({kind: 'pause', type: 'order_notify', paused: true});
    const no = reduceKey(asking.state, 'n', {}, ctx({canPause: true}));
    expect(no.effect).toBeUndefined();
    expect(no.state).toMatchObject({mode: 'table', pending: null, message: 'pause cancelled: nothing changed'});
    const paused = ctx({canPause: true, types: [{type: 'order_notify', dead: 0, paused: true}]});
    const resuming = reduceKey(s, 'p', {}, paused).state;
    expect(reduceKey(resuming, 'y', {}, paused).effect).toEqual({kind: 'pause', type: 'order_notify', paused: false});
  });

  it('r asks first; only y replays; a type without dead tasks is refused', () => {
    const asking = reduceKey(initialUi(), 'r', {}, ctx()).state;
    expect(asking.mode).toBe('confirm');
    expect(reduceKey(asking, 'y', {}, ctx()).effect).toEqual({kind: 'replay', type: 'order_notify'});
    const no = reduceKey(asking, 'n', {}, ctx());
    expect(no.effect).toBeUndefined();
    expect(no.state).toMatchObject({mode: 'table', message: expect.stringContaining('cancelled')});
    const other = {...initialUi(), selected: 'user_register_credit'};
    expect(reduceKey(other, 'r', {}, ctx()).state).toMatchObject({mode: 'table', message: expect.stringContaining('no dead tasks')});
  });

  it('/ edits a filter: letters, backspace, Enter applies, Esc cancels; q is text there', () => {
    let s = reduceKey(initialUi(), '/', {}, ctx()).state;
    expect(s.mode).toBe('filter');
    for (const ch of ['u', 's', 'q']) s = reduceKey(s, ch, {}, ctx()).state;
    s = reduceKey(s, '', {backspace: true}, ctx()).state;
    s = reduceKey(s, 'X', {}, ctx()).state; // not a type-name character
    expect(s.draft).toBe('us');
    expect(reduceKey(s, '', {escape: true}, ctx()).state).toMatchObject({mode: 'table', filter: ''});
    expect(reduceKey(s, '', {return: true}, ctx()).state).toMatchObject({mode: 'table', filter: 'us'});
  });

  it('? and e toggle their views; Esc goes back to the table', () => {
    const help = reduceKey(initialUi(), '?', {}, ctx()).state;
    expect(help.mode).toBe('help');
    expect(reduceKey(help, '?', {}, ctx()).state.mode).toBe('table');
    const errors = reduceKey(initialUi(), 'e', {}, ctx()).state;
    expect(errors.mode).toBe('errors');
    expect(reduceKey(errors, '', {escape: true}, ctx()).state.mode).toBe('table');
  });
});

describe('layout at fixed widths', () => {
  it('every table line fits the width, narrow terminals drop the least needed columns', () => {
    const rows = snapshot().types;
    for (const width of [60, 80, 100, 140]) {
      const lines = typeTableLines(rows, width);
      for (const l of lines) expect(l.length, `width ${width}`).toBeLessThanOrEqual(width - 2);
    }
    expect(typeTableLines(rows, 80)[0]).toContain('PAUSE');
    expect(typeTableLines(rows, 60)[0]).not.toContain('PAUSE');
    expect(typeTableLines(rows, 60)[0]).toContain('DEAD');
  });

  it('sparklines scale to the largest value and pad to the width', () => {
    expect(sparkline([0, 5, 10], 5)).toBe('  ▁▅█');
    expect(sparkline([null, 0], 2)).toBe(' ▁');
  });

  it('sparklines span the last 5 minutes: one column per slice of time, gaps where no sample fell', () => {
    const t = Date.parse('2026-12-01T12:00:00Z');
    const at = (s: number, backlog: number) => ({t: t + s * 1000, backlog, due: backlog, submitRate: null, consumeRate: null});
    const history = [at(-600, 99), at(-300, 1), at(-150, 2), at(-1, 3), at(0, 4)];
    // 10 columns of 30 s: -300 falls in the first, -150 in the sixth, -1 and 0 in the last (the latest wins).
    expect(binned(history, (s) => s.backlog, 10)).toEqual([1, null, null, null, null, 2, null, null, null, 4]);
    expect(binned([], (s) => s.backlog, 3)).toEqual([null, null, null]);
  });
});

const frameOf = (el: ReturnType<typeof createElement>) => {
  const r = render(el);
  const f = r.lastFrame() ?? '';
  r.unmount();
  return f;
};

describe('views (ink-testing-library, 80 columns)', () => {
  const props = {history: [], intervalMs: 1000, width: 80, height: 30};

  it('header, table, errors of the selected type and the keys, each line within 80 columns', () => {
    const s = snapshot();
    const f = frameOf(createElement(TopView, {...props, snapshot: s, ui: initialUi(), types: s.types}));
    expect(f).toContain('cell default');
    expect(f).toContain('2 live, 1 STALE');
    expect(f).toContain('submit 120/s');
    expect(f).toContain('consume 118/s');
    expect(f).toContain('backlog 12k ↑250/min');
    expect(f).toContain('alert ok');
    expect(f).toMatch(/› order_notify +10k/);
    expect(f).toContain('user_register_credit');
    expect(f).toContain('2.5%');
    expect(f).toContain('240ms');
    expect(f).toContain('42× smtp <n> timeout (1m ago)');
    expect(f).toContain('q quit');
    for (const line of f.split('\n')) expect(line.length).toBeLessThanOrEqual(80);
  });

  it('breaker and paused show "—" without flow control', () => {
    const s = snapshot();
    const f = frameOf(createElement(TopView, {...props, snapshot: s, ui: initialUi(), types: s.types}));
    const line = f.split('\n').find((l) => l.includes('order_notify') && l.includes('10k'))!;
    expect(line.match(/—/g)!.length).toBeGreaterThanOrEqual(2);
  });

  it('with flow control: BRK ok / OPEN / half and PAUSE yes / no', () => {
    const rows = [
      ['a_ok', 'closed', false],
      ['b_open', 'open', true],
      ['c_half', 'half-open', false],
    ].map(([type, breaker, paused]) => typeRow(type as string, {breaker: breaker as 'closed', paused: paused as boolean}));
    const [, ...lines] = typeTableLines(rows, 80);
    expect(lines.map((l) => l.trim().split(/\s+/).slice(-3, -1))).toEqual([
      ['ok', 'no'],
      ['OPEN', 'yes'],
      ['half', 'no'],
    ]);
  });

  it('a terminal narrower than 60 columns gets a message instead of a broken table', () => {
    const f = frameOf(createElement(TopView, {...props, width: 59, snapshot: snapshot(), ui: initialUi(), types: []}));
    expect(f).toContain('needs at least 60 columns; this terminal has 59');
  });

  it('a failed read is shown with the last data', () => {
    const s = snapshot({failures: ['backlog: connect ECONNREFUSED 127.0.0.1:3306']});
    const f = frameOf(createElement(TopView, {...props, snapshot: s, ui: initialUi(), types: s.types}));
    expect(f).toContain('! backlog: connect ECONNREFUSED 127.0.0.1:3306 (retrying)');
    expect(f).toContain('order_notify');
  });
});

/** Polls the frame until it contains `text` (the app re-renders asynchronously). */
async function frameWith(r: ReturnType<typeof render>, text: string, timeoutMs = 3000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const f = r.lastFrame() ?? '';
    if (f.includes(text)) return f;
    if (Date.now() > deadline) throw new Error(`frame never showed "${text}":\n${f}`);
    await new Promise((res) => setTimeout(res, 10));
  }
}

describe('the app with a fake source (data hook + keymap + views)', () => {
  const source = (snap: () => TopSnapshot) => ({
    canPause: false,
    refresh: vi.fn(async (state: TopState, _errorsType: string | null) => ({state, snapshot: snap()})),
    replay: vi.fn(async (type: string) => `replayed 7 dead tasks of ${type}`),
    pause: vi.fn(async () => 'x'),
  });

  it('refreshes, selects with arrows, asks before replaying, shows help, quits on q', async () => {
    const src = source(() => snapshot());
    const onQuit = vi.fn();
    const r = render(createElement(TopApp, {source: src, intervalMs: 20, width: 80, height: 30, onQuit}));
    await frameWith(r, '› order_notify');
    r.stdin.write('\u001B[B'); // down
    await frameWith(r, '› user_register_credit');
    r.stdin.write('\u001B[A'); // up
    await frameWith(r, '› order_notify');
    r.stdin.write('r');
    await frameWith(r, 'replay 7 dead tasks of order_notify? y/N');
    expect(src.replay).not.toHaveBeenCalled();
    r.stdin.write('y');
    await frameWith(r, 'replayed 7 dead tasks of order_notify');
    expect(src.replay).toHaveBeenCalledWith('order_notify');
    r.stdin.write('p');
    await frameWith(r, PAUSE_UNAVAILABLE.slice(0, 40));
    expect(src.pause).not.toHaveBeenCalled();
    r.stdin.write('?');
    await frameWith(r, 'this help');
    r.stdin.write('?');
    await frameWith(r, '› order_notify');
    // The selected type's errors were asked for.
    expect(src.refresh.mock.calls.some((c) => c[1] === 'order_notify')).toBe(true);
    expect(src.refresh.mock.calls.length).toBeGreaterThan(1);
    r.stdin.write('q');
    expect(onQuit).toHaveBeenCalledTimes(1);
    r.unmount();
  });

  it('with flow control, p asks, then y pauses through the source and shows its answer', async () => {
    const src = {...source(() => snapshot()), canPause: true, pause: vi.fn(async (type: string) => `paused ${type}`)};
    const r = render(createElement(TopApp, {source: src, intervalMs: 20, width: 100, height: 30}));
    await frameWith(r, '› order_notify');
    r.stdin.write('p');
    await frameWith(r, 'pause order_notify? workers stop claiming it');
    expect(src.pause).not.toHaveBeenCalled();
    r.stdin.write('y');
    await frameWith(r, 'paused order_notify');
    expect(src.pause).toHaveBeenCalledWith('order_notify', true);
    r.unmount();
  });

  it('the filter narrows the table', async () => {
    const r = render(createElement(TopApp, {source: source(() => snapshot()), intervalMs: 20, width: 80, height: 30}));
    await frameWith(r, 'user_register_credit');
    for (const ch of ['/', 'u', 's', 'e', 'r']) r.stdin.write(ch);
    await frameWith(r, 'filter: user');
    r.stdin.write('\r');
    const f = await frameWith(r, '[user]');
    expect(f).toContain('› user_register_credit');
    expect(f).not.toMatch(/order_notify +10k/);
    r.unmount();
  });

  it('a source that throws does not crash the app: the error is shown and it keeps refreshing', async () => {
    let n = 0;
    const src = source(() => {
      n++;
      if (n > 1) throw new Error('database went away');
      return snapshot();
    });
    const r = render(createElement(TopApp, {source: src, intervalMs: 20, width: 80, height: 30}));
    await frameWith(r, '! database went away (retrying)');
    const calls = src.refresh.mock.calls.length;
    await frameWith(r, 'order_notify');
    await new Promise((res) => setTimeout(res, 100));
    expect(src.refresh.mock.calls.length).toBeGreaterThan(calls);
    r.unmount();
  });
});
