/**
 * `ax top`'s FlowControl over the type registry: the breaker, pause and parked tasks of every type
 * from one registry read (FlowStore.typesReport: the same read `ax types list` shows them from), and `p` through the same TypesAdmin pause/resume as
 * `ax types pause|resume` — audited as those commands, with the reason "ax top". A type with no
 * registry row is closed and not paused (it never was either). With the keys read (`keys`), the
 * types whose backlog is at least DOMINANT_MIN_BACKLOG also get their dominant task key: the
 * KEYS_TYPES largest, each read at most once per KEYS_REFRESH_MS (the read scans the type's keyed
 * backlog: not every second).
 */
import {AxError} from '../errors.js';
import type {FlowState, FlowControl} from '../inspect/top.js';
import type {BacklogReport, FlowStore, ParkedKind, TypeKeysReport, TypeRecord, TypesReport} from '../store/types.js';
import type {TypesAdmin} from './admin.js';
import {DOMINANT_MIN_BACKLOG, dominantKey} from './keys.js';

/** How long `ax top` keeps a type's keys read (FlowStore.typeKeys) before reading them again. */
export const KEYS_REFRESH_MS = 10_000;
/** The most types whose keys `ax top` reads: the largest backlogs. */
export const KEYS_TYPES = 10;

/** The reason recorded for a pause or resume from `ax top`. */
export const TOP_REASON = 'ax top';

export interface TopFlowOptions {
  /** The registry read (the store opened lazily by the caller). */
  report: () => Promise<Pick<Awaited<ReturnType<FlowStore['typesReport']>>, 'all' | 'parked'>>;
  /** Runs `fn` with a TypesAdmin acting as `operator` (and releasing what it opened afterwards). */
  withAdmin: <T>(operator: string, fn: (admin: TypesAdmin) => Promise<T>) => Promise<T>;
  /**
   * `read`: a type's top key by backlog (FlowStore.typeKeys with limit 1); `now`: the clock of its
   * cache (ms). Without it no dominant key is shown.
   */
  keys?: {read: (type: string) => Promise<TypeKeysReport>; now: () => number};
}

const breakerOf = (s: TypeRecord['breaker']['state']): FlowState['breaker'] => (s === 'half_open' ? 'half-open' : s);

/** All parked tasks of a type, every kind together (TypesReport.parked, as TypeView.parked holds it). */
const parkedTotal = (kinds: Partial<Record<ParkedKind, number>> | undefined): number =>
  Object.values(kinds ?? {}).reduce((n, k) => n + (k ?? 0), 0);

/**
 * Breaker, pause and parked count per type: the registered types, and the types with parked tasks
 * but no registry row (closed, not paused).
 */
export function flowStatesOf(all: readonly TypeRecord[], parked: TypesReport['parked'] = {}): Map<string, FlowState> {
  const m = new Map<string, FlowState>(
    all.map((t) => [t.type, {breaker: breakerOf(t.breaker.state), paused: t.paused, parked: parkedTotal(parked[t.type])}]),
  );
  for (const [type, kinds] of Object.entries(parked))
    if (!m.has(type)) m.set(type, {breaker: 'closed', paused: false, parked: parkedTotal(kinds)});
  return m;
}

export function topFlowControl(o: TopFlowOptions): FlowControl {
  const cache = new Map<string, {at: number; report: TypeKeysReport | null}>();
  const reading = new Map<string, Promise<void>>();

  /** Reads a type's keys into the cache (a failed read: none shown until the next one). */
  function refresh({read, now}: NonNullable<TopFlowOptions['keys']>, type: string): Promise<void> {
    let p = reading.get(type);
    if (!p) {
      p = read(type).then(
        (report) => void cache.set(type, {at: now(), report}),
        () => void cache.set(type, {at: now(), report: null}),
      );
      p = p.finally(() => reading.delete(type));
      reading.set(type, p);
    }
    return p;
  }

  /**
   * The keys of the KEYS_TYPES largest backlogs of at least DOMINANT_MIN_BACKLOG: a type read the
   * first time is waited for; one read longer than KEYS_REFRESH_MS ago is read again in the
   * background (this refresh shows the previous read, so a slow scan never holds up the view).
   */
  async function keysOf(backlog: BacklogReport): Promise<Map<string, {waiting: number; report: TypeKeysReport}>> {
    const read = o.keys;
    const out = new Map<string, {waiting: number; report: TypeKeysReport}>();
    if (!read) return out;
    const big = backlog.rows
      .map((r) => ({type: r.type, waiting: r.due + r.delayed}))
      .filter((r) => r.waiting >= DOMINANT_MIN_BACKLOG)
      .sort((a, b) => b.waiting - a.waiting)
      .slice(0, KEYS_TYPES);
    for (const type of cache.keys()) if (!big.some((b) => b.type === type)) cache.delete(type);
    await Promise.all(
      big.map(async ({type, waiting}) => {
        const c = cache.get(type);
        if (!c) await refresh(read, type);
        else if (read.now() - c.at >= KEYS_REFRESH_MS) void refresh(read, type);
        const report = cache.get(type)?.report;
        if (report) out.set(type, {waiting, report});
      }),
    );
    return out;
  }

  return {
    async flowStates(backlog) {
      const [r, keys] = await Promise.all([o.report(), backlog ? keysOf(backlog) : new Map<string, never>()]);
      const m = flowStatesOf(r.all, r.parked);
      for (const [type, k] of keys) {
        const d = dominantKey(k.waiting, k.report.top);
        if (d === null) continue;
        const dominant = {key: d.key, share: d.share};
        m.set(type, {...(m.get(type) ?? {breaker: 'closed', paused: false, parked: 0}), dominant});
      }
      return m;
    },
    async setPaused({type, paused, operator}) {
      return o.withAdmin(operator, async (admin) => {
        if (paused) {
          const r = await admin.pause(type, TOP_REASON);
          return r.changed
            ? `paused ${type} (workers stop claiming it within AX_FLOW_REFRESH)`
            : `${type} was already paused by ${r.paused.by ?? '?'}`;
        }
        try {
          const r = await admin.resume(type, {reason: TOP_REASON});
          return `resumed ${type}: ${r.released} parked tasks released${r.unrung > 0 ? ` (${r.unrung} not rung yet: the scheduler rings them)` : ''}`;
        } catch (e) {
          if (e instanceof AxError && e.code === 'conflict') return e.message;
          throw e;
        }
      });
    },
  };
}
