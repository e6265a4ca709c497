/**
 * Model-based test of flow control (issue 20, "tests that would have caught defect 1"): random
 * sequences (fast-check) of outcome bursts, claims, pause/resume (--rate too), breaker resets
 * (--rate too), setting changes (thresholds, breaker off/on, back to the defaults, and invalid
 * ones) and time steps, driven through the real MySQL store, three real FlowGates (three workers,
 * each with its own pool, on one database) and the real types admin, and compared after EVERY step
 * with the pure model in test/helpers/flow-model.ts: each type's breaker (state, probe time,
 * openings, changedAt to the millisecond), pause and stored settings, its history (exactly one row
 * per transition: of the gates deciding at once one wins), the breaker events the gates emit, and
 * every task (waiting/running/done, parked kind, run_at) with the parked counts per kind.
 *
 * Several gates decide at once: refreshes one after the other in a random order or all at once
 * (the breaker must end on the model's chain of next transitions, one history row each), claims
 * split between gates running at once (probes counted cluster-wide), outcomes recorded by the three
 * workers at once, and claims from a gate's stale snapshot (the model knows each gate's snapshot
 * wherever it can be known; tasksDefer must re-check the row).
 *
 * Two types per run: `alpha` on the default breaker settings (no settings row: the case defect 1
 * broke), `beta` scaled down (min volume 4, window 10 s, cool-down 2 s, cap 8 s, 2 probes). The
 * random steps include "drive" steps that push a type to its next transition (a burst of failures
 * over several gates' claims, the wait for the probe time, probes that succeed or fail); then a
 * finishing phase drives each type until it went open → half-open → closed (by probes) → open
 * again at least five times (it fails when a type stops making progress, e.g. a breaker that never
 * reopens), with, once per type, an open breaker holding parked tasks closed by an operator: a
 * reset, then turning the breaker off (each followed by a claim from a stale snapshot).
 *
 * Two properties: `breaker` compares the breaker, history, events, pause and settings and takes
 * the tasks from the database after each step (so a breaker defect shows even when parking is
 * wrong too: on the code before the fix it fails on defect 1 alone); `full` compares every task as
 * well (parking and release, defect 2).
 *
 * Time: one fake clock (test/helpers/clock.ts) for the gates and the admin, and the database clock
 * pinned to it (test/helpers/pinned-db-clock.ts: every session of the test's stores runs with
 * `SET timestamp` = the fake now). The breaker's until/changedAt come from the injected clock,
 * while the outcome seconds (type_outcomes), due times, the claim's "now" and probe episodes come
 * from NOW(): pinning makes both the same clock, so every window and due time is exact to the
 * millisecond and time steps of minutes cost nothing (writing outcome rows with explicit seconds
 * instead would bypass the store's outcome path, and following the real database clock would need
 * real waits). No sleeps: the admin's own waits (resume waits a flow refresh; --rate paces) run on
 * a clock that moves the fake time on by the wait at once; the model knows only that a release
 * happened during its step.
 *
 * Size: by default 2 runs per property of up to 40 random steps plus the finishing phase (10–30 s
 * in all, depending on the machine's load). Larger: AX_MODEL_RUNS=<runs per property> (e.g. 200),
 * AX_MODEL_STEPS=<max random steps per run>, AX_MODEL_SEED=<seed> to replay a failure (fast-check
 * prints its seed and the failing steps; the error names the step and the last steps), and
 * AX_MODEL_SHRINK=1 to let fast-check shrink a failure (slow: every shrink step is a full run).
 */
import fc from 'fast-check';
import {describe, expect, it} from 'vitest';
import {openStore} from '../../src/compose.js';
import {AxEvents} from '../../src/core/events.js';
import {FlowGate} from '../../src/core/flow/gate.js';
import {createLogger} from '../../src/core/log.js';
import type {AxStore, Outcome} from '../../src/core/store/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import type {Clock} from '../../src/core/time.js';
import {createTypesAdmin, type TypesAdmin} from '../../src/core/types/admin.js';
import {type FakeClock, fakeClock} from '../helpers/clock.js';
import {createTestEnv, type TestEnv} from '../helpers/env.js';
import {
  type Breaker,
  CLOSED,
  type ClaimRule,
  DEFAULTS,
  floorSecond,
  FlowModel,
  type ParkedKind,
  type RunAt,
  type Settings,
  type SnapType,
} from '../helpers/flow-model.js';
import {pinDbClock, type PinnedClock} from '../helpers/pinned-db-clock.js';

const RUNS = Number(process.env.AX_MODEL_RUNS ?? 2);
const MAX_STEPS = Number(process.env.AX_MODEL_STEPS ?? 40);
const SEED = process.env.AX_MODEL_SEED === undefined ? undefined : Number(process.env.AX_MODEL_SEED);
const SHRINK = process.env.AX_MODEL_SHRINK === '1';
const GATES = 3;
const CYCLES = 5;
const OPERATOR = 'model-operator';
const BETA: Partial<Settings> = {minVolume: 4, windowMs: 10_000, cooldownMs: 2000, maxCooldownMs: 8000, probes: 2, closeAfter: 2};

// ---------------------------------------------------------------------------------------------
// The steps fast-check generates (types by index: 0 alpha, 1 beta; gates by index).

type RefreshMode = {concurrent: boolean; order: number[]};
type SetInput = {reset?: boolean; breaker: Partial<Record<'enabled' | keyof Omit<Settings, 'enabled'>, number | boolean>>};
type Step =
  | {k: 'drive'; type: number; failRatio: number; probeFails: boolean; jitterMs: number; mode: RefreshMode; gates: number}
  | {k: 'submit'; type: number; n: number}
  | {k: 'claim'; type: number; gates: number[]; n: number; fresh: boolean}
  | {k: 'outcomes'; type: number; ok: number; failed: number}
  | {k: 'refresh'; mode: RefreshMode}
  | {k: 'pause'; type: number}
  | {k: 'resume'; type: number; rate?: number}
  | {k: 'reset'; type: number; rate?: number}
  | {k: 'set'; type: number; input: SetInput}
  | {k: 'advance'; ms: number};

const typeArb = fc.integer({min: 0, max: 1});
const orderArb = fc.shuffledSubarray([0, 1, 2], {minLength: GATES, maxLength: GATES});
/** --rate of a resume or reset: paced releases (their waits move the fake clock on). */
const rateArb = fc.constantFrom(1, 4, 50);
const modeArb: fc.Arbitrary<RefreshMode> = fc.record({concurrent: fc.boolean(), order: orderArb});
const setArb: fc.Arbitrary<SetInput> = fc.oneof(
  {weight: 2, arbitrary: fc.constant({reset: true, breaker: {}})},
  {weight: 2, arbitrary: fc.constant({breaker: {enabled: false}})},
  {weight: 2, arbitrary: fc.constant({breaker: {enabled: true}})},
  {
    weight: 4,
    arbitrary: fc
      .record(
        {
          threshold: fc.constantFrom(0.3, 0.5, 0.7),
          minVolume: fc.integer({min: 2, max: 8}),
          windowMs: fc.constantFrom(5000, 10_000, 30_000, 90_000),
          cooldownMs: fc.constantFrom(1000, 2000, 5000, 20_000),
          maxCooldownMs: fc.constantFrom(4000, 8000, 30_000),
          probes: fc.integer({min: 1, max: 3}),
          closeAfter: fc.integer({min: 1, max: 3}),
        },
        {requiredKeys: []},
      )
      .map((breaker) => ({breaker})),
  },
);
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      k: fc.constant('drive' as const),
      type: typeArb,
      failRatio: fc.constantFrom(0.2, 0.5, 0.75, 1, 1),
      probeFails: fc.integer({min: 0, max: 3}).map((x) => x === 0),
      jitterMs: fc.integer({min: 0, max: 1500}),
      mode: modeArb,
      gates: fc.integer({min: 1, max: GATES}),
    }),
  },
  {weight: 2, arbitrary: fc.record({k: fc.constant('submit' as const), type: typeArb, n: fc.integer({min: 1, max: 6})})},
  {
    weight: 3,
    arbitrary: fc.record({
      k: fc.constant('claim' as const),
      type: typeArb,
      gates: fc.shuffledSubarray([0, 1, 2], {minLength: 1}),
      n: fc.integer({min: 1, max: 8}),
      fresh: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      k: fc.constant('outcomes' as const),
      type: typeArb,
      ok: fc.integer({min: 0, max: 4}),
      failed: fc.integer({min: 0, max: 4}),
    }),
  },
  {weight: 3, arbitrary: fc.record({k: fc.constant('refresh' as const), mode: modeArb})},
  {weight: 1, arbitrary: fc.record({k: fc.constant('pause' as const), type: typeArb})},
  {
    weight: 1,
    arbitrary: fc.record({k: fc.constant('resume' as const), type: typeArb, rate: rateArb}, {requiredKeys: ['k', 'type']}),
  },
  {
    weight: 2,
    arbitrary: fc.record({k: fc.constant('reset' as const), type: typeArb, rate: rateArb}, {requiredKeys: ['k', 'type']}),
  },
  {weight: 2, arbitrary: fc.record({k: fc.constant('set' as const), type: typeArb, input: setArb})},
  {
    weight: 3,
    arbitrary: fc.record({k: fc.constant('advance' as const), ms: fc.constantFrom(1, 250, 999, 1000, 2500, 5000, 30_000, 61_000)}),
  },
);

// ---------------------------------------------------------------------------------------------
// One run: a fresh database, three gates, the admin, the model; steps applied to both, compared.

const logger = createLogger('error', {test: 'flow-model'});

/** The admin's clock: its waits (resume waits a flow refresh) move the fake clock on at once, by the wait. */
function advancingClock(fake: FakeClock): Clock {
  return {
    now: () => fake.now(),
    monotonic: () => fake.monotonic(),
    setTimeout: (fn, ms) => {
      const h = fake.setTimeout(fn, ms);
      setImmediate(() => fake.advance(Math.max(0, ms)));
      return h;
    },
    clearTimeout: (h) => fake.clearTimeout(h),
  };
}

class Run {
  readonly model = new FlowModel();
  readonly names: [string, string];
  readonly gates: FlowGate[] = [];
  readonly gateStores: AxStore[] = [];
  readonly gateEvents: string[] = [];
  gateTransitions = 0;
  readonly fences = new Map<string, number>();
  /** Each gate's snapshot as the model knows it (null: unknown, after gates moved a breaker at once). */
  readonly snaps: Array<Map<string, SnapType> | null> = Array.from({length: GATES}, () => null);
  readonly log: string[] = [];
  private readonly newId: () => string;
  private stepStart = 0;
  admin!: TypesAdmin;
  producer!: AxStore;
  pinned!: PinnedClock;

  /**
   * `full`: every task is compared too (parking and release, defect 2). `breaker`: the breaker,
   * history, events, pause and settings are compared; the tasks are taken from the database after
   * each step (so a breaker defect shows even where parking is wrong too).
   */
  constructor(
    readonly env: TestEnv,
    readonly clock: FakeClock,
    tag: string,
    readonly mode: 'full' | 'breaker',
  ) {
    this.names = [`${tag}_alpha`, `${tag}_beta`];
    this.newId = createIdGenerator(() => clock.now());
  }

  async open(): Promise<void> {
    const rt = {...this.env.rt, clock: this.clock as Clock};
    for (let g = 0; g < GATES; g++) {
      const store = await openStore(rt);
      this.gateStores.push(store);
      const gate = new FlowGate({store, clock: this.clock, logger, refreshMs: 1000});
      const events = new AxEvents();
      for (const e of ['breaker:opened', 'breaker:half-open', 'breaker:closed'] as const) events.on(e, () => this.gateEvents.push(e));
      gate.attach(events, `model-worker-${g}`);
      this.gates.push(gate);
    }
    this.producer = await openStore(rt);
    this.pinned = pinDbClock([...this.gateStores, this.producer], this.clock);
    this.admin = createTypesAdmin({
      store: this.producer,
      clock: advancingClock(this.clock),
      logger,
      operator: () => OPERATOR,
      flowRefreshMs: 1000,
    });
    // The workers register their types (no settings row: alpha runs on the defaults).
    await this.gateStores[0]!.typesRegister({types: [...this.names]});
    for (const n of this.names) this.model.addType(n);
    await this.set(1, {breaker: numeric(BETA)});
    await this.check('setup');
  }

  async close(): Promise<void> {
    for (const s of [...this.gateStores, this.producer]) await s?.close().catch(() => undefined);
  }

  get now(): number {
    return this.clock.now();
  }

  private span(): RunAt {
    return [this.stepStart, this.now];
  }

  // -- steps ---------------------------------------------------------------------------------

  async step(s: Step, label: string): Promise<void> {
    try {
      await this.apply(s, label);
    } catch (e) {
      if (e instanceof Error && !e.message.includes('last steps:')) e.message += `\nlast steps:\n  ${this.log.slice(-12).join('\n  ')}`;
      throw e;
    }
  }

  private async apply(s: Step, label: string): Promise<void> {
    this.stepStart = this.now;
    this.log.push(`${label} ${JSON.stringify(s)}`);
    switch (s.k) {
      case 'drive':
        await this.drive(s);
        break;
      case 'submit':
        await this.submit(s.type, s.n);
        break;
      case 'claim':
        await this.claim(s.type, s.gates, s.n, s.fresh);
        break;
      case 'outcomes':
        await this.outcomes(s.type, s.ok, s.failed);
        break;
      case 'refresh':
        await this.refreshAll(s.mode);
        break;
      case 'pause':
        await this.pause(s.type);
        break;
      case 'resume':
        await this.resume(s.type, s.rate);
        break;
      case 'reset':
        await this.reset(s.type, s.rate);
        break;
      case 'set':
        await this.set(s.type, s.input);
        break;
      case 'advance':
        this.clock.advance(s.ms);
        break;
    }
    await this.check(label);
  }

  /** Pushes a type towards its next transition; then the gates refresh. */
  async drive(s: Extract<Step, {k: 'drive'}>): Promise<void> {
    const name = this.names[s.type]!;
    const t = this.model.type(name);
    const gates = s.mode.order.slice(0, s.gates);
    if (t.breaker.state === 'open') {
      this.clock.advance(Math.max(0, (t.breaker.until ?? this.now) - this.now) + s.jitterMs);
    } else if (t.breaker.state === 'half_open') {
      // This probe episode's budget spent: the next episode starts a base cool-down later.
      const rule = this.model.claimRule(name, this.now);
      if (rule.kind === 'probe' && rule.left === 0) this.clock.advance(rule.episode + this.model.settings(name).cooldownMs - this.now);
      await this.submit(s.type, this.model.settings(name).probes);
      const ran = await this.claim(s.type, gates, this.model.due(name, this.now).length);
      await this.outcomes(s.type, ran.length - (s.probeFails ? 1 : 0), s.probeFails && ran.length > 0 ? 1 : 0);
    } else {
      // The second it closed in does not count: failures come from the next one on.
      const closedAt = t.breaker.changedAt;
      if (closedAt !== null && floorSecond(this.now) <= floorSecond(closedAt))
        this.clock.advance(floorSecond(closedAt) + 1000 - this.now + (s.jitterMs % 1000));
      const n = Math.max(this.model.settings(name).minVolume, 4) + 2;
      await this.submit(s.type, n);
      const ran = await this.claim(s.type, gates, n);
      const failed = Math.ceil(ran.length * s.failRatio);
      await this.outcomes(s.type, ran.length - failed, failed);
    }
    await this.refreshAll(s.mode);
  }

  async submit(type: number, n: number): Promise<void> {
    const name = this.names[type]!;
    const tasks = Array.from({length: n}, (_, i) =>
      validateTaskSpec(
        {type: name, payload: {i}, maxRetries: 100},
        {maxRetries: 100, payloadLimitBytes: 65_536, cell: 'default'},
        this.now,
        this.newId,
      ),
    );
    await this.producer.tasksInsert({tasks, actor: 'model-producer'});
    for (const t of tasks) this.model.submit(t.id, name, this.now);
  }

  /**
   * Up to `n` of the type's due tasks, split between the gates in `gates`, claimed by them at once as
   * workers do: the gate's own check parks what its snapshot refuses (tasksDefer re-checks the row),
   * the claim's transaction decides the rest from the type's row (probes only for a claim holding it
   * for update: the gate's snapshot says the breaker is not closed). `fresh`: each gate refreshes
   * first (one after the other); else it decides from the snapshot it has, however stale (a gate
   * whose snapshot the model cannot know refreshes). Returns the ids that run.
   */
  async claim(type: number, gates: readonly number[], n: number, fresh = true): Promise<string[]> {
    const name = this.names[type]!;
    for (const g of gates) if (fresh || !this.snaps[g]) await this.refreshOne(g);
    const now = this.now;
    const candidates = this.model.due(name, now).slice(0, n);
    if (candidates.length === 0) return [];
    const plans = gates.map((g) => {
      const snap = this.snaps[g]!.get(name);
      const pre = this.model.preClaim(name, snap, now);
      const locked = snap !== undefined && snap.breaker.state !== 'closed';
      return {g, pre, rule: pre.kind === 'claim' ? this.model.claimRule(name, now, locked) : null};
    });
    const batches = gates.map((_, i) => candidates.filter((_, j) => j % gates.length === i).map((c) => c.id));
    type Parked = {id: string; parked: string | null; delayMs: number};
    const results = await Promise.all(
      gates.map(async (g, i) => {
        const ids = batches[i]!;
        if (ids.length === 0) return {ids, ran: [] as string[], parked: [] as Parked[], deferred: false};
        const gate = this.gates[g]!;
        const store = this.gateStores[g]!;
        const a = gate.admit(name, true);
        if (!a.run) {
          const r = await store.tasksDefer({
            tasks: ids.map((id) => ({id, delayMs: a.delayMs, parked: a.parked, reason: a.reason})),
            actor: `model-worker-${g}`,
            unhandledDeadAfterMs: gate.unhandledDeadAfterMs,
            liveMs: gate.liveMs,
          });
          expect(r.deferred.sort(), 'the admission check defers the whole batch').toEqual([...ids].sort());
          return {ids, ran: [], parked: ids.map((id) => ({id, parked: a.parked, delayMs: a.delayMs})), deferred: true};
        }
        const lockTypes = gate.locked(ids.map(() => ({type: name})));
        const r = await store.tasksClaim({
          ids,
          worker: `model-worker-${g}`,
          leaseMs: 3_600_000,
          admission: gate.admission,
          ...(lockTypes ? {lockTypes} : {}),
        });
        expect(r.skipped, `claim of ${name} by gate ${g}: every candidate is due and claimable`).toEqual([]);
        for (const c of r.claimed) this.fences.set(c.id, c.fence);
        const parked = (r.deferred ?? []).map((d) => ({id: d.id, parked: d.parked, delayMs: d.delayMs}));
        return {ids, ran: r.claimed.map((c) => c.id), parked, deferred: false};
      }),
    );
    const want = (what: string, ok: boolean) => {
      if (!ok) throw new Error(`claim of ${name} (${JSON.stringify(plans)}): ${what}; got ${JSON.stringify(results)}`);
    };
    const ran: string[] = [];
    const parked: Array<{id: string; parked: ParkedKind | null; runAt: number}> = [];
    let probe: ClaimRule | null = null;
    let probeCandidates = 0;
    for (const [i, {g, pre, rule}] of plans.entries()) {
      const r = results[i]!;
      if (r.ids.length === 0) continue;
      if (pre.kind === 'defer') {
        // The gate's snapshot refused them; the row re-checked: parked as it still says, or due now.
        want(`gate ${g} defers its batch (${pre.parked ?? 'not parked'})`, r.deferred);
        parked.push(...r.ids.map((id) => ({id, parked: pre.parked, runAt: pre.runAt})));
        continue;
      }
      want(`gate ${g} claims its batch`, !r.deferred);
      switch (rule!.kind) {
        case 'run':
          want(`gate ${g}: all run`, r.ran.length === r.ids.length);
          break;
        case 'park':
          want(`gate ${g}: all parked ${rule!.parked}`, r.ran.length === 0 && r.parked.every((p) => p.parked === rule!.parked));
          parked.push(...r.ids.map((id) => ({id, parked: rule!.parked, runAt: rule!.runAt})));
          break;
        case 'probe':
          // Probes in its batch's order; the rest wait for the probe recheck.
          want(
            `gate ${g}: probes in delivery order`,
            r.ran.every((id, j) => r.ids[j] === id),
          );
          want(
            `gate ${g}: the rest parked breaker`,
            r.parked.length === r.ids.length - r.ran.length && r.parked.every((p) => p.parked === 'breaker'),
          );
          parked.push(...r.parked.map((p) => ({id: p.id, parked: 'breaker' as const, runAt: rule!.parkRunAt})));
          if (rule!.left > 0) {
            probe = rule;
            probeCandidates += r.ids.length;
          } else want(`gate ${g}: no probe without the row locked or with the budget spent`, r.ran.length === 0);
          break;
      }
      ran.push(...r.ran);
    }
    // Cluster-wide: of the claims that may spend probes, exactly the probes left run in all.
    if (probe?.kind === 'probe')
      want(`${Math.min(probe.left, probeCandidates)} probes in all`, ran.length === Math.min(probe.left, probeCandidates));
    this.model.claimed(name, probe, ran, parked);
    return ran;
  }

  /** `ok` successes and `failed` failures of the type's running tasks, recorded by the gates' workers at once. */
  async outcomes(type: number, ok: number, failed: number): Promise<void> {
    const name = this.names[type]!;
    const running = this.model.running(name).slice(0, ok + failed);
    // Failures first among the oldest, successes after: the split over workers mixes them.
    const plan = running.map((t, i) => ({id: t.id, ok: i >= Math.min(failed, running.length)}));
    const byGate = Array.from({length: GATES}, (_, g) => plan.filter((_, i) => i % GATES === g));
    await Promise.all(
      byGate.map(async (part, g) => {
        if (part.length === 0) return;
        const outcomes: Outcome[] = part.map((p) =>
          p.ok
            ? {kind: 'complete', id: p.id, fence: this.fences.get(p.id)!, type: name, breaker: 'ok'}
            : {
                kind: 'fail',
                id: p.id,
                fence: this.fences.get(p.id)!,
                type: name,
                error: 'downstream down',
                retryDelayMs: 0,
                breaker: 'failed',
              },
        );
        const r = await this.gateStores[g]!.outcomesApply({outcomes, actor: `model-worker-${g}`});
        expect(r.stale, 'outcomes of running tasks apply').toEqual([]);
      }),
    );
    for (const p of plan) this.model.outcome(p.id, p.ok, this.now);
  }

  /** One gate's refresh: it moves each breaker at most once (the model's next transition); its snapshot is then the model's state. */
  async refreshOne(g: number): Promise<void> {
    const expected = this.names.map((n) => [n, this.model.next(n, this.now)] as const);
    await this.gates[g]!.refresh();
    for (const [n, tr] of expected)
      if (tr) {
        this.model.apply(n, tr, this.span());
        this.gateTransitions++;
      }
    this.snaps[g] = new Map(this.names.map((n) => [n, this.model.snap(n)]));
  }

  /**
   * All gates refresh, one after the other in `order` or all at once. At once, each gate moves a
   * breaker at most once from what it read, and of the gates deciding the same move one wins: the
   * breaker ends somewhere along the model's chain of next transitions (at least one of them, at
   * most one per gate); which one is the database's to say, the rest must match.
   */
  async refreshAll(mode: RefreshMode): Promise<void> {
    if (!mode.concurrent) {
      for (const g of mode.order) await this.refreshOne(g);
      return;
    }
    const chains = this.names.map((n) => [n, this.model.chain(n, this.now, GATES)] as const);
    await Promise.all(mode.order.map((g) => this.gates[g]!.refresh()));
    // Which gate read what is the database's to say: their snapshots are known only when nothing moved.
    const still = chains.every(([, chain]) => chain.length === 0);
    for (let g = 0; g < GATES; g++) this.snaps[g] = still ? new Map(this.names.map((n) => [n, this.model.snap(n)])) : null;
    const rows = await this.breakers();
    for (const [n, chain] of chains) {
      const db = rows.get(n)!;
      const w = chain.findIndex((tr) => sameBreaker(tr.to, db)) + 1;
      if (chain.length > 0 && w === 0)
        throw new Error(
          `${n}: gates refreshing at once left the breaker at ${show(db)}; the model's transitions from ${show(this.model.type(n).breaker)} were ${chain.map((tr) => show(tr.to)).join(' → ')}`,
        );
      for (const tr of chain.slice(0, w)) {
        this.model.apply(n, tr, this.span());
        this.gateTransitions++;
      }
    }
  }

  async pause(type: number): Promise<void> {
    const name = this.names[type]!;
    const t = this.model.type(name);
    const r = await this.admin.pause(name, 'model pause');
    expect(r.changed, `pause of ${name} changes it only when it runs`).toBe(!t.paused);
    if (!t.paused) t.history.push('paused');
    t.paused = true;
  }

  async resume(type: number, rate?: number): Promise<void> {
    const name = this.names[type]!;
    const t = this.model.type(name);
    if (!t.paused) {
      await expect(this.admin.resume(name), `resume of ${name}, not paused`).rejects.toMatchObject({code: 'conflict'});
      return;
    }
    const r = await this.admin.resume(name, {reason: 'model resume', ...(rate === undefined ? {} : {rate})});
    t.paused = false;
    t.history.push('resumed');
    const released = this.model.release(name, 'paused', this.span());
    if (this.mode === 'full') expect(r.released, `resume of ${name} releases its paused tasks`).toBe(released);
  }

  async reset(type: number, rate?: number): Promise<void> {
    const name = this.names[type]!;
    const t = this.model.type(name);
    if (t.breaker.state === 'closed') {
      await expect(this.admin.resetBreaker(name, 'model'), `reset of ${name}, closed`).rejects.toMatchObject({code: 'conflict'});
      return;
    }
    const parked = this.parkedCount(name, 'breaker');
    const r = await this.admin.resetBreaker(name, 'model', rate === undefined ? {} : {rate});
    expect(r.from).toBe(t.breaker.state);
    if (this.mode === 'full') expect(r.released, `reset of ${name} releases what its breaker parked`).toBe(parked);
    const db = (await this.breakers()).get(name)!;
    const at = db.changedAt ?? Number.NaN;
    if (!(at >= this.stepStart && at <= this.now)) throw new Error(`reset of ${name}: closed at ${at}, not during the call`);
    this.model.apply(
      name,
      {to: {state: 'closed', until: null, openings: 0, changedAt: at}, event: 'breaker:closed', why: 'reset'},
      this.span(),
    );
  }

  async set(type: number, input: SetInput): Promise<void> {
    const name = this.names[type]!;
    const t = this.model.type(name);
    const merged: Partial<Settings> = {...(input.reset ? {} : t.overrides), ...(input.breaker as Partial<Settings>)};
    const cool = merged.cooldownMs ?? DEFAULTS.cooldownMs;
    const cap = merged.maxCooldownMs ?? DEFAULTS.maxCooldownMs;
    const call = this.admin.set(name, {
      ...(input.reset ? {reset: true} : {}),
      breaker: {
        ...(input.breaker.enabled === undefined ? {} : {enabled: input.breaker.enabled as boolean}),
        ...(input.breaker.threshold === undefined ? {} : {threshold: input.breaker.threshold as number}),
        ...(input.breaker.minVolume === undefined ? {} : {minVolume: input.breaker.minVolume as number}),
        ...(input.breaker.windowMs === undefined ? {} : {window: input.breaker.windowMs as number}),
        ...(input.breaker.cooldownMs === undefined ? {} : {cooldown: input.breaker.cooldownMs as number}),
        ...(input.breaker.maxCooldownMs === undefined ? {} : {maxCooldown: input.breaker.maxCooldownMs as number}),
        ...(input.breaker.probes === undefined ? {} : {probes: input.breaker.probes as number}),
        ...(input.breaker.closeAfter === undefined ? {} : {closeAfter: input.breaker.closeAfter as number}),
      },
    });
    if (cool > cap) {
      // Bad input: a clear error, nothing changed (the check after the step sees no history row either).
      await expect(call, `set ${name}: cool-down above its cap`).rejects.toMatchObject({code: 'invalid_input'});
      return;
    }
    const r = await call;
    t.overrides = merged;
    t.history.push('settings');
    expect(r.breaker, `set ${name}: the effective settings`).toEqual({...DEFAULTS, ...merged});
    if (merged.enabled === false) {
      // Turned off: closed at once (after the settings row: its history row comes second), its parked tasks released.
      const parked = this.parkedCount(name, 'breaker');
      if (t.breaker.state !== 'closed') {
        const at = (await this.breakers()).get(name)!.changedAt ?? Number.NaN;
        if (!(at >= this.stepStart && at <= this.now))
          throw new Error(`set ${name} --breaker-off: not closed during the call (changedAt ${at})`);
        this.model.apply(name, {to: {...CLOSED, changedAt: at}, event: 'breaker:closed', why: 'disabled'}, this.span());
      }
      this.model.release(name, 'breaker', this.span());
      if (this.mode === 'full') expect(r.released, `set ${name} --breaker-off releases what its breaker parked`).toBe(parked);
    }
  }

  private parkedCount(name: string, kind: ParkedKind): number {
    return [...this.model.tasks.values()].filter((x) => x.type === name && x.state === 'waiting' && x.parked === kind).length;
  }

  // -- finishing: drive each type through its episodes ----------------------------------------------

  async finish(): Promise<void> {
    for (let type = 0; type < 2; type++) {
      const name = this.names[type]!;
      if (this.model.type(name).paused) await this.step({k: 'resume', type}, `finish ${name}: resume`);
      // Back to the defaults (alpha: no settings row at all) or beta's scaled-down ones, which can close by probes.
      await this.step(
        {k: 'set', type, input: type === 0 ? {reset: true, breaker: {}} : {reset: true, breaker: numeric(BETA)}},
        `finish ${name}: settings`,
      );
    }
    const operatorDone = [false, false];
    const offDone = [false, false];
    for (let i = 0; this.names.some((n) => this.model.type(n).cycles < CYCLES); i++) {
      if (i > 200) throw new Error(`no progress: episodes ${this.names.map((n) => `${n} ${this.model.type(n).cycles}`).join(', ')}`);
      for (let type = 0; type < 2; type++) {
        if (this.model.type(this.names[type]!).cycles >= CYCLES) continue;
        // Once per type, while its breaker is open with tasks parked by it: a reset, then a turn-off.
        if (this.model.type(this.names[type]!).breaker.state === 'open' && this.model.type(this.names[type]!).cycles >= 1) {
          if (!operatorDone[type]) {
            operatorDone[type] = true;
            await this.operatorEpisode(type, 'reset');
            continue;
          }
          if (!offDone[type]) {
            offDone[type] = true;
            await this.operatorEpisode(type, 'off');
            continue;
          }
        }
        const mode = {concurrent: i % 2 === 0, order: i % 3 === 0 ? [2, 0, 1] : [0, 1, 2]};
        await this.step(
          {k: 'drive', type, failRatio: 1, probeFails: i % 7 === 3, jitterMs: (i * 137) % 1000, mode, gates: 1 + (i % GATES)},
          `finish ${i}`,
        );
      }
    }
    for (const n of this.names)
      expect(this.model.type(n).cycles, `${n}: open → half-open → closed → open again`).toBeGreaterThanOrEqual(CYCLES);
  }

  /**
   * An open breaker with tasks parked by it, every gate's snapshot saying open; then an operator
   * closes it (a reset, or turning the breaker off and on again): its parked tasks are released in
   * the same call, and a gate still deciding from its stale snapshot parks nothing new.
   */
  private async operatorEpisode(type: number, how: 'reset' | 'off'): Promise<void> {
    const tag = `finish ${this.names[type]!}: ${how}`;
    await this.step({k: 'submit', type, n: 3}, `${tag}: submit`);
    await this.step({k: 'claim', type, gates: [0, 1, 2], n: 3, fresh: true}, `${tag}: parked by the open breaker`);
    await this.step({k: 'refresh', mode: {concurrent: false, order: [2, 1, 0]}}, `${tag}: every snapshot says open`);
    // alpha's reset paced (--rate 4: its waits move the fake clock on), beta's at once.
    if (how === 'reset') await this.step({k: 'reset', type, ...(type === 0 ? {rate: 4} : {})}, tag);
    else await this.step({k: 'set', type, input: {breaker: {enabled: false}}}, tag);
    await this.step({k: 'submit', type, n: 3}, `${tag}: submit`);
    await this.step({k: 'claim', type, gates: [1], n: 6, fresh: false}, `${tag}: a stale snapshot`);
    if (how === 'off') await this.step({k: 'set', type, input: {breaker: {enabled: true}}}, `${tag}: on again`);
  }

  // -- the comparison after every step ---------------------------------------------------------

  private async breakers(): Promise<Map<string, Breaker>> {
    const rows = await this.env.sql<{
      type: string;
      breaker_state: Breaker['state'];
      breaker_until: Date | null;
      breaker_openings: number;
      breaker_changed_at: Date | null;
    }>('SELECT type, breaker_state, breaker_until, breaker_openings, breaker_changed_at FROM task_types WHERE type IN (?)', [this.names]);
    return new Map(
      rows.map((r) => [
        r.type,
        {
          state: r.breaker_state,
          until: r.breaker_until?.getTime() ?? null,
          openings: Number(r.breaker_openings),
          changedAt: r.breaker_changed_at?.getTime() ?? null,
        },
      ]),
    );
  }

  private async history(name: string): Promise<string[]> {
    const rows = await this.env.sql<{event: string}>('SELECT event FROM task_type_history WHERE type = ? ORDER BY seq', [name]);
    return rows.map((r) => r.event);
  }

  async check(label: string): Promise<void> {
    this.pinned.assertPinned();
    const problems: string[] = [];
    const now = this.now;
    const breakers = await this.breakers();
    const regs = await this.env.sql<{type: string; paused: number; settings: string | null}>(
      'SELECT type, paused, settings FROM task_types WHERE type IN (?)',
      [this.names],
    );
    const tasks = await this.env.sql<{id: string; type: string; state: string; parked: string | null; run_at: Date}>(
      'SELECT id, type, state, parked, run_at FROM tasks WHERE type IN (?)',
      [this.names],
    );
    const parkedCounts = await this.env.sql<{type: string; parked: string; n: number}>(
      `SELECT type, parked, COUNT(*) AS n FROM tasks WHERE type IN (?) AND state IN ('submitted', 'failed') AND parked IS NOT NULL GROUP BY type, parked`,
      [this.names],
    );
    for (const n of this.names) {
      const t = this.model.type(n);
      const db = breakers.get(n);
      if (!db || !sameBreaker(t.breaker, db))
        problems.push(`${n}: breaker is ${db ? show(db) : 'missing'}, the model says ${show(t.breaker)}`);
      const reg = regs.find((r) => r.type === n);
      if ((Number(reg?.paused) === 1) !== t.paused) problems.push(`${n}: paused is ${reg?.paused}, the model says ${t.paused}`);
      const stored = reg?.settings ? ((JSON.parse(reg.settings) as {breaker?: unknown}).breaker ?? {}) : {};
      if (JSON.stringify(sortKeys(stored)) !== JSON.stringify(sortKeys(t.overrides)))
        problems.push(`${n}: breaker settings ${JSON.stringify(stored)}, the model says ${JSON.stringify(t.overrides)}`);
      const hist = await this.history(n);
      if (JSON.stringify(hist) !== JSON.stringify(t.history))
        problems.push(
          `${n}: history ${JSON.stringify(hist.slice(-8))} (${hist.length} rows), the model says ${JSON.stringify(t.history.slice(-8))} (${t.history.length})`,
        );
      const want: Record<string, number> = {};
      for (const m of this.model.tasks.values())
        if (m.type === n && m.state === 'waiting' && m.parked) want[m.parked] = (want[m.parked] ?? 0) + 1;
      const got: Record<string, number> = {};
      for (const r of parkedCounts) if (r.type === n) got[r.parked] = Number(r.n);
      if (this.mode === 'full' && JSON.stringify(sortKeys(got)) !== JSON.stringify(sortKeys(want)))
        problems.push(`${n}: parked ${JSON.stringify(got)}, the model says ${JSON.stringify(want)}`);
    }
    const seen = new Set<string>();
    for (const r of tasks) {
      seen.add(r.id);
      const m = this.model.tasks.get(r.id);
      if (!m) {
        problems.push(`task ${r.id}: not in the model`);
        continue;
      }
      const state =
        r.state === 'running'
          ? 'running'
          : r.state === 'succeeded'
            ? 'done'
            : r.state === 'submitted' || r.state === 'failed'
              ? 'waiting'
              : r.state;
      const runAt = r.run_at.getTime();
      if (this.mode === 'breaker' && (state === 'waiting' || state === 'running' || state === 'done')) {
        Object.assign(m, {state, parked: state === 'waiting' ? (r.parked as ParkedKind | null) : null, runAt: [runAt, runAt]});
        continue;
      }
      const bad: string[] = [];
      if (state !== m.state) bad.push(`state ${r.state} (model ${m.state})`);
      if (state === 'waiting' && (r.parked ?? null) !== m.parked) bad.push(`parked ${r.parked} (model ${m.parked})`);
      if (state === 'waiting' && (runAt < m.runAt[0] || runAt > m.runAt[1]))
        bad.push(`run_at ${runAt - now} ms from now (model ${m.runAt[0] - now}..${m.runAt[1] - now})`);
      if (bad.length > 0) problems.push(`task ${r.id} of ${r.type}: ${bad.join(', ')}`);
    }
    for (const id of this.model.tasks.keys()) if (!seen.has(id)) problems.push(`task ${id}: in the model, not in the database`);
    if (this.gateEvents.length !== this.gateTransitions)
      problems.push(`the gates emitted ${this.gateEvents.length} breaker events for ${this.gateTransitions} transitions`);
    if (problems.length > 0)
      throw new Error(
        `after ${label} (fake now ${now}): the database differs from the model:\n  ${problems.slice(0, 12).join('\n  ')}${problems.length > 12 ? `\n  … ${problems.length - 12} more` : ''}\nlast steps:\n  ${this.log.slice(-12).join('\n  ')}`,
      );
  }
}

// ---------------------------------------------------------------------------------------------

function numeric(s: Partial<Settings>): SetInput['breaker'] {
  return {...s};
}

function sameBreaker(a: Breaker, b: Breaker): boolean {
  return a.state === b.state && a.until === b.until && a.openings === b.openings && a.changedAt === b.changedAt;
}

function show(b: Breaker): string {
  return `${b.state}(openings ${b.openings}, until ${b.until}, changedAt ${b.changedAt})`;
}

function sortKeys(o: unknown): unknown {
  return o !== null && typeof o === 'object' ? Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b))) : o;
}

/** `runs` random sequences, each on a fresh database, each ending with the finishing phase. */
async function property(clock: FakeClock, mode: Run['mode'], tag: string): Promise<void> {
  const episodes: number[] = [];
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(stepArb, {minLength: Math.min(10, MAX_STEPS), maxLength: MAX_STEPS, size: 'max'}), async (steps) => {
      const env = await createTestEnv();
      const run = new Run(env, clock, `${tag}${++runs}`, mode);
      try {
        await run.open();
        for (const [i, s] of steps.entries()) await run.step(s, `step ${i} ${s.k}`);
        await run.finish();
        episodes.push(...run.names.map((n) => run.model.type(n).cycles));
      } finally {
        await run.close();
        await env.dispose();
      }
    }),
    {numRuns: RUNS, ...(SEED === undefined ? {} : {seed: SEED}), endOnFailure: !SHRINK},
  );
  expect(episodes.length).toBe(2 * RUNS);
  expect(Math.min(...episodes)).toBeGreaterThanOrEqual(CYCLES);
}

describe('flow control against its model (real store, three gates, fake clock)', () => {
  // Whole seconds plus a bit: the outcome seconds and the breaker's times straddle second edges.
  // One clock for the file: each run goes on from where the last one stopped (time never goes back).
  const clock = fakeClock(Math.floor(Date.now() / 1000) * 1000 + 123);
  const timeout = Math.max(120_000, RUNS * 60_000);

  it(`the breaker: random steps, then ${CYCLES}+ episodes per type, three gates deciding at once (defect 1)`, {timeout}, () =>
    property(clock, 'breaker', 'b'),
  );

  it(`parking and release too: every task compared after every step (defect 2)`, {timeout}, () => property(clock, 'full', 'f'));
});
