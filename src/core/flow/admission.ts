/**
 * The admission step's policy: may a task of a type run now on this worker, or must it wait in
 * storage (parked) without using an attempt? Pure: decided from a snapshot of the type registry
 * (core/store FlowView, refreshed by the worker's FlowGate), whether this worker has the handler,
 * and the time. One place for every reason a task does not run: paused by hand, breaker open, no
 * handler here or anywhere.
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
  /** While half-open and this worker's probes are out, a task is looked at again after this long (at least the base cool-down). */
  probeRecheckMs: number;
}

/** The defaults: AX_PAUSED_RECHECK, AX_UNHANDLED_RECHECK (README, configuration). */
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
  /** Epoch ms of the database clock at the read, and the local clock then (to age it). */
  types: ReadonlyMap<string, TypeRecord>;
  /** Live workers with a handler per type. */
  handlers: ReadonlyMap<string, number>;
  /** Types with a max running or a rate (core/flow/limits.ts): their claims go through the limits step. */
  limited: ReadonlySet<string>;
}

export const EMPTY_SNAPSHOT: FlowSnapshot = {loaded: false, types: new Map(), handlers: new Map(), limited: new Set()};

export function snapshotOf(v: FlowView): FlowSnapshot {
  return {
    loaded: true,
    types: new Map(v.types.map((t) => [t.type, t])),
    handlers: new Map(Object.entries(v.handlers).map(([t, ids]) => [t, ids.length])),
    limited: new Set(v.types.filter((t) => hasLimits(limitsOf(t.settings))).map((t) => t.type)),
  };
}

/**
 * The limited types among the types of `tasks` (a claim batch), or undefined when none is: the claim
 * then has no limits step at all. The limits themselves are decided in the claim's transaction
 * (decideLimits, from the stored settings and state), not from this snapshot.
 */
export function limitedAmong(s: FlowSnapshot, tasks: Iterable<{type: string}>): string[] | undefined {
  if (s.limited.size === 0) return undefined;
  const out = new Set<string>();
  for (const {type} of tasks) if (s.limited.has(type)) out.add(type);
  return out.size === 0 ? undefined : [...out];
}

/**
 * Decides for one task of `type`. In order: paused → parked `paused`; no handler on this worker →
 * rung again shortly when another live worker has one, else parked `unhandled` (it never
 * dead-letters for want of a handler here; the store sends it dead only after
 * AX_UNHANDLED_DEAD_AFTER); breaker open until a later probe time → parked `breaker` until then;
 * breaker half-open (or open past its probe time) → run as a probe while this worker has used
 * fewer than the type's `probes` in this half-open episode (`probesUsed`), else parked `breaker`
 * for the probe recheck. Else run.
 */
export function admit(s: FlowSnapshot, type: string, localHandler: boolean, nowMs: number, o: AdmissionOptions, probesUsed = 0): Admission {
  const t = s.types.get(type);
  if (t?.paused) {
    return {
      run: false,
      delayMs: o.pausedRecheckMs,
      parked: 'paused',
      reason: `parked: type paused by ${t.pausedBy ?? 'an operator'}${t.pausedReason ? ` (${t.pausedReason})` : ''}`,
    };
  }
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
  if (t && t.breaker.state !== 'closed') {
    const until = t.breaker.until?.getTime() ?? null;
    if (t.breaker.state === 'open' && until !== null && until > nowMs)
      return {run: false, delayMs: until - nowMs, parked: 'breaker', reason: `parked: breaker open until ${new Date(until).toISOString()}`};
    const bs = breakerSettings(t.settings);
    if (probesUsed < bs.probes) return {run: true, probe: true};
    return {
      run: false,
      delayMs: Math.max(o.probeRecheckMs, bs.cooldownMs),
      parked: 'breaker',
      reason: 'parked: breaker half-open, its probes are out',
    };
  }
  return RUN;
}
