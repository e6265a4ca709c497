/**
 * Task keys (TaskSpec.key: a tenant, a customer) as operators see them: the keys of a type with the
 * most backlog and running (`ax types show`, the console), and the policy of a dominant key — one
 * key holding most of a type's backlog, so that without fair dispatch or a per-key limit its tasks
 * go first and every other key waits behind them (`ax top` flags it, `ax doctor` names it). Pure.
 */
import type {KeyCount, TypeKeysReport} from '../store/types.js';

/** A key dominates when it holds at least this share of its type's backlog… */
export const DOMINANT_SHARE = 0.5;
/**
 * …and that backlog is at least this many tasks: a few tasks of one tenant are no imbalance worth
 * a flag, and types below it are not read at all by `ax top` and `ax doctor` (the read is a scan).
 */
export const DOMINANT_MIN_BACKLOG = 100;
/** Keys listed by `ax types show` and the console: the most backlog and the most running, this many of each. */
export const TOP_KEYS = 10;

/** A key holding most of its type's backlog; `share` of the type's whole backlog, 0..1. */
export interface DominantKey {
  key: string;
  share: number;
  /** Its claimable tasks. */
  backlog: number;
  /** The type's claimable tasks, with and without a key. */
  of: number;
}

/** A type's keys as `ax types show`, the console and `--json` give them. */
export interface KeysView {
  /** Distinct keys with claimable tasks. */
  withBacklog: number;
  /** Claimable tasks with a key (due and delayed, parked included). */
  backlog: number;
  /** Distinct keys with running attempts. */
  withRunning: number;
  /** Running attempts of tasks with a key. */
  running: number;
  /** The keys with the most backlog and those with the most running (TOP_KEYS each), most backlog first. */
  top: KeyCount[];
  /** The key that holds most of the type's backlog (see dominantKey), or null. */
  dominant: DominantKey | null;
  /** False: the database has no index of task keys (`ax migrate --task-keys`): nothing was read. */
  indexed: boolean;
}

/**
 * The dominant key of a type whose claimable tasks number `typeBacklog` (due + delayed, keyed or
 * not), from its keys with the most backlog: the first when it holds ≥ DOMINANT_SHARE of it and
 * the backlog is ≥ DOMINANT_MIN_BACKLOG. The counts come from separate reads: the denominator is
 * never less than the key's own count.
 */
export function dominantKey(typeBacklog: number, top: readonly KeyCount[]): DominantKey | null {
  const first = top.reduce<KeyCount | null>((m, k) => (m === null || k.backlog > m.backlog ? k : m), null);
  if (first === null || first.backlog === 0) return null;
  const of = Math.max(typeBacklog, first.backlog);
  if (of < DOMINANT_MIN_BACKLOG) return null;
  const share = first.backlog / of;
  return share >= DOMINANT_SHARE ? {key: first.key, share, backlog: first.backlog, of} : null;
}

/** The view of a type's keys read (FlowStore.typeKeys), `typeBacklog` its claimable tasks with or without a key. */
export function keysView(r: TypeKeysReport, typeBacklog: number): KeysView {
  return {
    withBacklog: r.withBacklog,
    backlog: r.backlog,
    withRunning: r.withRunning,
    running: r.running,
    top: r.top,
    dominant: dominantKey(typeBacklog, r.top),
    indexed: r.indexed !== false,
  };
}

/** "93 %" — a share in whole percent, never rounded up to 100 unless it is. */
export const sharePct = (share: number): string => `${share >= 1 ? 100 : Math.min(99, Math.round(share * 100))} %`;

/**
 * "key tenant:42 holds 93 % of order_notify's backlog of 120,000" (the key as given: a terminal
 * caller makes it printable).
 */
export function dominantText(type: string, d: DominantKey): string {
  return `key ${d.key} holds ${sharePct(d.share)} of ${type}'s backlog of ${d.of.toLocaleString('en-US')}`;
}

/**
 * What to do about a dominant key, given the type's limits in effect (TypeLimits, or limitsOf's
 * LimitSettings): fair dispatch or a limit per key already on means the key only waits its turn
 * (nothing to advise).
 */
export function dominantAdvice(limits: object): string | null {
  const l = limits as {fair?: unknown; maxRunningPerKey?: unknown; ratePerKey?: unknown};
  if (l.fair === true || typeof l.maxRunningPerKey === 'number' || typeof l.ratePerKey === 'number') return null;
  return 'consider --fair or --max-running-per-key';
}
