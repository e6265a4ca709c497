/**
 * The data of `ax top`: one read of the live system (backlog per type, the worker registry, tasks
 * submitted since the previous read, the recent errors of one type, flow control), and the pure
 * functions that turn readings and their history into the snapshot the views show and `--once
 * --json` prints. A refresh is a handful of index-range statements (see docs/benchmarks.md).
 */
import {groupBySignature, type SignatureRow} from '../dlq/signature.js';
import {errorMessage} from '../errors.js';
import type {BacklogReport, InspectStore, WorkerRegistryStore, WorkerRow} from '../store/types.js';
import {BACKLOG_GROWING_MS, BACKLOG_P1, BACKLOG_P2} from '../thresholds.js';
import {attempts, failurePct, quantileMs, slopePerS} from './rates.js';
import {summarizeWorkers, typeActivity, workerView, type WorkerStatus} from './workers.js';

/** Submit counts stop this long before the database's now: inserts still committing are counted next time. */
export const SUBMIT_SETTLE_MS = 1000;
/** The submit window of a first (or `--once`) read. */
export const SUBMIT_FIRST_WINDOW_MS = 10_000;
/** The longest submit window (a read after a long outage counts at most this far back). */
export const SUBMIT_MAX_WINDOW_MS = 60_000;
/** How far back the errors of the selected type are read. */
export const ERRORS_WINDOW_MS = 15 * 60_000;
/** Stopped and stale workers shown for this long after their last heartbeat. */
export const WORKERS_SEEN_WITHIN_MS = 60 * 60_000;
/** History kept for the sparklines and the alert trend: a little more than the P2 window. */
export const HISTORY_MS = BACKLOG_GROWING_MS + 60_000;

/** Breaker and pause of one type, from the flow-control feature when it exists. */
export interface FlowState {
  breaker: 'closed' | 'open' | 'half-open' | null;
  paused: boolean | null;
}

/**
 * The seam to flow control (breakers, pause/resume; issue 11), implemented over the type registry
 * by core/types/top-flow.ts. Without one (a caller that passes none) `ax top` shows "—" for
 * breaker and paused and says pause is not available.
 */
export interface FlowControl {
  /** Breaker and pause of the registered types; a type not listed is closed and not paused. */
  flowStates(): Promise<Map<string, FlowState>>;
  /** Pauses or resumes a type as `operator` (audited); resolves with what to tell the operator. */
  setPaused(p: {type: string; paused: boolean; operator: string}): Promise<string>;
}

/** What `p` says without flow control. */
export const PAUSE_UNAVAILABLE = 'pause/resume needs flow control (the type registry), which this source does not have';

const UNREGISTERED: FlowState = {breaker: 'closed', paused: false};

export type TopStore = Pick<InspectStore, 'backlog' | 'failureGroups' | 'tasksCreatedCount'> & Pick<WorkerRegistryStore, 'workersList'>;

/** Raw results of one read; any part may have failed (its error is kept, the others still show). */
export interface TopReading {
  backlog: BacklogReport | null;
  workers: WorkerRow[] | null;
  /** Tasks created in [since, until) (database clock). */
  submitted: {count: number; since: Date; until: Date} | null;
  errors: {type: string; groups: SignatureRow[]} | null;
  flow: Map<string, FlowState> | null;
  /** What failed, by part ("backlog: connect ECONNREFUSED …"). */
  failures: string[];
}

export interface TopReadOptions {
  /** The `until` of the previous read's submit window (null on the first read). */
  submittedUntil: Date | null;
  /** The type whose errors to read (null: none). */
  errorsType: string | null;
  flow?: FlowControl | undefined;
}

/**
 * One read. The backlog goes first (its `at` is the database clock the submit window is cut from);
 * the others run together. Never throws: a part that fails is null and its error is in `failures`.
 */
export async function readTop(store: TopStore, o: TopReadOptions): Promise<TopReading> {
  const failures: string[] = [];
  const part = async <T>(name: string, f: () => Promise<T>): Promise<T | null> => {
    try {
      return await f();
    } catch (e) {
      failures.push(`${name}: ${errorMessage(e)}`);
      return null;
    }
  };
  const backlog = await part('backlog', () => store.backlog());
  const at = backlog?.at ?? null;
  const win = at === null ? null : submitWindow(o.submittedUntil, at);
  const [workers, submitted, errors, flow] = await Promise.all([
    part('workers', () => store.workersList({seenWithinMs: WORKERS_SEEN_WITHIN_MS})),
    win === null ? null : part('submitted', async () => ({count: await store.tasksCreatedCount(win), ...win})),
    o.errorsType === null || at === null
      ? null
      : part('errors', async () => ({
          type: o.errorsType!,
          groups: groupBySignature(await store.failureGroups({since: new Date(at.getTime() - ERRORS_WINDOW_MS), type: o.errorsType!})),
        })),
    o.flow === undefined ? null : part('flow control', () => o.flow!.flowStates()),
  ]);
  return {backlog, workers, submitted, errors, flow, failures};
}

/**
 * The submit window of a read at database time `at`: from the previous window's end (or
 * SUBMIT_FIRST_WINDOW_MS back; never more than SUBMIT_MAX_WINDOW_MS) to SUBMIT_SETTLE_MS before
 * `at`, so consecutive reads count each task once. Null when it would be empty.
 */
export function submitWindow(prevUntil: Date | null, at: Date): {since: Date; until: Date} | null {
  const until = at.getTime() - SUBMIT_SETTLE_MS;
  const since = Math.max(prevUntil?.getTime() ?? until - SUBMIT_FIRST_WINDOW_MS, until - SUBMIT_MAX_WINDOW_MS);
  return until > since ? {since: new Date(since), until: new Date(until)} : null;
}

/** One point of the history behind the sparklines and the alert trend. */
export interface TopSample {
  /** Database time (ms). */
  t: number;
  /** Due + delayed + running (the backlog sparkline). */
  backlog: number;
  /** Due tasks alone: what the alert level judges, as the alert rules do (ax_backlog_tasks{state="due"}). */
  due: number;
  submitRate: number | null;
  consumeRate: number | null;
}

export type AlertLevel = 'ok' | 'P2' | 'P1';

export interface Alert {
  level: AlertLevel;
  reason: string;
}

/**
 * The alert level of the due backlog (due tasks of every type: what the alert rules sum; delayed
 * tasks are not late and running ones are bounded by the slots), with the rules' thresholds: P1
 * above BACKLOG_P1; P2 above BACKLOG_P2 when, over the last BACKLOG_GROWING_MS, it stayed above it
 * and grew (a positive least-squares slope, as Prometheus' deriv()). Needs that much history for
 * P2 (the reason says so). The rules also wait their `for:` before firing; this view does not.
 */
export function alertLevel(history: readonly TopSample[]): Alert {
  const last = history[history.length - 1];
  if (!last) return {level: 'ok', reason: 'no data yet'};
  if (last.due > BACKLOG_P1) return {level: 'P1', reason: `due ${last.due} > ${BACKLOG_P1}`};
  if (last.due <= BACKLOG_P2) return {level: 'ok', reason: `due ${last.due} ≤ ${BACKLOG_P2}`};
  const from = last.t - BACKLOG_GROWING_MS;
  if ((history[0]?.t ?? last.t) > from) return {level: 'ok', reason: `due > ${BACKLOG_P2}; its trend needs 5m of history`};
  const window = history.filter((s) => s.t >= from);
  const slope = slopePerS(window.map((s) => ({t: s.t, v: s.due})));
  if (window.every((s) => s.due > BACKLOG_P2) && slope !== null && slope > 0)
    return {level: 'P2', reason: `due > ${BACKLOG_P2} and growing for 5m (+${Math.round(slope * 60)}/min)`};
  return {level: 'ok', reason: `due > ${BACKLOG_P2} but not growing for 5m`};
}

/** The history with `s` added and what is older than HISTORY_MS before it dropped. */
export function pushSample(history: readonly TopSample[], s: TopSample): TopSample[] {
  return [...history.filter((x) => x.t >= s.t - HISTORY_MS && x.t < s.t), s];
}

export interface TopTypeRow {
  type: string;
  due: number;
  delayed: number;
  running: number;
  dead: number;
  /** Attempts per second over the live workers' last heartbeat intervals (null: no live worker reported). */
  rate: number | null;
  failurePct: number | null;
  p95Ms: number | null;
  breaker: FlowState['breaker'];
  paused: FlowState['paused'];
  /** Age of the oldest due task (ms), null when none is due. */
  oldestDueMs: number | null;
}

export interface TopSnapshot {
  /** Database time of the read (ISO), null when the database could not be read. */
  at: string | null;
  cell: string;
  workers: Record<WorkerStatus, number>;
  /** Tasks submitted per second (the last submit window); null when unknown. */
  submitRate: number | null;
  /** Attempts finished per second over live workers; null when unknown. */
  consumeRate: number | null;
  backlog: {total: number; due: number; delayed: number; running: number; dead: number; trendPerMin: number | null} | null;
  alert: Alert;
  types: TopTypeRow[];
  /** Recent errors (ERRORS_WINDOW_MS) of `errors.type`, the largest groups first. */
  errors: {type: string; groups: SignatureRow[]} | null;
  /** Whether breaker and paused come from flow control (false: shown as "—"). */
  flowControl: boolean;
  /** What could not be read this time (the rest is shown; the next refresh retries). */
  failures: string[];
}

/**
 * The snapshot of a reading. `history` is the samples so far including this reading's (see
 * sampleOf/pushSample); the backlog trend is the slope over its last minute.
 */
export function buildSnapshot(r: TopReading, history: readonly TopSample[], cell: string): TopSnapshot {
  const views = (r.workers ?? []).map((w) => workerView(w));
  const summary = summarizeWorkers(views);
  const activity = typeActivity(views);
  const nowMs = r.backlog?.at.getTime() ?? null;
  // Types with work in the tables, and those the live workers ran in their last interval.
  const ran = [...activity].filter(([, a]) => attempts(a.window) + a.window.released > 0).map(([type]) => type);
  const names = new Set<string>([...(r.backlog?.rows.map((x) => x.type) ?? []), ...ran]);
  const byType = new Map(r.backlog?.rows.map((x) => [x.type, x]) ?? []);
  const types: TopTypeRow[] = [...names].sort().map((type) => {
    const b = byType.get(type);
    const a = activity.get(type);
    const flow = r.flow === null ? undefined : (r.flow.get(type) ?? UNREGISTERED);
    return {
      type,
      due: b?.due ?? 0,
      delayed: b?.delayed ?? 0,
      running: b?.running ?? 0,
      dead: b?.dead ?? 0,
      rate: a?.rate ?? null,
      failurePct: a ? failurePct(a.window) : null,
      p95Ms: a ? quantileMs(a.window.hist, 0.95) : null,
      breaker: flow?.breaker ?? null,
      paused: flow?.paused ?? null,
      oldestDueMs: b?.oldestDueAt && nowMs !== null ? Math.max(0, nowMs - b.oldestDueAt.getTime()) : null,
    };
  });
  const sum = (k: 'due' | 'delayed' | 'running' | 'dead'): number => (r.backlog?.rows ?? []).reduce((n, x) => n + x[k], 0);
  const last = history[history.length - 1];
  const minute = last ? history.filter((s) => s.t >= last.t - 60_000) : [];
  const slope = slopePerS(minute.map((s) => ({t: s.t, v: s.backlog})));
  return {
    at: r.backlog?.at.toISOString() ?? null,
    cell,
    workers: summary.counts,
    submitRate: submitRate(r),
    consumeRate: r.workers === null ? null : summary.rate,
    backlog:
      r.backlog === null
        ? null
        : {
            total: sum('due') + sum('delayed') + sum('running'),
            due: sum('due'),
            delayed: sum('delayed'),
            running: sum('running'),
            dead: sum('dead'),
            trendPerMin: slope === null ? null : slope * 60,
          },
    alert: alertLevel(history),
    types,
    errors: r.errors,
    flowControl: r.flow !== null,
    failures: r.failures,
  };
}

function submitRate(r: TopReading): number | null {
  if (r.submitted === null) return null;
  const s = (r.submitted.until.getTime() - r.submitted.since.getTime()) / 1000;
  return s > 0 ? r.submitted.count / s : null;
}

/** The history sample of a reading (null when the backlog could not be read). */
export function sampleOf(r: TopReading, prev: TopSample | undefined): TopSample | null {
  if (r.backlog === null) return null;
  const views = (r.workers ?? []).map((w) => workerView(w));
  const backlog = r.backlog.rows.reduce((n, x) => n + x.due + x.delayed + x.running, 0);
  const due = r.backlog.rows.reduce((n, x) => n + x.due, 0);
  // A part that failed keeps the previous value, so a sparkline does not dip to zero on an error.
  return {
    t: r.backlog.at.getTime(),
    backlog,
    due,
    submitRate: submitRate(r) ?? prev?.submitRate ?? null,
    consumeRate: r.workers === null ? (prev?.consumeRate ?? null) : summarizeWorkers(views).rate,
  };
}

/** What `ax top` carries from one refresh to the next. */
export interface TopState {
  history: TopSample[];
  submittedUntil: Date | null;
}

export const initialTopState = (): TopState => ({history: [], submittedUntil: null});

/** One refresh: a read, the history moved on, the snapshot. Never throws (failures are in the snapshot). */
export async function refreshTop(
  store: TopStore,
  state: TopState,
  o: {cell: string; errorsType: string | null; flow?: FlowControl | undefined},
): Promise<{state: TopState; snapshot: TopSnapshot}> {
  const r = await readTop(store, {submittedUntil: state.submittedUntil, errorsType: o.errorsType, flow: o.flow});
  const sample = sampleOf(r, state.history[state.history.length - 1]);
  const history = sample === null ? state.history : pushSample(state.history, sample);
  return {
    state: {history, submittedUntil: r.submitted?.until ?? state.submittedUntil},
    snapshot: buildSnapshot(r, history, o.cell),
  };
}
