import {createElement} from 'react';
import {render} from 'ink-testing-library';
import {describe, expect, it, vi} from 'vitest';
import type {TopSnapshot, TopState, TopTypeRow} from '../../src/core/inspect/top.js';
import {PAUSE_UNAVAILABLE} from '../../src/core/inspect/top.js';
import {TopApp} from '../../src/ui/top/app.js';
import {initialUi, reduceKey, reduceKeys, splitKeys, type KeyContext} from '../../src/ui/top/keymap.js';
import {binned, headerLines, HELP_LINES, sparkline, sparkSpanMs, typeTableLines} from '../../src/ui/top/layout.js';
import {parseSort, sortRows} from '../../src/core/inspect/top-sort.js';
import {taskDetailLines, taskListLines} from '../../src/ui/top/layout-drill.js';
import {AxError} from '../../src/core/errors.js';
import {TopView} from '../../src/ui/top/views.js';
import type {TaskDetail} from '../../src/core/inspect/inspect.js';
import type {TaskRecord} from '../../src/core/task/model.js';

const typeRow = (type: string, o: Partial<TopTypeRow> = {}): TopTypeRow => ({
  type,
  due: 0,
  delayed: 0,
  parked: null,
  running: 0,
  dead: 0,
  rate: null,
  failurePct: null,
  p95Ms: null,
  breaker: null,
  paused: null,
  oldestDueMs: null,
  dominantKey: null,
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
  workerList: [],
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

describe('keys in one burst, sorting, drill-down (pure)', () => {
  it('several keys in one read each act: "py" asks and confirms a pause, "/us\\r" applies a filter', () => {
    const c = ctx({canPause: true});
    const py = reduceKeys(initialUi(), splitKeys('py', {}), c);
    expect(py.effects).toEqual([{kind: 'pause', type: 'order_notify', paused: true}]);
    expect(py.state.mode).toBe('table');
    const filtered = reduceKeys(initialUi(), splitKeys('/us\r', {}), c).state;
    expect(filtered).toMatchObject({mode: 'table', filter: 'us'});
    // Backspace and Ctrl-C inside a burst; q stops what follows it.
    expect(reduceKeys(initialUi(), splitKeys('/ux\u007f\r', {}), c).state.filter).toBe('u');
    expect(reduceKeys(initialUi(), splitKeys('qr', {}), c).effects).toEqual([{kind: 'quit'}]);
    expect(splitKeys('\u0003', {})).toEqual([{input: '\u0003', key: {}}]);
    expect(splitKeys('a\u0003', {}).at(-1)).toEqual({input: 'c', key: {ctrl: true}});
    // One key, or an arrow, passes as it is.
    expect(splitKeys('', {downArrow: true})).toEqual([{input: '', key: {downArrow: true}}]);
  });

  it('s sorts by the next column (numbers largest first), S reverses; rows follow the sort, unknowns last', () => {
    let s = initialUi();
    expect(s.sort).toEqual({column: 'type', desc: false});
    s = reduceKey(s, 's', {}, ctx()).state;
    expect(s.sort).toEqual({column: 'due', desc: true});
    s = reduceKey(s, 'S', {}, ctx()).state;
    expect(s.sort).toEqual({column: 'due', desc: false});
    const rows = [typeRow('a_a', {due: 5, rate: null}), typeRow('b_b', {due: 50, rate: 3}), typeRow('c_c', {due: 7, rate: 9})];
    expect(sortRows(rows, {column: 'due', desc: true}).map((r) => r.type)).toEqual(['b_b', 'c_c', 'a_a']);
    expect(sortRows(rows, {column: 'rate', desc: false}).map((r) => r.type)).toEqual(['b_b', 'c_c', 'a_a']);
    expect(sortRows(rows, {column: 'type', desc: true}).map((r) => r.type)).toEqual(['c_c', 'b_b', 'a_a']);
    expect(typeTableLines(rows, 100, {column: 'due', desc: true})[0]).toMatch(/ ↓DUE /);
  });

  it('--sort: a column name, optionally :asc or :desc; anything else names the valid columns', () => {
    expect(parseSort('DUE')).toEqual({column: 'due', desc: true});
    expect(parseSort('parked:asc')).toEqual({column: 'parked', desc: false});
    expect(parseSort('type')).toEqual({column: 'type', desc: false});
    expect(() => parseSort('size')).toThrow(AxError);
    expect(() => parseSort('size')).toThrow(/type, due, delay, parked, run, rate, fail, p95, brk, pause, dead/);
    expect(() => parseSort('due:up')).toThrow(/neither asc nor desc/);
  });

  it('Enter drills into the selected type, Enter again into a task, Esc and Backspace go back one level; w toggles the workers', () => {
    const tasks = [{id: 't1'}, {id: 't2'}];
    let s = reduceKey(initialUi(), '', {downArrow: true}, ctx()).state;
    s = reduceKey(s, '', {return: true}, ctx()).state;
    expect(s).toMatchObject({mode: 'tasks', drill: {type: 'user_register_credit', task: null}});
    s = reduceKey(s, '', {downArrow: true}, ctx({tasks})).state;
    s = reduceKey(s, '', {return: true}, ctx({tasks})).state;
    expect(s).toMatchObject({mode: 'task', drill: {type: 'user_register_credit', task: 't2'}});
    s = reduceKey(s, '', {escape: true}, ctx({tasks})).state;
    expect(s).toMatchObject({mode: 'tasks', drill: {selected: 't2', task: null}});
    s = reduceKey(s, '', {backspace: true}, ctx({tasks})).state;
    expect(s).toMatchObject({mode: 'table', drill: {type: null}});
    expect(s.selected).toBe('user_register_credit');
    const w = reduceKey(s, 'w', {}, ctx()).state;
    expect(w.mode).toBe('workers');
    expect(reduceKey(w, 'w', {}, ctx()).state.mode).toBe('table');
    // p and r do nothing inside the drill-down (they act on types, from the table).
    const inTasks = reduceKey(initialUi(), '', {return: true}, ctx()).state;
    expect(reduceKey(inTasks, 'r', {}, ctx()).state).toBe(inTasks);
  });
});

describe('layout at fixed widths', () => {
  it('every table line fits the width, narrow terminals drop the least needed columns', () => {
    const rows = snapshot().types;
    for (const width of [60, 80, 100, 140]) {
      const lines = typeTableLines(rows, width);
      for (const l of lines) expect(l.length, `width ${width}`).toBeLessThanOrEqual(width - 2);
    }
    expect(typeTableLines(rows, 100)[0]).toContain('PAUSE');
    expect(typeTableLines(rows, 80)[0]).not.toContain('PAUSE');
    expect(typeTableLines(rows, 60)[0]).toContain('DEAD');
    expect(typeTableLines(rows, 60)[0]).toContain('PARKED');
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

  it('the sparkline window grows with the history, 5m up to 60m, and is named', () => {
    const t = Date.parse('2026-12-01T12:00:00Z');
    const h = (minutes: number) => [0, minutes].map((m) => ({t: t + m * 60_000, backlog: 1, due: 1, submitRate: null, consumeRate: null}));
    expect(sparkSpanMs(h(2))).toBe(5 * 60_000);
    expect(sparkSpanMs(h(12))).toBe(15 * 60_000);
    expect(sparkSpanMs(h(45))).toBe(60 * 60_000);
    // A sample 40 minutes back lands in the first columns of a 60-minute line.
    expect(binned(h(45), (s) => s.backlog, 12, sparkSpanMs(h(45)))).toEqual([null, null, null, 1, ...new Array(7).fill(null), 1]);
  });

  it('stale data says so first, with since when, and never "alert ok"', () => {
    const at = '2026-12-01T11:58:07.000Z';
    const s = snapshot({
      at: null,
      backlog: null,
      alert: {level: 'stale', reason: 'no data since 11:58:07 UTC (the last successful read)', lastReadAt: at},
    });
    const [, two] = headerLines(s, 80, 1000);
    expect(two).toMatch(/^STALE: no data since 11:58:07 UTC/);
    expect(two).not.toContain('alert ok');
    expect(headerLines(s, 200, 1000)[1]).toMatch(/alert —$/);
  });

  it('a type whose backlog one task key holds is marked with the share and the key, the key made printable', () => {
    const [, plain, marked, evil] = typeTableLines(
      [
        typeRow('mail_send'),
        typeRow('order_notify', {due: 1000, dominantKey: {key: 'tenant:42', share: 0.934}}),
        typeRow('report_build', {due: 500, dominantKey: {key: 'x\u001b[2J\u202e', share: 1}}),
      ],
      100,
    );
    expect(plain).toMatch(/^mail_send\s/);
    expect(marked).toMatch(/^order_notify !93% tenant:42\s/);
    expect(evil).toMatch(/^report_build !100% x\uFFFD\[2J\uFFFD\s/);
    expect(HELP_LINES.join('\n')).toContain('!93% tenant:42');
  });

  it('PARKED is a column of its own, "—" when the registry was not read', () => {
    const [head, a, b] = typeTableLines([typeRow('a_a', {delayed: 9, parked: 4}), typeRow('b_b', {delayed: 3})], 100);
    expect(head).toMatch(/DELAY +PARKED/);
    expect(a).toMatch(/a_a +0 +9 +4 /);
    expect(b).toMatch(/b_b +0 +3 +— /);
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
    const [, ...lines] = typeTableLines(rows, 100);
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
    tasks: vi.fn(async (_type: string): Promise<TaskRecord[]> => []),
    task: vi.fn(async (id: string): Promise<TaskDetail> => {
      throw new Error(`no ${id}`);
    }),
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

describe('the app: bursts, drill-down, workers, a fixed frame height', () => {
  const source = () => ({
    canPause: true,
    refresh: vi.fn(async (state: TopState, _errorsType: string | null) => ({
      state,
      snapshot: snapshot({
        workerList: [
          {
            id: 'host-a:41',
            status: 'live' as const,
            pools: {io: 10},
            inFlight: 3,
            rate: 42,
            rssBytes: 80 * 1024 * 1024,
            heartbeatAgeMs: 900,
            startedAt: '2026-12-01T11:00:00.000Z',
            types: ['order_notify'],
          },
        ],
      }),
    })),
    replay: vi.fn(async (type: string) => `replayed 7 dead tasks of ${type}`),
    pause: vi.fn(async (type: string) => `paused ${type}`),
    tasks: vi.fn(async (type: string) => [
      task(type, '01a234ec-c8ef-7024-ac87-2a99b2c7e897'),
      task(type, '01a234ec-c8ef-7024-ac87-2a99b2c7e898'),
    ]),
    task: vi.fn(async (id: string): Promise<TaskDetail> => {
      const t = task('order_notify', id);
      return {
        task: t,
        history: [
          {
            at: t.createdAt,
            from: null,
            to: 'submitted',
            attempt: 0,
            worker: null,
            error: null,
            stack: null,
          } as TaskDetail['history'][number],
        ],
      };
    }),
  });

  it('keys that arrive in one read each act ("py": the prompt, then yes)', async () => {
    const src = source();
    const r = render(createElement(TopApp, {source: src, intervalMs: 20, width: 100, height: 30}));
    await frameWith(r, '› order_notify');
    r.stdin.write('py');
    await frameWith(r, 'paused order_notify');
    expect(src.pause).toHaveBeenCalledWith('order_notify', true);
    r.unmount();
  });

  it('Enter lists the newest tasks (ids whole), Enter shows the timeline, Esc and Backspace go back; w lists the workers', async () => {
    const src = source();
    const r = render(createElement(TopApp, {source: src, intervalMs: 20, width: 80, height: 24}));
    await frameWith(r, '› order_notify');
    r.stdin.write('\r');
    const list = await frameWith(r, '› 01a234ec-c8ef-7024-ac87-2a99b2c7e897 dead');
    expect(list).toContain('newest tasks of order_notify');
    expect(src.tasks).toHaveBeenCalledWith('order_notify');
    r.stdin.write('\u001B[B');
    await frameWith(r, '› 01a234ec-c8ef-7024-ac87-2a99b2c7e898');
    r.stdin.write('\r');
    const detail = await frameWith(r, 'history (UTC)');
    expect(src.task).toHaveBeenCalledWith('01a234ec-c8ef-7024-ac87-2a99b2c7e898');
    // A control character from the task is never drawn as is.
    expect(detail).toContain('boom\uFFFD[31m');
    expect(detail).not.toContain('\u001B[31m');
    r.stdin.write('\u001B');
    await frameWith(r, 'newest tasks of order_notify');
    r.stdin.write('\u007F');
    await frameWith(r, '› order_notify');
    r.stdin.write('w');
    const workers = await frameWith(r, 'host-a:41');
    expect(workers).toMatch(/host-a:41 +LIVE +3 +42 +80M/);
    r.unmount();
  });

  it('every frame is exactly one line shorter than the terminal, whatever the mode', async () => {
    const src = source();
    const r = render(createElement(TopApp, {source: src, intervalMs: 20, width: 80, height: 24}));
    await frameWith(r, '› order_notify');
    for (const k of ['', '?', '?', 'e', 'e', 'w']) {
      if (k) r.stdin.write(k);
      await new Promise((res) => setTimeout(res, 30));
      expect((r.lastFrame() ?? '').split('\n').length).toBe(23);
    }
    r.unmount();
  });
});

function task(type: string, id: string): TaskRecord {
  const at = new Date('2026-12-01T11:59:00Z');
  return {
    id,
    cell: 'default',
    type,
    payload: {n: 1},
    state: 'dead',
    pool: 'io',
    priority: 'normal',
    attempt: 1,
    maxRetries: 0,
    timeoutMs: null,
    runAt: at,
    createdAt: at,
    updatedAt: at,
    finishedAt: at,
    publishedAt: null,
    startedAt: null,
    worker: null,
    leaseUntil: null,
    fence: 1,
    dedupKey: null,
    key: null,
    lastError: 'boom\u001B[31m red',
  } as unknown as TaskRecord;
}

describe('drill-down layout', () => {
  it('task ids are never cut, even at 60 columns; the last error gives way', () => {
    const t = task('order_notify', '01a234ec-c8ef-7024-ac87-2a99b2c7e897');
    for (const width of [60, 80, 120]) {
      const [, line] = taskListLines([t], width);
      expect(line).toContain('01a234ec-c8ef-7024-ac87-2a99b2c7e897 dead');
      expect(line!.length).toBeLessThanOrEqual(Math.max(width - 2, 36));
    }
    expect(taskListLines([t], 120)[1]).toContain('boom\uFFFD[31m red');
  });

  it('the task list has a PROG column: the last progress reported, blank when none', () => {
    const t = task('order_notify', '01a234ec-c8ef-7024-ac87-2a99b2c7e897');
    const [head, line] = taskListLines([{...t, state: 'running', progress: 40} as TaskRecord, t], 120);
    expect(head).toMatch(/^ID +STATE +ATT PROG UPDATED \(UTC\) +LAST ERROR$/);
    expect(line).toMatch(/ running +1 {2}40% 2026-/);
    expect(taskListLines([t], 120)[1]).toMatch(/ dead +1 {6}2026-/);
  });

  it('a timeline longer than the screen keeps the task and its newest rows, and says how many older rows are left out', () => {
    const t = task('order_notify', '01a234ec-c8ef-7024-ac87-2a99b2c7e897');
    const history = Array.from({length: 40}, (_, i) => ({
      at: new Date(Date.parse('2026-12-01T11:00:00Z') + i * 1000),
      from: 'running',
      to: 'failed',
      attempt: i + 1,
      worker: 'h:1',
      error: `e${i}`,
      stack: null,
    })) as unknown as TaskDetail['history'];
    const lines = taskDetailLines({task: t, history}, 100, 20);
    expect(lines).toHaveLength(20);
    expect(lines[0]).toContain('01a234ec-c8ef-7024-ac87-2a99b2c7e897  order_notify  DEAD');
    expect(lines.join('\n')).toMatch(/… \d+ older rows \(ax tasks show 01a234ec-c8ef-7024-ac87-2a99b2c7e897\)/);
    expect(lines[lines.length - 1]).toContain('e39');
    expect(lines.join('\n')).not.toContain(' e0 ');
  });
});
