/**
 * The shapes of the HTTP API (v1) as the console reads them: JSON, so every date is an ISO string.
 * Mirrors of the server's types (src/core/…), kept here so the browser bundle never imports
 * server code. Fields the console does not use are left out.
 */

export const TASK_STATES = ['submitted', 'running', 'succeeded', 'failed', 'dead', 'cancelled'] as const;
export type TaskState = (typeof TASK_STATES)[number];
export type Role = 'viewer' | 'operator' | 'producer';

export interface Session {
  authenticated: boolean;
  authRequired: boolean;
  name: string | null;
  role: Role | null;
  csrf: string | null;
  expiresAt: string | null;
  cell: string;
  cells: string[];
  version: string;
}

export interface ApiErrorBody {
  error: {code: string; message: string; details?: Record<string, unknown>};
}

export interface Alert {
  level: string;
  reason: string;
}

export interface TopWorker {
  id: string;
  status: 'live' | 'stale' | 'stopped';
  pools: Record<string, number>;
  inFlight: number;
  rate: number | null;
  rssBytes: number | null;
  heartbeatAgeMs: number;
  startedAt: string;
  types: string[];
}

export interface SeriesPoint {
  at: string;
  submitted: number;
  succeeded: number;
  failed: number;
  backlog: number;
}

/** The overview: `ax top`'s snapshot plus counts per state and the series (either may be absent). */
export interface Overview {
  at: string | null;
  cell: string;
  states?: Partial<Record<TaskState, number>> | null;
  backlog: {total: number; due: number; delayed: number; running: number; dead: number; trendPerMin: number | null} | null;
  oldestDueAgeMs?: number | null;
  submitRate: number | null;
  consumeRate: number | null;
  outbox?: {pending: number; failed: number; oldestAgeMs: number | null} | null;
  alert: Alert;
  workers: {live: number; stale: number; stopped: number};
  workerList?: TopWorker[];
  series?: SeriesPoint[];
  failures?: string[];
  /** Succeeded and cancelled are counted since this time (the sampler's window), not over the table. */
  finishedSince?: string | null;
}

export type ParkedKind = 'paused' | 'breaker' | 'unhandled' | 'capped' | 'rate';

export interface TypeView {
  type: string;
  workers: string[];
  noHandler: boolean;
  due: number;
  delayed: number;
  /** Of `delayed`: waiting for their parents or their batch (absent from older servers). */
  waiting?: number;
  running: number;
  dead: number;
  oldestDueAt: string | null;
  parked: Partial<Record<ParkedKind, number>>;
  paused: {by: string | null; reason: string | null; since: string | null} | null;
  breaker: {state: 'closed' | 'open' | 'half_open'; until: string | null; openings: number; changedAt: string | null};
  failureRate1m: number | null;
  limits: {
    maxRunning: number | null;
    rate: number | null;
    /** Per task key (sent by servers with keys: issue 25). */
    maxRunningPerKey?: number | null;
    ratePerKey?: number | null;
    fair?: boolean;
    keyWeights?: Record<string, number>;
  };
  /** Attempts finished per second by live workers (the contract names it rate1m; the server may send rate). */
  rate1m?: number | null;
  rate?: number | null;
  /** Failures in percent (0..100) over the live workers' last interval. */
  failurePct?: number | null;
  p95Ms?: number | null;
}

/** A type's task keys (src/core/types/keys.ts KeysView). Keys come from producers: shown as text only. */
export interface KeysView {
  withBacklog: number;
  backlog: number;
  withRunning: number;
  running: number;
  top: Array<{key: string; backlog: number; running: number}>;
  /** The key that holds at least half of a backlog of 100 or more (share 0..1 of `of`, the type's whole backlog). */
  dominant: {key: string; share: number; backlog: number; of: number} | null;
  /** False: the database has no index of task keys (`ax migrate --task-keys`): nothing was read. */
  indexed: boolean;
}

/** GET /types/{type}: the type's row, its task keys and its history (src/core/types/admin.ts TypeDetail). */
export interface TypeDetail extends TypeView {
  keys: KeysView;
  history: Array<{at: string; event: string; actor: string; detail: string | null}>;
}

export interface TaskRecord {
  id: string;
  cell: string;
  type: string;
  pool: string;
  priority: string;
  state: TaskState;
  attempt: number;
  maxRetries: number;
  retryBase: number;
  runAt: string;
  timeoutMs: number | null;
  worker: string | null;
  startedAt: string | null;
  submittedBy: string | null;
  dedupKey: string | null;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
  payload: unknown;
  payloadTruncated?: boolean;
  /** With payloadTruncated: the payload's size in JSON characters (it is then left out: null). */
  payloadChars?: number;
  /** The last progress a handler reported (0..100), its note and when it was written; null when none. */
  progress?: number | null;
  progressNote?: string | null;
  progressAt?: string | null;
  /** The result of its succeeded attempt (null: none); only on a single task's read. */
  result?: unknown;
}

export interface HistoryEntry {
  from: TaskState | null;
  to: TaskState;
  attempt: number;
  worker: string | null;
  at: string;
  error: string | null;
  stack: string | null;
  startedAt: string | null;
}

/** A task's parents, dependents and batch (TaskLinks of src/core/store/seams/hot-path.ts, dates as ISO strings). */
export interface TaskLinks {
  parents: Array<{id: string; type: string; state: TaskState; edge: 'waiting' | 'succeeded' | 'dead' | 'cancelled'}>;
  dependents: Array<{id: string; type: string; state: TaskState}>;
  /** Parents still waited for (> 0: the task waits and is not due). */
  waitingFor: number;
  batch: {
    id: string;
    callbackId: string;
    callbackState: TaskState | null;
    total: number;
    succeeded: number;
    dead: number;
    cancelled: number;
    createdAt: string;
    doneAt: string | null;
  } | null;
  onParentFailure: 'cancel' | 'run' | null;
}

export interface TaskDetail {
  task: TaskRecord;
  /** Absent for a task with no parents, dependents or batch. */
  links?: TaskLinks;
  timeline?: HistoryEntry[];
  /** TaskDetail of src/core/inspect/inspect.ts names it `history`; either is read. */
  history?: HistoryEntry[];
  archived?: boolean;
}

export interface TaskPage {
  tasks: TaskRecord[];
  next: string | null;
}

export interface DeadTaskRow {
  id: string;
  type: string;
  attempt: number;
  maxRetries: number;
  retryBase: number;
  createdAt: string;
  finishedAt: string;
  lastError: string | null;
}

export interface DeadPage {
  tasks: DeadTaskRow[];
  next: string | null;
}

export interface SignatureRow {
  type: string;
  signature: string;
  count: number;
  firstSeen: string;
  lastSeen: string;
  sampleId: string;
  sampleError: string | null;
}

export interface ReplayPlan {
  total: number;
  byType: Record<string, number>;
  byState?: Partial<Record<TaskState, number>>;
  sample?: string[];
  skipped?: Array<{id: string; state: string | null; why: string}>;
}

/** POST /dlq/replay answers the plan itself (contract) or wrapped as {dryRun, plan, job?} (server). */
export type ReplayAnswer = (ReplayPlan & {job?: string}) | {dryRun: boolean; plan: ReplayPlan; job?: string};

export function planOf(a: ReplayAnswer): ReplayPlan {
  return 'plan' in a ? a.plan : a;
}

export interface Job {
  id: string;
  kind: string;
  state: 'running' | 'done' | 'failed';
  done: number;
  total: number;
  result?: unknown;
  error?: {code?: string; message?: string};
}

export interface BulkPlan {
  matched: number;
  actionable: number;
  byState: Partial<Record<TaskState, number>>;
}

export interface BulkResult {
  done?: number;
  skipped?: number | unknown[];
  [key: string]: unknown;
}

export interface Schedule {
  name: string;
  cron: string;
  tz: string;
  type: string;
  paused: boolean;
  overlap: string;
  misfire: string;
  nextOccurrence: string | null;
  lastOccurrence: {taskId: string; fireAt: string; state: TaskState} | null;
}

export interface WorkerView {
  id: string;
  host: string;
  pid: number;
  pools: Record<string, number>;
  status: 'live' | 'stale' | 'stopped';
  inFlight: number;
  startedAt: string;
  heartbeatAt: string;
  heartbeatAgeMs: number;
  rssBytes: number | null;
  rate: number | null;
  scaleOut: boolean;
  types: Record<string, unknown>;
}

export interface WorkersReport {
  workers: WorkerView[];
  counts: Record<'live' | 'stale' | 'stopped', number>;
  rate: number | null;
}

export type FindingStatus = 'ok' | 'info' | 'warn' | 'problem' | 'skipped';

export interface Finding {
  id: string;
  symptom: string;
  status: FindingStatus;
  title: string;
  evidence: string[];
  next: string[];
}

export interface DoctorReport {
  verdict: 'ok' | 'warn' | 'problem' | 'unavailable';
  counts: Record<FindingStatus, number>;
  findings: Finding[];
}

export interface AuditRecord {
  id: number;
  at: string;
  operator: string;
  command: string;
  filter: Record<string, unknown>;
  reason: string | null;
  taskCount: number;
  taskIds: string[] | null;
}
