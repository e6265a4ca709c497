/**
 * DeadLetterScan over an in-memory store: chained half-open windows behind the settle margin,
 * one warn line and one dlq:new event per type, the watermark kept when a pass fails, resumed
 * after a restart, and shared by replicas (one report per window).
 */
import {describe, expect, it} from 'vitest';
import {DeadLetterScan} from '../../src/core/dlq/scan.js';
import {AxEvents, type AxEventMap} from '../../src/core/events.js';
import {createLogger} from '../../src/core/log.js';
import type {DeadErrorGroup, FailureFilter} from '../../src/core/store/types.js';

function setup() {
  let now = 100_000;
  let down = false;
  const deaths: Array<{type: string; at: number}> = [];
  const asked: FailureFilter[] = [];
  let mark: Date | null = null;
  /** Runs between a pass's read of the watermark and its compare-and-set (another replica's turn). */
  let beforeAdvance: () => Promise<void> = async () => undefined;
  const store = {
    dlqScanGet: async () => {
      if (down) throw new Error('connection refused');
      return mark;
    },
    dlqScanAdvance: async ({from, to}: {from: Date | null; to: Date}) => {
      await beforeAdvance();
      if (down) throw new Error('connection refused');
      if ((from === null && mark !== null) || (from !== null && mark?.getTime() !== from.getTime())) return false;
      mark = to;
      return true;
    },
    clockNow: async () => {
      if (down) throw new Error('connection refused');
      return new Date(now);
    },
    failureGroups: async (f: FailureFilter): Promise<DeadErrorGroup[]> => {
      asked.push(f);
      return deaths
        .filter((d) => d.at >= f.since.getTime() && (f.until === undefined || d.at < f.until.getTime()))
        .map((d) => ({type: d.type, error: 'x', count: 1, firstSeen: new Date(d.at), lastSeen: new Date(d.at), sampleId: 'id'}));
    },
  };
  const events = new AxEvents();
  const seen: Array<AxEventMap['dlq:new']> = [];
  events.on('dlq:new', (e) => seen.push(e));
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger('info', {}, (l) => void lines.push(JSON.parse(l) as Record<string, unknown>));
  const scan = new DeadLetterScan({store, events, logger, settleMs: 1000});
  return {
    scan,
    /** Another scheduler process on the same database (a restart, or a replica). */
    another: () => new DeadLetterScan({store, events, logger, settleMs: 1000}),
    get mark() {
      return mark;
    },
    set beforeAdvance(f: () => Promise<void>) {
      beforeAdvance = f;
    },
    seen,
    lines,
    asked,
    die: (type: string, at: number) => deaths.push({type, at}),
    set now(v: number) {
      now = v;
    },
    set down(v: boolean) {
      down = v;
    },
  };
}

describe('DeadLetterScan', () => {
  it('reports each death once, per type, in chained windows behind the settle margin', async () => {
    const t = setup();
    await t.scan.begin(); // watermark 99 000
    t.die('order_notify', 98_000); // before the start: never reported
    t.die('order_notify', 99_500);
    t.die('order_notify', 100_500); // inside the settle margin of the next pass
    t.die('report_build', 99_600);
    t.now = 101_000;
    expect(await t.scan.scan()).toMatchObject([
      {type: 'order_notify', count: 1},
      {type: 'report_build', count: 1},
    ]);
    expect(t.seen).toEqual([
      {type: 'order_notify', count: 1, since: 99_000, until: 100_000},
      {type: 'report_build', count: 1, since: 99_000, until: 100_000},
    ]);
    expect(t.asked.at(-1)).toMatchObject({deadOnly: true});
    expect(t.lines.filter((l) => l.msg === 'new dead tasks').map((l) => [l.level, l.type, l.count])).toEqual([
      ['warn', 'order_notify', 1],
      ['warn', 'report_build', 1],
    ]);
    t.seen.length = 0;
    t.now = 102_000;
    expect(await t.scan.scan()).toEqual([{type: 'order_notify', count: 1, since: new Date(100_000), until: new Date(101_000)}]);
    t.seen.length = 0;
    expect(await t.scan.scan()).toEqual([]);
    expect(t.seen).toEqual([]);
  });

  it('without begin(), the first pass only sets the watermark', async () => {
    const t = setup();
    t.die('order_notify', 98_000);
    expect(await t.scan.scan()).toEqual([]);
    t.die('order_notify', 99_500);
    t.now = 101_000;
    expect(await t.scan.scan()).toMatchObject([{type: 'order_notify', count: 1}]);
  });

  it('a failed pass keeps the watermark: the next pass covers its window', async () => {
    const t = setup();
    await t.scan.begin();
    t.die('order_notify', 99_500);
    t.now = 101_000;
    t.down = true;
    await expect(t.scan.scan()).rejects.toThrow(/connection refused/);
    t.down = false;
    t.now = 103_000;
    expect(await t.scan.scan()).toEqual([{type: 'order_notify', count: 1, since: new Date(99_000), until: new Date(102_000)}]);
  });

  it('a restarted scheduler resumes from the stored watermark: the deaths of its downtime are reported once', async () => {
    const t = setup();
    await t.scan.begin();
    t.die('order_notify', 99_500);
    t.now = 101_000;
    expect(await t.scan.scan()).toMatchObject([{type: 'order_notify', count: 1}]);
    // The process stops; two tasks die while no scheduler runs; a new process starts much later.
    t.die('order_notify', 130_000);
    t.die('report_build', 150_000);
    t.now = 200_000;
    const restarted = t.another();
    await restarted.begin(); // keeps the stored watermark
    expect(t.mark).toEqual(new Date(100_000));
    expect(await restarted.scan()).toEqual([
      {type: 'order_notify', count: 1, since: new Date(100_000), until: new Date(199_000)},
      {type: 'report_build', count: 1, since: new Date(100_000), until: new Date(199_000)},
    ]);
    expect(await restarted.scan()).toEqual([]);
  });

  it('two replicas scanning the same window: the one whose compare-and-set moves the watermark reports, the other not', async () => {
    const t = setup();
    const b = t.another();
    await Promise.all([t.scan.begin(), b.begin()]);
    expect(t.mark).toEqual(new Date(99_000));
    t.die('order_notify', 99_500);
    t.now = 101_000;
    // Replica b passes between replica a's read of the watermark and a's compare-and-set.
    let bFound: unknown;
    t.beforeAdvance = async () => {
      t.beforeAdvance = async () => undefined;
      bFound = await b.scan();
    };
    expect(await t.scan.scan()).toEqual([]);
    expect(bFound).toEqual([{type: 'order_notify', count: 1, since: new Date(99_000), until: new Date(100_000)}]);
    expect(t.seen).toHaveLength(1);
    expect(t.lines.filter((l) => l.msg === 'new dead tasks')).toHaveLength(1);
  });
});
