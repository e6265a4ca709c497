/**
 * `ax doctor`: the design's troubleshooting table as checks. The data is gathered once through the
 * store and broker seams (gather.ts); each check is a pure function of that data (checks-*.ts), so
 * every symptom is tested with fixed inputs.
 */
import type {
  AttemptTimes,
  BacklogReport,
  DeadErrorGroup,
  DuePoolRow,
  HeldForDispatch,
  SuccessRepeat,
  TypeKeysReport,
  TypesReport,
  WorkerRow,
} from '../store/types.js';

/** The rows of the design's troubleshooting table (plus the servers themselves). */
export const SYMPTOMS = ['services', 'not-running', 'failing', 'slow', 'duplicates', 'memory', 'timing'] as const;
export type Symptom = (typeof SYMPTOMS)[number];

/**
 * `problem`: something is wrong (non-zero exit). `warn`: worth a look, not failing on its own
 * (`--strict` makes it fail). `info`: context. `skipped`: not checked, with the reason.
 */
export type Status = 'ok' | 'info' | 'warn' | 'problem' | 'skipped';

export interface Finding {
  /** Stable id, `<area>.<what>` (e.g. `workers.none`), for scripts. */
  id: string;
  symptom: Symptom;
  status: Status;
  /** One line: what was found. */
  title: string;
  /** The observations behind it, one per line. */
  evidence: string[];
  /** What to run or do next. */
  next: string[];
}

/** A source that could not be read: why, as the AxError said it. */
export interface SourceError {
  code: string;
  message: string;
  reason?: string;
  /** What to do about it (the CLI's hint for the error). */
  hint?: string;
}

export type Source<T> = {ok: true; value: T} | {ok: false; error: SourceError};

/** Everything read from ax's database in one pass. */
export interface DbEvidence {
  /** The database clock (NOW(3)) and this host's clock in the middle of that round trip. */
  dbAt: Date;
  localAt: Date;
  rttMs: number;
  backlog: BacklogReport;
  duePools: DuePoolRow[];
  workers: WorkerRow[];
  /** Failed attempts of the window per type × error (releases, rescues and deaths included). */
  failures: DeadErrorGroup[];
  /** The deaths among them (running → dead) per type × error. */
  deaths: DeadErrorGroup[];
  /** Due tasks never rung, or rung longer than republishAfter ago and still unclaimed (a sample). */
  undispatched: HeldForDispatch[];
  repeats: SuccessRepeat[];
  attempts: AttemptTimes[];
  /** The type registry (pause, breaker per type, live handlers, parked counts); absent when not read. */
  flow?: TypesReport;
  /**
   * The task keys of the types with the largest backlogs (gather.ts keysOf: at least
   * DOMINANT_MIN_BACKLOG waiting), each with its top key by backlog; absent when not read.
   */
  keys?: Record<string, TypeKeysReport>;
}

/** Ready messages per queue, and which queue is whose. */
export interface BrokerEvidence {
  depths: Record<string, number>;
  queues: {io: string; cpu: string; poison: string};
  /** Every pool queue, each priority level (default: the io and cpu queues above). */
  poolQueues?: string[];
}

/** The settings and thresholds the checks compare with. */
export interface DoctorSettings {
  /** Start of the history window (failures, duplicates, durations). */
  since: Date;
  /** A due task older than this is late. */
  lateAfterMs: number;
  /** A clock difference beyond this (after the round trip's uncertainty) is a problem. */
  maxSkewMs: number;
  /** AX_HEARTBEAT: a worker reporting no interval of its own is stale after 3 of these (core/liveness.ts). */
  heartbeatMs: number;
  /** Due tasks unrung this long after they became due mean nobody rings (scheduler, producer). */
  unrungAfterMs: number;
  leaseMs: number;
  poolQueueCapacity: number;
}

export interface DoctorData {
  settings: DoctorSettings;
  db: Source<DbEvidence>;
  broker: Source<BrokerEvidence>;
  /**
   * The task types each live worker has handlers for, by worker id (workers register them with
   * each heartbeat: handledTypesOf). Absent when a live worker reports none (an older ax): the
   * checks then go by pools only.
   */
  handledTypes?: Record<string, string[]>;
}

/** How many of each status, the findings, and the exit code they call for. */
export interface DoctorReport {
  /** `ok` (nothing wrong), `warn` (warnings only), `problem`, or `unavailable` (a server down). */
  verdict: 'ok' | 'warn' | 'problem' | 'unavailable';
  counts: Record<Status, number>;
  findings: Finding[];
}

/** What a check sees: the database evidence, the broker's when it answered, the settings. */
export interface CheckContext {
  db: DbEvidence;
  broker: BrokerEvidence | null;
  settings: DoctorSettings;
  handledTypes?: Record<string, string[]>;
}

/** One check: its id and symptom (for the skipped finding when its source is down) and the pure function. */
export interface Check {
  id: string;
  symptom: Symptom;
  /** Also needs RabbitMQ (every check needs the database). */
  needsBroker?: true;
  run(c: CheckContext): Finding[];
}
