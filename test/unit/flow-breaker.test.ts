/**
 * The circuit breaker per type: the pure state machine on a fake clock (open over > 50% failures
 * with the minimum volume, growing capped cool-down, half-open probes, close on successes), the
 * admission step's probe budget, and several workers' gates sharing one store: counts that no
 * single worker sees as a majority open the breaker together, and exactly one transition is made.
 */
import {describe, expect, it} from 'vitest';
import {ADMISSION_DEFAULTS, admit, flowDecision, probeEpisode, snapshotOf} from '../../src/core/flow/admission.js';
import {
  BREAKER_DEFAULTS,
  breakerSettings,
  CLOSED,
  cooldownMs,
  countsSpanMs,
  evaluate,
  OUTCOMES_KEPT_MS,
  probeSpanMs,
  type SecondCount,
} from '../../src/core/flow/breaker.js';
import {mergeBreaker} from '../../src/core/flow/settings.js';
import {FlowGate, type GateStore} from '../../src/core/flow/gate.js';
import {AxEvents, type BreakerEvent} from '../../src/core/events.js';
import {createLogger} from '../../src/core/log.js';
import type {Broker} from '../../src/core/broker/types.js';
import type {BreakerTransitionParams, OutcomeCount, TypeRecord} from '../../src/core/store/types.js';
import {fakeClock, type FakeClock} from '../helpers/clock.js';
import {type Clock, sleep} from '../../src/core/time.js';

const T0 = Date.parse('2026-12-01T12:00:00Z');
const s = BREAKER_DEFAULTS;
/** `n` seconds of counts ending at `end`, each with ok/failed. */
const secs = (end: number, n: number, ok: number, failed: number): SecondCount[] =>
  Array.from({length: n}, (_, i) => ({at: end - (n - i) * 1000, ok, failed}));

describe('breaker settings and the outcome span a gate reads', () => {
  it('refuses settings whose probes would take longer to close it than the outcomes are kept', () => {
    // 1 probe per 6 min episode, 3 to close: the third starts 12 min after half-open.
    expect(() => mergeBreaker({}, {probes: 1, closeAfter: 3, cooldown: '6m', maxCooldown: '10m'})).toThrow(
      /close-after 3 at 1 probe\(s\) per 360 s cool-down takes more than 10 min of probes/,
    );
    expect(mergeBreaker({}, {probes: 1, closeAfter: 3, cooldown: '5m', maxCooldown: '10m'})).toMatchObject({closeAfter: 3});
    // A stored override counts: lowering the probes later is refused too.
    expect(() => mergeBreaker({closeAfter: 3, cooldownMs: 400_000, maxCooldownMs: 600_000}, {probes: 1})).toThrow(/close-after 3/);
    expect(probeSpanMs({probes: 3, closeAfter: 3, cooldownMs: 86_400_000})).toBe(0);
  });

  it('reads every closed window, and a half-open breaker since it turned half-open, capped at what is kept', () => {
    const closed = {settings: s, state: CLOSED};
    expect(countsSpanMs([], T0)).toBe(60_000);
    expect(countsSpanMs([closed, {settings: {...s, windowMs: 300_000}, state: CLOSED}], T0)).toBe(300_000);
    const half = (since: number) => ({settings: s, state: {state: 'half_open' as const, until: null, openings: 1, changedAt: since}});
    expect(countsSpanMs([closed, half(T0 - 150_500)], T0)).toBe(152_000);
    expect(countsSpanMs([half(T0 - 3_600_000)], T0)).toBe(OUTCOMES_KEPT_MS);
  });
});

describe('breaker state machine (pure)', () => {
  it('opens when more than half of at least minVolume attempts of the last minute failed', () => {
    expect(evaluate(CLOSED, secs(T0, 10, 1, 1), T0, s)).toBeNull(); // 50%: not more than half
    expect(evaluate(CLOSED, secs(T0, 5, 1, 2), T0, s)).toBeNull(); // 15 attempts < minVolume 20
    const t = evaluate(CLOSED, secs(T0, 10, 1, 2), T0, s)!;
    expect(t.event).toBe('breaker:opened');
    expect(t.to).toEqual({state: 'open', until: T0 + 30_000, openings: 1, changedAt: T0});
    expect(t.detail).toMatch(/20 of 30 attempts failed in the last 60 s/);
    // Counts older than the window do not count, nor those from before it last closed.
    expect(evaluate(CLOSED, secs(T0 - 61_000, 10, 0, 5), T0, s)).toBeNull();
    expect(evaluate({...CLOSED, changedAt: T0 - 2000}, secs(T0 - 2000, 10, 0, 5), T0, s)).toBeNull();
    expect(evaluate({...CLOSED, changedAt: T0 - 10_000}, secs(T0, 10, 0, 5), T0, s)?.event).toBe('breaker:opened');
    // Nor those of the second it closed in: a reset in the second of the last failures holds.
    expect(evaluate({...CLOSED, changedAt: T0 - 500}, [{at: T0 - 1000, ok: 0, failed: 30}], T0, s)).toBeNull();
    expect(evaluate({...CLOSED, changedAt: T0 - 500}, [{at: T0, ok: 0, failed: 30}], T0 + 500, s)?.event).toBe('breaker:opened');
  });

  it('half-opens once the cool-down is over, not before', () => {
    const open = {state: 'open' as const, until: T0 + 30_000, openings: 1, changedAt: T0};
    expect(evaluate(open, [], T0 + 29_999, s)).toBeNull();
    expect(evaluate(open, [], T0 + 30_000, s)).toMatchObject({
      event: 'breaker:half-open',
      to: {state: 'half_open', openings: 1, changedAt: T0 + 30_000},
    });
  });

  it('half-open: a failed probe re-opens with a longer cool-down (capped); enough successes close it and reset the cool-down', () => {
    const half = {state: 'half_open' as const, until: null, openings: 1, changedAt: T0};
    // Counts of earlier seconds are not probes; those of the second it half-opened in are.
    expect(evaluate(half, [{at: T0 - 1000, ok: 0, failed: 9}], T0 + 500, s)).toBeNull();
    expect(evaluate(half, [{at: T0, ok: 0, failed: 1}], T0 + 500, s)?.event).toBe('breaker:opened');
    const re = evaluate(half, [{at: T0 + 1000, ok: 1, failed: 1}], T0 + 2000, s)!;
    expect(re.event).toBe('breaker:opened');
    expect(re.to).toMatchObject({state: 'open', openings: 2, until: T0 + 2000 + 60_000});
    expect(evaluate(half, [{at: T0 + 1000, ok: 2, failed: 0}], T0 + 2000, s)).toBeNull();
    expect(evaluate(half, [{at: T0 + 1000, ok: 3, failed: 0}], T0 + 2000, s)).toMatchObject({
      event: 'breaker:closed',
      to: {state: 'closed', openings: 0},
    });
    expect([1, 2, 3, 5, 10, 40].map((n) => cooldownMs(n, s))).toEqual([30_000, 60_000, 120_000, 480_000, 600_000, 600_000]);
  });

  it('takes per-type overrides from the settings, and closes at once when disabled', () => {
    const o = breakerSettings({breaker: {threshold: 0.2, minVolume: 5}});
    expect(o).toMatchObject({threshold: 0.2, minVolume: 5, windowMs: 60_000});
    expect(evaluate(CLOSED, secs(T0, 5, 3, 1), T0, o)?.event).toBe('breaker:opened');
    const off = breakerSettings({breaker: {enabled: false}});
    expect(evaluate(CLOSED, secs(T0, 60, 0, 9), T0, off)).toBeNull();
    expect(evaluate({state: 'open', until: T0 + 1, openings: 1, changedAt: T0}, [], T0, off)?.event).toBe('breaker:closed');
  });
});

const rec = (type: string, breaker: TypeRecord['breaker'], settings: Record<string, unknown> = {}): TypeRecord => ({
  type,
  paused: false,
  pausedBy: null,
  pausedReason: null,
  pausedAt: null,
  settings,
  breaker,
  createdAt: new Date(T0),
  updatedAt: new Date(T0),
});

describe('admission with a breaker', () => {
  it('parks until the probe time while open; then lets `probes` through per episode and parks the rest for the probe recheck', () => {
    const open = snapshotOf({
      at: new Date(T0),
      handlers: {},
      types: [rec('order_notify', {state: 'open', until: new Date(T0 + 10_000), openings: 1, changedAt: new Date(T0)})],
    });
    expect(admit(open, 'order_notify', true, T0, ADMISSION_DEFAULTS)).toMatchObject({run: false, parked: 'breaker', delayMs: 10_000});
    // Open past its probe time counts as half-open: the worker's check lets it go to the claim,
    // whose transaction spends the probes left cluster-wide (no herd of every parked task).
    expect(admit(open, 'order_notify', true, T0 + 10_000, ADMISSION_DEFAULTS)).toEqual({run: true, probe: true});
    const t = open.types.get('order_notify');
    expect(flowDecision(t, T0 + 10_000, ADMISSION_DEFAULTS, 1)).toEqual({run: true, probe: true});
    expect(flowDecision(t, T0 + 10_000, ADMISSION_DEFAULTS, 0)).toMatchObject({run: false, parked: 'breaker', delayMs: 30_000});
  });

  it('renews the probe budget every base cool-down since the breaker changed state', () => {
    expect(probeEpisode(T0, T0, 30_000)).toBe(T0);
    expect(probeEpisode(T0, T0 + 29_999, 30_000)).toBe(T0);
    expect(probeEpisode(T0, T0 + 30_000, 30_000)).toBe(T0 + 30_000);
    expect(probeEpisode(T0, T0 + 95_000, 30_000)).toBe(T0 + 90_000);
    // A clock behind the change: the episode it changed in.
    expect(probeEpisode(T0, T0 - 5000, 30_000)).toBe(T0);
  });
});

/**
 * One store shared by several gates: a registry row per type and per-second counts, CAS
 * transitions; `dbNow` is the database's clock (FlowView.at).
 */
function sharedStore(dbNow: () => number) {
  const types = new Map<string, TypeRecord>();
  const counts: OutcomeCount[] = [];
  const transitions: BreakerTransitionParams[] = [];
  const store: GateStore = {
    // Like the MySQL store's: only the rows that say something (a breaker that ever moved does).
    flowView: () =>
      Promise.resolve({
        at: new Date(dbNow()),
        types: [...types.values()].filter(
          (t) => t.paused || t.breaker.state !== 'closed' || t.breaker.changedAt !== null || Object.keys(t.settings).length > 0,
        ),
        handlers: {},
      }),
    tasksDefer: () => Promise.reject(new Error('unused')),
    typesRegister: () => Promise.resolve(),
    parkedRelease: () => Promise.resolve([]),
    doorbellsMark: () => Promise.resolve(),
    outcomeCounts: () => Promise.resolve([...counts]),
    outcomesPurge: () => Promise.resolve(0),
    breakerTransition: (p) => {
      const cur = types.get(p.type)?.breaker ?? {state: 'closed', until: null, openings: 0, changedAt: null};
      if (cur.state !== p.expect.state || (cur.changedAt?.getTime() ?? null) !== (p.expect.changedAt?.getTime() ?? null))
        return Promise.resolve(false);
      types.set(p.type, rec(p.type, p.to));
      transitions.push(p);
      return Promise.resolve(true);
    },
  };
  return {store, types, counts, transitions};
}

describe('breakers across workers (FlowGate over a shared store)', () => {
  it('three workers each seeing a minority of the failures open it together, with one transition and one event', async () => {
    const clock = fakeClock(T0);
    const sh = sharedStore(clock.now);
    const events = new AxEvents();
    const opened: BreakerEvent[] = [];
    events.on('breaker:opened', (e) => opened.push(e));
    const gates = [1, 2, 3].map((i) => {
      const g = new FlowGate({store: sh.store, clock, logger: createLogger('silent'), refreshMs: 1000});
      g.attach(events, `w${i}`);
      return g;
    });
    for (const g of gates) await g.start([], {publish: () => Promise.resolve()} as unknown as Broker);
    // The rows of three workers summed, as outcomeCounts returns them: 12 ok and 13 failed (52% of
    // 25). Split three ways no worker saw more than 5 failures, under minVolume on its own.
    sh.counts.push({type: 'order_notify', at: new Date(T0 - 1000), ok: 12, failed: 13});
    await clock.advanceAsync(1000);
    expect(sh.transitions).toHaveLength(1);
    expect(opened).toHaveLength(1);
    expect(opened[0]).toMatchObject({type: 'order_notify', from: 'closed', to: 'open', openings: 1});
    // Every worker's admission now parks the type until the probe time.
    for (const g of gates) expect(g.admit('order_notify', true)).toMatchObject({run: false, parked: 'breaker'});
    // After the cool-down: half-open; every worker sends the type's tasks to the claim, which
    // spends the probes cluster-wide (the conformance suite tests that), and locks its row.
    await clock.advanceAsync(30_000);
    expect(sh.types.get('order_notify')?.breaker.state).toBe('half_open');
    for (const g of gates) {
      expect(g.admit('order_notify', true)).toEqual({run: true, probe: true});
      expect(g.locked([{type: 'order_notify'}, {type: 'user_register'}])).toEqual(['order_notify']);
    }
    // Three probes succeed: closed.
    const half = sh.types.get('order_notify')!.breaker.changedAt!.getTime();
    sh.counts.length = 0;
    sh.counts.push({type: 'order_notify', at: new Date(Math.floor(half / 1000) * 1000 + 1000), ok: 3, failed: 0});
    await clock.advanceAsync(2000);
    expect(sh.types.get('order_notify')?.breaker.state).toBe('closed');
    expect(sh.transitions.map((t) => t.event)).toEqual(['breaker:opened', 'breaker:half-open', 'breaker:closed']);
    for (const g of gates) await g.stop();
  });
});

/** `base` seen from a host whose wall clock is `offsetMs` off (its monotonic clock and timers are the machine's). */
const skewed = (base: FakeClock, offsetMs: number): Clock => ({
  now: () => base.now() + offsetMs,
  monotonic: () => base.monotonic(),
  setTimeout: (fn, ms) => base.setTimeout(fn, ms),
  clearTimeout: (h) => base.clearTimeout(h),
});

describe('breakers on a worker whose clock is off (clock skew)', () => {
  it("measures the worker's clock against the database's within half the read's round trip", async () => {
    const db = fakeClock(T0);
    const sh = sharedStore(db.now);
    // The database stamps NOW(3) 10 ms into a read of 40 ms.
    const store: GateStore = {
      ...sh.store,
      flowView: async (p) => {
        await sleep(db, 10);
        const view = await sh.store.flowView(p);
        await sleep(db, 30);
        return view;
      },
    };
    const gate = new FlowGate({store, clock: skewed(db, 30_000), logger: createLogger('silent'), refreshMs: 1e9, breakers: false});
    expect(gate.clockOffset()).toBeNull();
    const read = gate.refresh();
    await db.advanceAsync(40);
    await read;
    const c = gate.clockOffset()!;
    expect(c.errorMs).toBe(21);
    expect(Math.abs(c.offsetMs - 30_000)).toBeLessThanOrEqual(c.errorMs);
    // Never ahead of the database's clock, behind it by at most the round trip.
    expect(T0 + 40 - gate.dbNow()).toBeGreaterThanOrEqual(0);
    expect(T0 + 40 - gate.dbNow()).toBeLessThanOrEqual(40);
  });

  for (const offsetMs of [30_000, -30_000]) {
    it(`a worker ${offsetMs > 0 ? 'ahead' : 'behind'} by 30 s opens it for its cool-down on the database clock, from the failures of the database's window`, async () => {
      const db = fakeClock(T0);
      const sh = sharedStore(db.now);
      const gate = new FlowGate({store: sh.store, clock: skewed(db, offsetMs), logger: createLogger('silent'), refreshMs: 1000});
      await gate.start([], {publish: () => Promise.resolve()} as unknown as Broker);
      expect(gate.dbNow()).toBe(T0);
      // 13 of 25 failed in the database's last second (type_outcomes counts seconds of NOW()).
      sh.counts.push({type: 'order_notify', at: new Date(T0), ok: 12, failed: 13});
      await db.advanceAsync(1000);
      expect(sh.transitions).toHaveLength(1);
      // Stamped with the database's time: a worker behind would have opened it until a time already
      // past (no cool-down at all), one ahead for twice the cool-down.
      expect(sh.transitions[0]!.to).toMatchObject({state: 'open', changedAt: new Date(T0 + 1000), until: new Date(T0 + 31_000)});
      // The worker's own check parks the type until the probe time, measured on the database clock.
      expect(gate.admit('order_notify', true)).toMatchObject({run: false, parked: 'breaker', delayMs: 30_000});
      await db.advanceAsync(29_000);
      expect(sh.types.get('order_notify')?.breaker.state).toBe('open');
      expect(gate.admit('order_notify', true)).toMatchObject({run: false, parked: 'breaker', delayMs: 1000});
      await db.advanceAsync(1000);
      expect(sh.types.get('order_notify')?.breaker).toMatchObject({state: 'half_open', changedAt: new Date(T0 + 31_000)});
      expect(gate.admit('order_notify', true)).toEqual({run: true, probe: true});
      await gate.stop();
    });
  }
});
