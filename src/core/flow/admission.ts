/**
 * The admission step's policy: may a task of a type run now on this worker, or must it wait in
 * storage (parked) without using an attempt? Pure: decided from the type's state, whether this
 * worker has the handler, and the time. One place for every reason a task does not run: paused by
 * hand, breaker open, no handler here or anywhere. It is applied twice with the same rules: by the
 * worker before a claim, from its snapshot of the registry (FlowGate, refreshed every
 * AX_FLOW_REFRESH: it saves claiming what is known to be refused), and inside the claim's
 * transaction, from the types' rows as they are then (the authority: a pause or an opening takes
 * effect for every claim that commits after it, and probes are counted cluster-wide).
 */
import type {FlowView, ParkedKind, TypeRecord} from '../store/types.js';
import {breakerSettings} from './breaker.js';
import {hasLimits, limitsOf} from './limits.js';

export interface AdmissionOptions {
  /** A paused type's task waits this long before it is looked at again (a resume releases it earlier). */
  pausedRecheckMs: number;
  /** A task no live worker handles waits this long before it is looked at again (a registering worker rings it earlier). */
  unhandledRecheckMs: number;
  /** A task whose handler is on other live workers, not this one, is rung again after this long. */
  elsewhereRecheckMs: number;
  /** While half-open and the episode's probes are out, a task is looked at again after this long (at least the base cool-down). */
  probeRecheckMs: number;
}

/** The defaults: AX_PAUSED_RECHECK, AX_UNHANDLED_RECHECK (docs/reference/configuration.md). */
export const ADMISSION_DEFAULTS: AdmissionOptions = {
  pausedRecheckMs: 300_000,
  unhandledRecheckMs: 60_000,
  elsewhereRecheckMs: 1000,
  probeRecheckMs: 5000,
};

export type Admission = {run: true; probe?: true} | {run: false; delayMs: number; parked: ParkedKind | null; reason: string};

const RUN: Admission = {run: true};

/** The registry as the policy reads it: by type. `loaded` false until the first successful read. */
export interface FlowSnapshot {
  loaded: boolean;
  /** Epoch ms of the database clock at the read (FlowView.at; 0 before the first read). */
  at: number;
  types: ReadonlyMap<string, TypeRecord>;
  /** Live workers with a handler per type. */
  handlers: ReadonlyMap<string, number>;
  /** Types with a max running or a rate (core/flow/limits.ts): their claims go through the limits step. */
  limited: ReadonlySet<string>;
  /** Limited types and those whose breaker is not closed: their claims lock the registry row (lockedAmong). */
  locked: ReadonlySet<string>;
  /** Types with fair dispatch (a subset of `limited`): their keyed doorbells are permits (core/flow/fair.ts). */
  fair: ReadonlySet<string>;
}

export const EMPTY_SNAPSHOT: FlowSnapshot = {
  loaded: false,
  at: 0,
  types: new Map(),
  handlers: new Map(),
  limited: new Set(),
  locked: new Set(),
  fair: new Set(),
};

export function snapshotOf(v: FlowView): FlowSnapshot {
  const limited = new Set(v.types.filter((t) => hasLimits(limitsOf(t.settings))).map((t) => t.type));
  return {
    loaded: true,
    at: v.at.getTime(),
    types: new Map(v.types.map((t) => [t.type, t])),
    handlers: new Map(Object.entries(v.handlers).map(([t, ids]) => [t, ids.length])),
    limited,
    locked: new Set([...limited, ...v.types.filter((t) => t.breaker.state !== 'closed').map((t) => t.type)]),
    fair: new Set(v.types.filter((t) => limitsOf(t.settings).fair === true).map((t) => t.type)),
  };
}

/**
 * The types among those of `tasks` (a claim batch) whose registry rows the claim must lock for
 * update, or undefined when none: those with limits, and those whose breaker is not closed (the
 * claim counts their probes cluster-wide). The claim reads every other type's row with a shared
 * lock. The decisions themselves are made in the claim's transaction from the rows, not from this
 * snapshot.
 */
export function lockedAmong(s: FlowSnapshot, tasks: Iterable<{type: string}>): string[] | undefined {
  if (s.locked.size === 0) return undefined;
  const out = new Set<string>();
  for (const {type} of tasks) if (s.locked.has(type)) out.add(type);
  return out.size === 0 ? undefined : [...out];
}

/** What the flow decision reads of a type: its snapshot record (before the claim) or its row (in the claim). */
export type FlowState = Pick<TypeRecord, 'paused' | 'pausedBy' | 'pausedReason' | 'settings'> & {
  breaker: Pick<TypeRecord['breaker'], 'state' | 'until' | 'changedAt'>;
};

/**
 * Pause and breaker for one task of a type whose handler this worker has. In order: paused →
 * parked `paused`; breaker open until a later probe time → parked `breaker` until then; breaker
 * half-open (or open past its probe time) → run as a probe while `probesLeft` > 0, else parked
 * `breaker` for the probe recheck. Else run. The claim's transaction calls it with the type's row
 * and the probes left cluster-wide in this episode (see probeEpisode); the worker's pre-claim check
 * with its snapshot and no probe budget of its own (Infinity: the claim decides).
 */
export function flowDecision(t: FlowState | undefined, nowMs: number, o: AdmissionOptions, probesLeft: number): Admission {
  if (t?.paused) {
    return {
      run: false,
      delayMs: o.pausedRecheckMs,
      parked: 'paused',
      reason: `parked: type paused by ${t.pausedBy ?? 'an operator'}${t.pausedReason ? ` (${t.pausedReason})` : ''}`,
    };
  }
  if (t && t.breaker.state !== 'closed') {
    const until = t.breaker.until?.getTime() ?? null;
    if (t.breaker.state === 'open' && until !== null && until > nowMs)
      return {run: false, delayMs: until - nowMs, parked: 'breaker', reason: `parked: breaker open until ${new Date(until).toISOString()}`};
    if (probesLeft > 0) return {run: true, probe: true};
    return {
      run: false,
      delayMs: Math.max(o.probeRecheckMs, breakerSettings(t.settings).cooldownMs),
      parked: 'breaker',
      reason: 'parked: breaker half-open, its probes are out',
    };
  }
  return RUN;
}

/**
 * The start (epoch ms) of the probe episode at `nowMs` of a breaker that is not closed: its probe
 * budget (the type's `probes`, cluster-wide) renews every base cool-down since it changed state,
 * so probes whose outcomes never came (a worker killed mid-probe) cannot keep it half-open forever.
 */
export function probeEpisode(changedAtMs: number | null, nowMs: number, cooldownMs: number): number {
  const since = changedAtMs ?? 0;
  return since + Math.floor(Math.max(0, nowMs - since) / Math.max(1, cooldownMs)) * Math.max(1, cooldownMs);
}

/**
 * The worker's check before a claim, from its snapshot. A pause wins over everything (the operator
 * speaking; a paused type never dead-letters for want of a handler). No handler on this worker →
 * rung again shortly when another live worker has one, else parked `unhandled` (it never
 * dead-letters for want of a handler here; the store sends it dead only after
 * AX_UNHANDLED_DEAD_AFTER). Else flowDecision without a probe budget: a half-open type's tasks go
 * to the claim, whose transaction decides pause, breaker and probes again from the type's row (the
 * snapshot may be up to AX_FLOW_REFRESH old).
 */
export function admit(s: FlowSnapshot, type: string, localHandler: boolean, nowMs: number, o: AdmissionOptions): Admission {
  const t = s.types.get(type);
  if (t?.paused) return flowDecision(t, nowMs, o, 0);
  if (!localHandler) {
    if ((s.handlers.get(type) ?? 0) > 0)
      return {run: false, delayMs: o.elsewhereRecheckMs, parked: null, reason: 'not run here: its handler is on other workers'};
    return {
      run: false,
      delayMs: o.unhandledRecheckMs,
      parked: 'unhandled',
      reason: `parked: no live worker has a handler for type "${type}"`,
    };
  }
  return flowDecision(t, nowMs, o, Infinity);
}
