/**
 * A small pure model of flow control (the circuit breaker per type, pause, parking and release)
 * for the model-based test (test/integration/flow-model.test.ts). It is written from the contract
 * (design docs, issue 20), not from src/core/flow: what the breaker, parking and release MUST do,
 * so the test can tell when the real store and gates do something else. Times are epoch ms of the
 * one fake clock the test pins the database clock to.
 *
 * The contract it states:
 * - closed → open when, over the type's window (but only from the second after the one it last
 *   closed in: that second's counts may be from before the close), at least minVolume attempts
 *   were counted and failed/total > threshold; the cool-down of the n-th
 *   opening in a row is cooldown·2^(n−1), capped at maxCooldown;
 * - open → half_open once its probe time (`until`) has come;
 * - half_open → open (one more opening) on any failure counted since the second it turned
 *   half-open; → closed after closeAfter successes (openings back to 0);
 * - a breaker turned off is closed at once (by the settings change) and never opens while off;
 *   a reset closes it now;
 * - tasks of a paused type are parked `paused`; of an open breaker parked `breaker` until the
 *   probe time; half-open, `probes` tasks per probe episode run cluster-wide (claims that hold the
 *   type's row for update: the claimer's snapshot says it is not closed), the rest are parked
 *   `breaker` for max(probe recheck, cool-down);
 * - a worker's own check before the claim decides from its snapshot (possibly stale), but what it
 *   parks is re-checked against the row: no longer paused / breaker closed → not parked, due now;
 * - release is prompt: a resume releases the `paused` ones; a breaker that closes (probes, reset,
 *   turned off) releases the `breaker` ones in the same step (due now, no longer parked).
 */

import {type BreakerSettings, OUTCOMES_KEPT_MS} from '../../src/core/flow/breaker.js';

export type BreakerStateName = 'closed' | 'open' | 'half_open';
export type ParkedKind = 'paused' | 'breaker';

/** A type's breaker settings: the store's own shape (the values below are the model's, from the docs). */
export type Settings = BreakerSettings;

/** The design's defaults (docs: "> 50 % failures over 1 minute, at least 20 attempts"), pinned here on purpose. */
export const DEFAULTS: Settings = {
  enabled: true,
  threshold: 0.5,
  minVolume: 20,
  windowMs: 60_000,
  cooldownMs: 30_000,
  maxCooldownMs: 600_000,
  probes: 3,
  closeAfter: 3,
};

/** How long parked tasks wait before they are looked at again (AX_PAUSED_RECHECK, the probe recheck). */
export const RECHECK = {pausedMs: 300_000, probeMs: 5000};

export interface Breaker {
  state: BreakerStateName;
  until: number | null;
  openings: number;
  changedAt: number | null;
}

export type BreakerEvent = 'breaker:opened' | 'breaker:half-open' | 'breaker:closed';

export interface Transition {
  to: Breaker;
  event: BreakerEvent;
  /** Why it closed: probes, disabled (an evaluation), or reset (an operator). */
  why?: 'probes' | 'disabled' | 'reset';
}

/** A run_at the model knows to lie in [min, max] (released tasks: some time during the step). */
export type RunAt = readonly [number, number];

export interface ModelTask {
  id: string;
  type: string;
  /** waiting: submitted or failed (claimable once due); done: succeeded. */
  state: 'waiting' | 'running' | 'done';
  parked: ParkedKind | null;
  runAt: RunAt;
}

export interface ModelType {
  name: string;
  paused: boolean;
  /** The stored breaker overrides (task_types.settings.breaker; absent keys take DEFAULTS). */
  overrides: Partial<Settings>;
  breaker: Breaker;
  /** Attempt outcomes per second (epoch ms of its start). */
  counts: Map<number, {ok: number; failed: number}>;
  /** The probe budget spent: in which episode, how many. */
  probeEpisode: number | null;
  probesUsed: number;
  /** task_type_history events, oldest first. */
  history: string[];
  /** Re-openings after a close by probes: full episodes open → half-open → closed → open. */
  cycles: number;
  closedByProbes: boolean;
}

export const floorSecond = (ms: number): number => Math.floor(ms / 1000) * 1000;

export const CLOSED: Breaker = {state: 'closed', until: null, openings: 0, changedAt: null};

/** What a worker's snapshot says of a type (its last refresh). */
export interface SnapType {
  paused: boolean;
  breaker: Breaker;
}

/** What a worker's check before the claim does with a type's tasks, the row re-checked by tasksDefer. */
export type PreClaim = {kind: 'claim'} | {kind: 'defer'; parked: ParkedKind | null; runAt: number};

/** What a claim of a type's tasks does now (its registry row decides). */
export type ClaimRule =
  {kind: 'run'} | {kind: 'park'; parked: ParkedKind; runAt: number} | {kind: 'probe'; left: number; parkRunAt: number; episode: number};

export class FlowModel {
  readonly types = new Map<string, ModelType>();
  readonly tasks = new Map<string, ModelTask>();

  addType(name: string): ModelType {
    const t: ModelType = {
      name,
      paused: false,
      overrides: {},
      breaker: {...CLOSED},
      counts: new Map(),
      probeEpisode: null,
      probesUsed: 0,
      history: [],
      cycles: 0,
      closedByProbes: false,
    };
    this.types.set(name, t);
    return t;
  }

  type(name: string): ModelType {
    const t = this.types.get(name);
    if (!t) throw new Error(`model: unknown type ${name}`);
    return t;
  }

  settings(name: string): Settings {
    return {...DEFAULTS, ...this.type(name).overrides};
  }

  private sum(t: ModelType, fromMs: number, nowMs: number): {ok: number; failed: number} {
    // What a gate can see at all: the gates read every count a type's evaluation needs (its window,
    // or everything since it turned half-open), never more than the outcomes kept.
    const visible = floorSecond(nowMs) - Math.ceil(OUTCOMES_KEPT_MS / 1000) * 1000;
    let ok = 0;
    let failed = 0;
    for (const [at, c] of t.counts)
      if (at >= fromMs && at >= visible) {
        ok += c.ok;
        failed += c.failed;
      }
    return {ok, failed};
  }

  cooldown(n: number, s: Settings): number {
    return Math.min(s.maxCooldownMs, s.cooldownMs * 2 ** (n - 1));
  }

  /** The transition one evaluation of `b` makes at `nowMs` (b defaults to the type's breaker). */
  next(name: string, nowMs: number, b: Breaker = this.type(name).breaker): Transition | null {
    const t = this.type(name);
    const s = this.settings(name);
    if (!s.enabled) return b.state === 'closed' ? null : {to: {...CLOSED, changedAt: nowMs}, event: 'breaker:closed', why: 'disabled'};
    const open = (n: number): Transition => ({
      to: {state: 'open', until: nowMs + this.cooldown(n, s), openings: n, changedAt: nowMs},
      event: 'breaker:opened',
    });
    switch (b.state) {
      case 'closed': {
        const from = Math.max(nowMs - s.windowMs, b.changedAt === null ? -Infinity : floorSecond(b.changedAt) + 1000);
        const w = this.sum(t, from, nowMs);
        const total = w.ok + w.failed;
        return total >= s.minVolume && w.failed / total > s.threshold ? open(b.openings + 1) : null;
      }
      case 'open':
        return b.until !== null && nowMs < b.until
          ? null
          : {to: {state: 'half_open', until: null, openings: b.openings, changedAt: nowMs}, event: 'breaker:half-open'};
      case 'half_open': {
        const w = this.sum(t, floorSecond(b.changedAt ?? nowMs), nowMs);
        if (w.failed > 0) return open(b.openings + 1);
        if (w.ok >= s.closeAfter) return {to: {...CLOSED, changedAt: nowMs}, event: 'breaker:closed', why: 'probes'};
        return null;
      }
    }
  }

  /** The transitions `k` evaluations in a row make at `nowMs` (k gates each moving it once), without applying them. */
  chain(name: string, nowMs: number, k: number): Transition[] {
    const out: Transition[] = [];
    let b = this.type(name).breaker;
    for (let i = 0; i < k; i++) {
      const tr = this.next(name, nowMs, b);
      if (!tr) break;
      out.push(tr);
      b = tr.to;
    }
    return out;
  }

  /** Applies a transition: history, episode count, and on closing the prompt release of the `breaker`-parked tasks. */
  apply(name: string, tr: Transition, step: RunAt): void {
    const t = this.type(name);
    t.breaker = {...tr.to};
    t.history.push(tr.event);
    if (tr.to.state === 'open' && t.closedByProbes) t.cycles++;
    if (tr.to.state === 'open' || tr.to.state === 'half_open') t.closedByProbes = false;
    if (tr.to.state === 'closed') {
      t.closedByProbes = tr.why === 'probes';
      this.release(name, 'breaker', step);
    }
  }

  /** Parked tasks of a kind made due during the step, no longer parked. */
  release(name: string, kind: ParkedKind, step: RunAt): number {
    let n = 0;
    for (const task of this.tasks.values())
      if (task.type === name && task.state === 'waiting' && task.parked === kind) {
        task.parked = null;
        task.runAt = step;
        n++;
      }
    return n;
  }

  submit(id: string, name: string, nowMs: number): void {
    this.type(name);
    this.tasks.set(id, {id, type: name, state: 'waiting', parked: null, runAt: [nowMs, nowMs]});
  }

  /** Waiting tasks of a type due at `nowMs`, in id order. */
  due(name: string, nowMs: number): ModelTask[] {
    return [...this.tasks.values()]
      .filter((t) => t.type === name && t.state === 'waiting' && t.runAt[1] <= nowMs)
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  running(name: string): ModelTask[] {
    return [...this.tasks.values()]
      .filter((t) => t.type === name && t.state === 'running')
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** The probe episode at `nowMs` of a breaker that is not closed: its budget renews every base cool-down since it changed. */
  episode(name: string, nowMs: number): number {
    const since = this.type(name).breaker.changedAt ?? 0;
    const every = Math.max(1, this.settings(name).cooldownMs);
    return since + Math.floor(Math.max(0, nowMs - since) / every) * every;
  }

  /** The type as a worker refreshing now sees it. */
  snap(name: string): SnapType {
    const t = this.type(name);
    return {paused: t.paused, breaker: {...t.breaker}};
  }

  /**
   * A worker's check before the claim from its snapshot `s` (undefined: nothing said about the type):
   * paused, or open until a later probe time → parked, unless the row says otherwise by now (then
   * due at once, not parked); else on to the claim.
   */
  preClaim(name: string, s: SnapType | undefined, nowMs: number): PreClaim {
    const t = this.type(name);
    if (s?.paused)
      return t.paused ? {kind: 'defer', parked: 'paused', runAt: nowMs + RECHECK.pausedMs} : {kind: 'defer', parked: null, runAt: nowMs};
    const b = s?.breaker;
    if (b && b.state === 'open' && b.until !== null && b.until > nowMs)
      return t.breaker.state !== 'closed'
        ? {kind: 'defer', parked: 'breaker', runAt: b.until}
        : {kind: 'defer', parked: null, runAt: nowMs};
    return {kind: 'claim'};
  }

  /**
   * What a claim of the type's tasks does at `nowMs`, from the type's row; `locked`: the claimer's
   * snapshot says the breaker is not closed, so the claim holds the row for update and may spend probes.
   */
  claimRule(name: string, nowMs: number, locked = true): ClaimRule {
    const t = this.type(name);
    const s = this.settings(name);
    if (t.paused) return {kind: 'park', parked: 'paused', runAt: nowMs + RECHECK.pausedMs};
    const b = t.breaker;
    if (b.state === 'closed') return {kind: 'run'};
    if (b.state === 'open' && b.until !== null && b.until > nowMs) return {kind: 'park', parked: 'breaker', runAt: b.until};
    const episode = this.episode(name, nowMs);
    const used = t.probeEpisode === episode ? t.probesUsed : 0;
    return {
      kind: 'probe',
      left: locked ? Math.max(0, s.probes - used) : 0,
      parkRunAt: nowMs + Math.max(RECHECK.probeMs, s.cooldownMs),
      episode,
    };
  }

  /** Records a claim: `ran` now running; `parked` waiting (parked as said, or not). Spent probes count in their episode. */
  claimed(
    name: string,
    rule: ClaimRule | null,
    ran: string[],
    parked: Array<{id: string; parked: ParkedKind | null; runAt: number}>,
  ): void {
    for (const id of ran) Object.assign(this.task(id), {state: 'running', parked: null});
    for (const p of parked) Object.assign(this.task(p.id), {state: 'waiting', parked: p.parked, runAt: [p.runAt, p.runAt]});
    if (rule?.kind === 'probe' && ran.length > 0) {
      const t = this.type(name);
      t.probesUsed = (t.probeEpisode === rule.episode ? t.probesUsed : 0) + ran.length;
      t.probeEpisode = rule.episode;
    }
  }

  /** A worker's outcome of a running task: ok → done; failed → waiting, due now (retried at once); counted for the breaker. */
  outcome(id: string, ok: boolean, nowMs: number): void {
    const task = this.task(id);
    if (task.state !== 'running') throw new Error(`model: outcome of ${id}, which is ${task.state}`);
    Object.assign(task, ok ? {state: 'done', parked: null} : {state: 'waiting', parked: null, runAt: [nowMs, nowMs]});
    const t = this.type(task.type);
    const c = t.counts.get(floorSecond(nowMs)) ?? {ok: 0, failed: 0};
    c[ok ? 'ok' : 'failed']++;
    t.counts.set(floorSecond(nowMs), c);
  }

  task(id: string): ModelTask {
    const t = this.tasks.get(id);
    if (!t) throw new Error(`model: unknown task ${id}`);
    return t;
  }
}
