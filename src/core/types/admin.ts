/**
 * The type registry for operators (`ax types …` and `client.types`): what each task type is doing
 * (handlers, backlog, parked tasks, pause, breaker, limits) and the pause/resume of a type by hand.
 * Pause and resume are audited in the transaction of the change; resume releases the parked
 * backlog in batches, paced to `rate` tasks per second.
 */
import {AxError, invalid} from '../errors.js';
import type {Logger} from '../log.js';
import type {Broker} from '../broker/types.js';
import type {FlowStore, HotPathStore, InspectStore, ParkedKind, TypeEvent, TypeRecord} from '../store/types.js';
import {validateTypeName} from '../task/validate.js';
import {type Clock, sleep} from '../time.js';
import {type BreakerInput, mergeBreaker} from '../flow/settings.js';
import {breakerSettings, type BreakerSettings} from '../flow/breaker.js';
import {hasKeyLimits, limitsOf, type LimitsInput, mergeLimits} from '../flow/limits.js';
import {releaseParked} from '../flow/release.js';
import {keysView, type KeysView, TOP_KEYS} from './keys.js';

export type TypesStore = FlowStore & Pick<InspectStore, 'backlog' | 'clockNow'> & Pick<HotPathStore, 'doorbellsMark'>;

export interface TypesAdminOptions {
  store: TypesStore;
  /** Rings the backlog a resume releases; without one (read-only callers) the scheduler rings it. */
  broker?: Broker;
  clock: Clock;
  logger: Logger;
  /** The operator of the audit trail (AX_OPERATOR or user@host); read when a change is made. */
  operator: () => string;
  /** Workers' AX_FLOW_REFRESH: a resume waits one period so no worker still sees the type paused. */
  flowRefreshMs: number;
  /** A worker is live while its heartbeat is at most this old. */
  liveMs?: number;
}

/** One type as `ax types list` shows it. */
export interface TypeView {
  type: string;
  /** Live workers with a handler for it. */
  workers: string[];
  /** True when no live worker has a handler: its tasks wait (parked `unhandled`), never die of it before AX_UNHANDLED_DEAD_AFTER. */
  noHandler: boolean;
  due: number;
  delayed: number;
  /** Of `delayed`: tasks waiting for their parents or their batch (not due until released). */
  waiting: number;
  running: number;
  dead: number;
  oldestDueAt: Date | null;
  parked: Partial<Record<ParkedKind, number>>;
  paused: {by: string | null; reason: string | null; since: Date | null} | null;
  breaker: TypeRecord['breaker'];
  /** Failures / attempts over the last minute as the breaker counts them (null: no attempt counted). */
  failureRate1m: number | null;
  /**
   * Attempts finished per second over the last minute, as the breaker counts them (type_outcomes:
   * successes and failures, timeouts included; not unrecoverable failures, hand-backs, rescued leases).
   */
  rate1m: number;
  /** The cluster-wide limits (ax types set --max-running / --rate). */
  limits: TypeLimits;
}

export interface TypeDetail extends TypeView {
  history: TypeEvent[];
  /** Its task keys: the top keys by backlog and by running, and a key that dominates the backlog (keys.ts). */
  keys: KeysView;
}

export interface PauseResult {
  type: string;
  /** False: it already was paused (nothing changed, nothing audited). */
  changed: boolean;
  paused: NonNullable<TypeView['paused']>;
}

export interface ResumeResult {
  type: string;
  /** Parked tasks made due again and rung. */
  released: number;
  /** Released but not rung (RabbitMQ refused): the scheduler rings them. */
  unrung: number;
}

export interface TypesAdmin {
  list(): Promise<{at: Date; types: TypeView[]}>;
  /** Throws not_found for a type no worker, task or operator has ever named. */
  show(type: string): Promise<TypeDetail>;
  /** Stops every worker claiming the type within AX_FLOW_REFRESH; submits are still accepted and wait. Idempotent. */
  pause(type: string, reason: string | null): Promise<PauseResult>;
  /**
   * Unpauses and releases the parked backlog, at most `rate` tasks per second when given. Throws
   * conflict, changing nothing, when the type is not paused.
   */
  resume(type: string, o?: {rate?: number; reason?: string | null; onProgress?: (released: number) => void}): Promise<ResumeResult>;
  /**
   * Sets a type's breaker thresholds (the others keep their value; `reset: true` back to the
   * defaults first) and its cluster-wide limits (`maxRunning`: a whole number ≥ 1, `rate`: tasks
   * per second or text like "100/s"; `null` or "none" clears one; absent keeps it). Every value is
   * validated before anything is stored (invalid_input, nothing changed); audited. A changed rate
   * starts from a full bucket, and the tasks that waited for a changed limit are made due now (and
   * rung when there is a broker; else the scheduler rings them). A breaker turned off is closed at
   * once and the tasks it parked are released the same way. Workers apply the limits within
   * AX_FLOW_REFRESH. A well-formed type no one has used yet is accepted (settings ahead of a deploy;
   * `known: false`). Returns the effective settings.
   */
  set(type: string, input: TypeSetInput): Promise<TypeSetResult>;
  /**
   * Closes a type's breaker now (cool-down back to its base) and releases the tasks it parked (due
   * now and rung, at most `rate` per second when given); audited. Throws conflict, changing nothing,
   * when it is closed already, and invalid_input for a rate that is not a positive number.
   */
  resetBreaker(
    type: string,
    reason?: string | null,
    o?: {rate?: number; onProgress?: (released: number) => void},
  ): Promise<{type: string; from: TypeRecord['breaker']['state']; released: number; unrung: number}>;
}

export interface TypeSetInput {
  breaker?: BreakerInput;
  /** Drop every breaker override first (not the limits). */
  reset?: boolean;
  maxRunning?: LimitsInput['maxRunning'];
  rate?: LimitsInput['rate'];
  maxRunningPerKey?: LimitsInput['maxRunningPerKey'];
  ratePerKey?: LimitsInput['ratePerKey'];
  fair?: LimitsInput['fair'];
  keyWeights?: LimitsInput['keyWeights'];
}

export interface TypeSetResult {
  type: string;
  /** False: no worker, task or operator had named the type before; the settings wait for it. */
  known: boolean;
  breaker: BreakerSettings;
  /** The limits in effect now (null: none). */
  limits: TypeLimits;
  /** Tasks that waited for a limit this call changed (parked capped or rate), made due now. */
  released: number;
}

/** A type's cluster-wide limits as shown: null when not set. `rate` in tasks per second. */
export interface TypeLimits {
  maxRunning: number | null;
  rate: number | null;
  /** Most attempts running per task key (null: no limit). */
  maxRunningPerKey: number | null;
  /** Claims per second per task key (null: no limit). */
  ratePerKey: number | null;
  /** Fair dispatch: due tasks claimed round-robin across keys. */
  fair: boolean;
  /** Fair dispatch's weights (keys absent: 1). */
  keyWeights: Record<string, number>;
}

const limitsView = (settings: Record<string, unknown> | undefined): TypeLimits => {
  const l = limitsOf(settings);
  return {
    maxRunning: l.maxRunning ?? null,
    rate: l.rate ?? null,
    maxRunningPerKey: l.maxRunningPerKey ?? null,
    ratePerKey: l.ratePerKey ?? null,
    fair: l.fair === true,
    keyWeights: l.keyWeights ?? {},
  };
};

/** The window of failureRate1m and rate1m: outcomeCounts reads the seconds of it from idx_type_outcomes_second. */
const RATE_WINDOW_MS = 60_000;

const emptyBreaker: TypeRecord['breaker'] = {state: 'closed', until: null, openings: 0, changedAt: null};

export function createTypesAdmin(o: TypesAdminOptions): TypesAdmin {
  const liveMs = o.liveMs ?? 15_000;

  async function views(): Promise<{at: Date; types: TypeView[]}> {
    const [report, backlog, counts] = await Promise.all([
      o.store.typesReport({liveMs}),
      o.store.backlog(),
      o.store.outcomeCounts({windowMs: RATE_WINDOW_MS}),
    ]);
    const rate = new Map<string, {ok: number; failed: number}>();
    for (const c of counts) {
      const r = rate.get(c.type) ?? {ok: 0, failed: 0};
      r.ok += c.ok;
      r.failed += c.failed;
      rate.set(c.type, r);
    }
    const names = new Set<string>([...report.all.map((t) => t.type), ...backlog.rows.map((r) => r.type), ...Object.keys(report.handlers)]);
    const reg = new Map(report.all.map((t) => [t.type, t]));
    const bl = new Map(backlog.rows.map((r) => [r.type, r]));
    const types = [...names].sort().map((type): TypeView => {
      const t = reg.get(type);
      const b = bl.get(type);
      const workers = report.handlers[type] ?? [];
      return {
        type,
        workers,
        noHandler: workers.length === 0,
        due: b?.due ?? 0,
        delayed: b?.delayed ?? 0,
        waiting: b?.waiting ?? 0,
        running: b?.running ?? 0,
        dead: b?.dead ?? 0,
        oldestDueAt: b?.oldestDueAt ?? null,
        parked: report.parked[type] ?? {},
        paused: t?.paused ? {by: t.pausedBy, reason: t.pausedReason, since: t.pausedAt} : null,
        breaker: t?.breaker ?? emptyBreaker,
        failureRate1m: ((r) => (r && r.ok + r.failed > 0 ? r.failed / (r.ok + r.failed) : null))(rate.get(type)),
        rate1m: ((r) => (r ? (r.ok + r.failed) / (RATE_WINDOW_MS / 1000) : 0))(rate.get(type)),
        limits: limitsView(t?.settings),
      };
    });
    return {at: report.at, types};
  }

  async function known(type: string): Promise<TypeView> {
    const name = validateTypeName(type);
    const v = (await views()).types.find((t) => t.type === name);
    if (!v)
      throw new AxError('not_found', `unknown task type "${name}": no worker handles it, no task of it waits and it was never paused`);
    return v;
  }

  /** The registry row of a type (show/list views carry no changedAt precision issue: it comes from the row). */
  async function record(type: string): Promise<TypeRecord | undefined> {
    return (await o.store.typesReport({liveMs})).all.find((t) => t.type === type);
  }

  return {
    list: views,
    async set(type, input) {
      // Settings may come before the deploy: a well-formed name no one has used yet is accepted.
      const name = validateTypeName(type);
      const isKnown = (await views()).types.some((t) => t.type === name);
      const v = {type: name};
      const current = (await record(v.type))?.settings ?? {};
      const base = input.reset ? {} : ((current.breaker as Partial<BreakerSettings> | undefined) ?? {});
      const breaker = mergeBreaker(base, input.breaker ?? {});
      const before = limitsOf(current);
      const limits = mergeLimits(before, {
        ...(input.maxRunning !== undefined ? {maxRunning: input.maxRunning} : {}),
        ...(input.rate !== undefined ? {rate: input.rate} : {}),
        ...(input.maxRunningPerKey !== undefined ? {maxRunningPerKey: input.maxRunningPerKey} : {}),
        ...(input.ratePerKey !== undefined ? {ratePerKey: input.ratePerKey} : {}),
        ...(input.fair !== undefined ? {fair: input.fair} : {}),
        ...(input.keyWeights !== undefined ? {keyWeights: input.keyWeights} : {}),
      });
      // Per-key limits and fair dispatch read the keys through their index: refused without it
      // (a claim would scan the type's rows), before anything is stored.
      if ((hasKeyLimits(limits) || limits.fair) && !(hasKeyLimits(before) || before.fair) && !(await o.store.keysIndexed()))
        throw new AxError(
          'conflict',
          'per-key limits and --fair need the index of task keys, which this database does not have yet: run `ax migrate --task-keys` (an online index build; docs/operating/flow-control.md)',
        );
      const settings: Record<string, unknown> = {...current, breaker};
      if (Object.keys(breaker).length === 0) delete settings.breaker;
      for (const k of ['maxRunning', 'rate', 'maxRunningPerKey', 'ratePerKey', 'fair', 'keyWeights']) delete settings[k];
      Object.assign(settings, limits);
      const operator = o.operator();
      const r = await o.store.typeSetSettings({
        type: v.type,
        settings,
        operator,
        resetBucket: limits.rate !== before.rate,
        audit: {operator, command: 'types set', filter: {type: v.type, ...input}, reason: null},
      });
      // Tasks waiting for a limit that changed wait no longer: due now, they meet the new limits
      // (a slot reserved at the old rate could be far ahead; a cleared cap holds nothing back).
      const kinds: ParkedKind[] = [
        ...(limits.rate !== before.rate ? (['rate'] as const) : []),
        ...(limits.maxRunning !== before.maxRunning ? (['capped'] as const) : []),
        ...(limits.maxRunningPerKey !== before.maxRunningPerKey ? (['key-capped'] as const) : []),
        ...(limits.ratePerKey !== before.ratePerKey ? (['key-rate'] as const) : []),
      ];
      // A breaker turned off closes now (not at the next worker's evaluation) and lets its parked tasks go.
      if (!breakerSettings(r.settings).enabled) {
        kinds.push('breaker');
        if (r.breaker.state !== 'closed')
          // At the database's time, like a reset (see resetBreaker).
          await o.store.breakerTransition({
            type: v.type,
            expect: {state: r.breaker.state, changedAt: r.breaker.changedAt},
            to: {state: 'closed', until: null, openings: 0, changedAt: await o.store.clockNow()},
            event: 'breaker:closed',
            detail: `breaker turned off by ${operator}`,
            actor: operator,
          });
      }
      const released = kinds.length === 0 ? {released: 0, unrung: 0} : await release(v.type, kinds, undefined);
      if (released.released > 0) o.logger.info('released the tasks that waited for what changed', {type: v.type, ...released});
      return {
        type: v.type,
        known: isKnown,
        breaker: breakerSettings(r.settings),
        limits: limitsView(r.settings),
        released: released.released,
      };
    },
    async resetBreaker(type, reason = null, opts = {}) {
      checkRate(opts.rate);
      const v = await known(type);
      const rec = await record(v.type);
      if (!rec || rec.breaker.state === 'closed') throw new AxError('conflict', `the breaker of "${v.type}" is closed: nothing to reset`);
      const operator = o.operator();
      // Closed at the database's time, never this host's: changedAt starts the failure window the
      // workers count in seconds of NOW() (a host behind would count again the failures it was
      // reset for and re-open it at once; one ahead would ignore the next failures for as long).
      const won = await o.store.breakerTransition({
        type: v.type,
        expect: {state: rec.breaker.state, changedAt: rec.breaker.changedAt},
        to: {state: 'closed', until: null, openings: 0, changedAt: await o.store.clockNow()},
        event: 'breaker:closed',
        detail: `reset by ${operator}${reason ? `: ${reason}` : ''}`,
        actor: operator,
        audit: {operator, command: 'types breaker --reset', filter: {type: v.type}, reason},
      });
      if (!won) throw new AxError('conflict', `the breaker of "${v.type}" moved meanwhile; look again (ax types show ${v.type})`);
      o.logger.info('breaker reset', {type: v.type, by: operator, from: rec.breaker.state});
      // A worker whose snapshot still says open re-checks the row before it parks one again (tasksDefer).
      const r = await release(v.type, ['breaker'], opts.rate, opts.onProgress);
      return {type: v.type, from: rec.breaker.state, released: r.released, unrung: r.unrung};
    },
    async show(type) {
      const v = await known(type);
      const [history, keys] = await Promise.all([
        o.store.typeHistory({type: v.type, limit: 50}),
        o.store.typeKeys({type: v.type, limit: TOP_KEYS}),
      ]);
      return {...v, history, keys: keysView(keys, v.due + v.delayed)};
    },
    async pause(type, reason) {
      const v = await known(type);
      const operator = o.operator();
      const r = await o.store.typeSetPaused({
        type: v.type,
        paused: true,
        operator,
        reason,
        audit: {operator, command: 'types pause', filter: {type: v.type}, reason},
      });
      if (r.changed) o.logger.info('type paused', {type: v.type, by: operator, reason});
      return {type: v.type, changed: r.changed, paused: {by: r.record.pausedBy, reason: r.record.pausedReason, since: r.record.pausedAt}};
    },
    async resume(type, opts = {}) {
      checkRate(opts.rate);
      const v = await known(type);
      if (!v.paused) throw new AxError('conflict', `type "${v.type}" is not paused: nothing to resume`);
      const operator = o.operator();
      const reason = opts.reason ?? null;
      const r = await o.store.typeSetPaused({
        type: v.type,
        paused: false,
        operator,
        reason,
        audit: {operator, command: 'types resume', filter: {type: v.type, ...(opts.rate === undefined ? {} : {rate: opts.rate})}, reason},
      });
      if (!r.changed) throw new AxError('conflict', `type "${v.type}" was resumed by someone else meanwhile`);
      o.logger.info('type resumed', {type: v.type, by: operator, rate: opts.rate ?? null});
      // Let every worker's snapshot see the resume before the backlog is rung, or a stale worker parks it again.
      await sleep(o.clock, o.flowRefreshMs + 250);
      return release(v.type, ['paused'], opts.rate, opts.onProgress);
    },
  };

  function checkRate(rate: number | undefined): void {
    if (rate !== undefined && !(Number.isFinite(rate) && rate > 0)) throw invalid('rate must be a positive number of tasks per second');
  }

  function release(type: string, kinds: ParkedKind[], rate: number | undefined, onProgress?: (n: number) => void): Promise<ResumeResult> {
    return releaseParked(o, type, kinds, {rate, onProgress});
  }
}
