/**
 * The circuit breaker of a task type, cluster-wide: a pure state machine over the attempt
 * outcomes every worker counts in per-second windows in MySQL (type_outcomes), so three workers
 * each seeing part of the failures open it together. closed → open when more than `threshold` of
 * the attempts of the last `windowMs` failed, with at least `minVolume` attempts; open → half_open
 * once the cool-down is over (it doubles with each opening in a row, capped at `maxCooldownMs`);
 * half_open lets `probes` tasks through, cluster-wide, per probe episode (core/flow/admission.ts
 * probeEpisode; counted in the claim's transaction): a failure among them re-opens it, `closeAfter`
 * successes close it (and reset the cool-down). Timeouts count as failures; unrecoverable failures
 * (bad payloads) and hand-backs do not count at all. Closed, the window starts no earlier than
 * the second after the one it last closed in.
 */
import {backoffMs} from '../retry/backoff.js';

export type BreakerStateName = 'closed' | 'open' | 'half_open';

export interface BreakerState {
  state: BreakerStateName;
  /** Open: the time of the next probe (epoch ms); null otherwise. */
  until: number | null;
  /** Openings in a row (0 once closed): the cool-down grows with it. */
  openings: number;
  /** When it entered this state (epoch ms; null: never changed). */
  changedAt: number | null;
}

export interface BreakerSettings {
  enabled: boolean;
  /** Failure ratio above which it opens (0 < threshold < 1). */
  threshold: number;
  minVolume: number;
  windowMs: number;
  cooldownMs: number;
  maxCooldownMs: number;
  /** Probe tasks let through while half-open, cluster-wide, per probe episode (a base cool-down). */
  probes: number;
  /** Successful probes (cluster-wide) that close it. */
  closeAfter: number;
}

/** The design's defaults: > 50% failures over 1 minute, at least 20 attempts. */
export const BREAKER_DEFAULTS: BreakerSettings = {
  enabled: true,
  threshold: 0.5,
  minVolume: 20,
  windowMs: 60_000,
  cooldownMs: 30_000,
  maxCooldownMs: 600_000,
  probes: 3,
  closeAfter: 3,
};

/** Longest window any setting may ask for; the windows kept in MySQL cover it. */
export const MAX_WINDOW_MS = 600_000;

/** How long the per-second outcome rows are kept (type_outcomes is purged beyond it). */
export const OUTCOMES_KEPT_MS = MAX_WINDOW_MS + 60_000;

/**
 * How long a half-open breaker may need its probes' outcomes: the probe episodes that closing
 * takes (closeAfter successes at `probes` per base cool-down) must start within MAX_WINDOW_MS of
 * turning half-open, so every outcome that counts is still kept. Settings beyond it are refused.
 */
export function probeSpanMs(s: Pick<BreakerSettings, 'probes' | 'closeAfter' | 'cooldownMs'>): number {
  return (Math.ceil(s.closeAfter / Math.max(1, s.probes)) - 1) * s.cooldownMs;
}

/**
 * The span of per-second counts a gate reads to evaluate these breakers at `nowMs`: at least a
 * minute, every closed type's window, and for a half-open one everything since it turned half-open
 * (its probes may span several episodes); never more than what is kept.
 */
export function countsSpanMs(breakers: Iterable<{settings: BreakerSettings; state: BreakerState}>, nowMs: number): number {
  let span = 60_000;
  for (const {settings, state} of breakers) {
    span = Math.max(span, settings.windowMs);
    if (state.state === 'half_open' && state.changedAt !== null)
      span = Math.max(span, nowMs - Math.floor(state.changedAt / 1000) * 1000 + 1000);
  }
  return Math.min(OUTCOMES_KEPT_MS, span);
}

/** Outcomes of one second (epoch ms of its start), summed over the workers. */
export interface SecondCount {
  at: number;
  ok: number;
  failed: number;
}

export interface BreakerTransition {
  to: BreakerState;
  /** For the history row, the log line and the event. */
  event: 'breaker:opened' | 'breaker:half-open' | 'breaker:closed';
  detail: string;
}

export const CLOSED: BreakerState = {state: 'closed', until: null, openings: 0, changedAt: null};

/** The cool-down after the n-th opening in a row (n ≥ 1): base · 2^(n−1), capped. */
export function cooldownMs(n: number, s: BreakerSettings): number {
  return backoffMs(n, {firstMs: s.cooldownMs, maxMs: s.maxCooldownMs});
}

function sum(counts: readonly SecondCount[], fromMs: number): {ok: number; failed: number} {
  let ok = 0;
  let failed = 0;
  for (const c of counts)
    if (c.at >= fromMs) {
      ok += c.ok;
      failed += c.failed;
    }
  return {ok, failed};
}

/**
 * The transition the breaker makes at `nowMs` given the per-second counts of its type, or null.
 * Half-open, the counts from the second in which it turned half-open on are the probes' (while
 * open nothing of the type runs, so that second holds no older attempts but stragglers).
 */
export function evaluate(b: BreakerState, counts: readonly SecondCount[], nowMs: number, s: BreakerSettings): BreakerTransition | null {
  if (!s.enabled)
    return b.state === 'closed' ? null : {to: {...CLOSED, changedAt: nowMs}, event: 'breaker:closed', detail: 'breaker disabled'};
  const open = (openings: number, why: string): BreakerTransition => {
    const until = nowMs + cooldownMs(openings, s);
    return {
      to: {state: 'open', until, openings, changedAt: nowMs},
      event: 'breaker:opened',
      detail: `${why}; next probe at ${new Date(until).toISOString()}`,
    };
  };
  switch (b.state) {
    case 'closed': {
      // Only after it last closed: the failures that opened it last time are not counted again. The
      // second it closed in is left out too: its counts may be from before the close (an operator's
      // reset in the second the last failures came in would otherwise re-open it at once).
      const since = b.changedAt === null ? -Infinity : Math.floor(b.changedAt / 1000) * 1000 + 1000;
      const w = sum(counts, Math.max(nowMs - s.windowMs, since));
      const total = w.ok + w.failed;
      if (total >= s.minVolume && w.failed / total > s.threshold)
        return open(b.openings + 1, `${w.failed} of ${total} attempts failed in the last ${Math.round(s.windowMs / 1000)} s`);
      return null;
    }
    case 'open':
      if (b.until !== null && nowMs < b.until) return null;
      return {
        to: {state: 'half_open', until: null, openings: b.openings, changedAt: nowMs},
        event: 'breaker:half-open',
        detail: `letting ${s.probes} probe tasks through`,
      };
    case 'half_open': {
      const since = b.changedAt === null ? nowMs : Math.floor(b.changedAt / 1000) * 1000;
      const w = sum(counts, since);
      if (w.failed > 0) return open(b.openings + 1, `a probe failed (${w.failed} failed, ${w.ok} succeeded)`);
      if (w.ok >= s.closeAfter) return {to: {...CLOSED, changedAt: nowMs}, event: 'breaker:closed', detail: `${w.ok} probes succeeded`};
      return null;
    }
  }
}

/** The type's breaker settings: its stored overrides (task_types.settings.breaker) on the defaults. */
export function breakerSettings(settings: Record<string, unknown>): BreakerSettings {
  const b = settings.breaker;
  if (b === null || typeof b !== 'object') return BREAKER_DEFAULTS;
  const o = b as Record<string, unknown>;
  const num = (k: keyof BreakerSettings): number => (typeof o[k] === 'number' ? (o[k] as number) : (BREAKER_DEFAULTS[k] as number));
  return {
    enabled: typeof o.enabled === 'boolean' ? o.enabled : true,
    threshold: num('threshold'),
    minVolume: num('minVolume'),
    windowMs: Math.min(MAX_WINDOW_MS, num('windowMs')),
    cooldownMs: num('cooldownMs'),
    maxCooldownMs: num('maxCooldownMs'),
    probes: num('probes'),
    closeAfter: num('closeAfter'),
  };
}
