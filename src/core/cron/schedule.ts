/**
 * Cron schedules: the policies the scheduler applies, as pure functions (no clock, no I/O).
 *
 * A schedule is (name, cron expression, IANA zone, task type, payload, pool, overlap and misfire
 * policies). Its occurrences are delayed tasks whose identity is (schedule, fire_at), fire_at being
 * a UTC instant (epoch ms): the store keeps that pair unique, so any number of schedulers create
 * each occurrence at most once. The next occurrence is created once one has fired (planOccurrences).
 *
 * ## Time zones and DST
 *
 * The expression is read in wall-clock time of the schedule's zone (`30 2 * * *` in Europe/Berlin
 * is 02:30 Berlin time, whatever the offset that day). On the days the offset changes:
 *
 * (a) Spring forward — a wall time that does not exist fires once, shifted forward by the length of
 *     the gap: it is read with the UTC offset in force before the gap (the rule of RFC 5545 §3.3.5,
 *     of Temporal's default "compatible" disambiguation and of java.time). `30 2 * * *` in
 *     America/New_York on 2026-03-08 fires at 03:30 EDT = 07:30Z; in Europe/Berlin on 2026-03-29 at
 *     03:30 CEST = 01:30Z; in Australia/Sydney on 2026-10-04 at 03:30 AEDT = 16:30Z (10-03). It is
 *     not skipped. When the shifted time is also a regular fire time of the schedule, the two are
 *     one occurrence (one instant, one identity): `0 * * * *` fires at 01:00 EST and then 03:00 EDT,
 *     one real hour apart, 23 times that day; `30 * * * *` fires at 01:30 EST and 03:30 EDT. (Firing
 *     instead at the end of the gap, 03:00, would give `30 * * * *` an extra run at 03:00, half an
 *     hour before its 03:30 run.)
 *
 * (b) Fall back — a wall time that happens twice fires ONCE, at its first occurrence (the earlier
 *     instant, still on summer time), never twice: `30 1 * * *` in America/New_York on 2026-11-01
 *     fires at 01:30 EDT = 05:30Z, not again at 01:30 EST = 06:30Z. Likewise for every schedule
 *     that names its hours (`0 1-3 * * *`, `* 1 * * *`, `0 *\/2 * * *`): each wall time once.
 *
 * (c) Except schedules that fire in every hour of the day — hour field `*` or equivalent
 *     (`0-23`, `*\/1`), e.g. `0 * * * *`, `*\/15 * * * *`: they are interval schedules and follow
 *     real time through the repeated hour, firing at BOTH instants of each matching wall time, as
 *     two occurrences with distinct fire_at: `0 * * * *` in New York on 2026-11-01 fires at
 *     01:00 EDT = 05:00Z and 01:00 EST = 06:00Z, 25 times that day, one real hour apart.
 *
 * Zones without DST (Asia/Shanghai, UTC) are unaffected. cron-parser only enumerates wall times (in
 * UTC); mapping them to instants is done here with Intl, so these rules hold whatever the start
 * point (see parse.ts; cron-parser's own zone handling differs in several cases).
 *
 * ## Missed fire times (misfire)
 *
 * A fire time is missed when it is more than MISFIRE_TOLERANCE_MS (1 minute) before now and its
 * occurrence was never created (no scheduler ran: downtime, a long GC, a stopped machine). A fire
 * time in [now − 1 min, now] is not missed: it is created as usual and runs at once.
 * - `skip`: missed fire times are dropped; only the next future occurrence is created.
 * - `fire-once`: however many were missed, exactly one occurrence makes up for them, with fire_at =
 *   the LATEST missed fire time (a real slot of the schedule, so (schedule, fire_at) stays unique
 *   and two schedulers catching up at once create the same one); it is due at once. Then the next
 *   future occurrence as usual.
 * Default: `fire-once` (a durable scheduler should not silently lose a run).
 *
 * ## Overlap
 *
 * When an occurrence becomes due while the previous occurrence of the same schedule has not
 * finished — state `submitted`, `running` or `failed` (waiting for a retry):
 * - `allow`: it runs anyway (occurrences are independent tasks);
 * - `skip`: it does not run; the caller records it as cancelled (skipped for overlap).
 * A previous occurrence in a terminal state (`succeeded`, `dead`, `cancelled`) never blocks.
 * Default: `allow`.
 */
import {invalid} from '../errors.js';
import {isTaskState, isTerminal, type TaskState} from '../task/state.js';
import {POOLS, type JsonObject, type PoolName, type Priority} from '../task/model.js';
import {MAX_RETRIES_LIMIT, validatePayload, validatePriority, validateTaskKey, validateTypeName} from '../task/validate.js';
import {parseDuration} from '../duration.js';
import {lastFireAtOrBefore, nextFireTimes, parseSchedule, type CronSpec} from './parse.js';

export type MisfirePolicy = 'skip' | 'fire-once';
export type OverlapPolicy = 'allow' | 'skip';
export const MISFIRE_POLICIES: readonly MisfirePolicy[] = ['skip', 'fire-once'];
export const OVERLAP_POLICIES: readonly OverlapPolicy[] = ['allow', 'skip'];
export const DEFAULT_MISFIRE: MisfirePolicy = 'fire-once';
export const DEFAULT_OVERLAP: OverlapPolicy = 'allow';

/** A fire time more than this before now, never created, is missed. */
export const MISFIRE_TOLERANCE_MS = 60_000;
/**
 * planOccurrences never returns more fire times than this: one catch-up, at most two due within the
 * tolerance (fire times are at least a minute apart), and the next future one.
 */
export const MAX_PLANNED_OCCURRENCES = 4;
/** Missed fire times are counted up to this many (the count is for logs and metrics). */
export const MISSED_COUNT_CAP = 100;

export interface PlanInput {
  spec: CronSpec;
  /** fire_at of the last occurrence created for the schedule, or null if none yet. */
  lastFireMs: number | null;
  /** When the schedule was created: fire times are counted from here when lastFireMs is null. */
  createdMs: number;
  nowMs: number;
  misfire: MisfirePolicy;
}

export interface Plan {
  /** fire_at of each occurrence to create now, ascending (create each; duplicates are refused by the store). */
  fireAtMs: number[];
  /** The earliest fire time after now: the pending occurrence (created now, or earlier). */
  nextFireMs: number;
  /**
   * The first fire time after the last occurrence created (the last of fireAtMs, else lastFireMs):
   * the next one NOT yet created, i.e. when to plan again (ScheduleRecord.nextFireAt). Null when the
   * schedule has none within reach.
   */
  followingFireMs: number | null;
  /** The fire times missed since the last occurrence (null if none); count stops at MISSED_COUNT_CAP. */
  missed: {count: number; firstMs: number; lastMs: number} | null;
}

function checkMs(ms: unknown, what: string): asserts ms is number {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) throw invalid(`${what} must be epoch milliseconds`);
}

/** Fire times after `base` and before `cutoff`, counted up to MISSED_COUNT_CAP. */
function countMissed(spec: CronSpec, base: number, cutoff: number): number {
  let count = 0;
  let from = base;
  while (count < MISSED_COUNT_CAP) {
    const batch = nextFireTimes(spec, from, Math.min(50, MISSED_COUNT_CAP - count));
    const before = batch.filter((t) => t < cutoff);
    count += before.length;
    if (before.length < batch.length || batch.length === 0) break;
    from = batch[batch.length - 1]!;
  }
  return count;
}

/**
 * Which occurrences to create now (see "Missed fire times" above). When the last occurrence created
 * is still in the future, nothing: it is the pending one. Otherwise the fire times after the last
 * occurrence (or after createdMs) that are due or missed, per the misfire policy, plus the next
 * future one. At most MAX_PLANNED_OCCURRENCES. Throws invalid_input when the schedule has no fire
 * time ahead that can be computed (an expression that fires only rarely, such as on 29 February).
 */
export function planOccurrences(input: PlanInput): Plan {
  const {spec, lastFireMs, createdMs, nowMs, misfire} = input;
  checkMs(nowMs, 'nowMs');
  checkMs(createdMs, 'createdMs');
  if (lastFireMs !== null) checkMs(lastFireMs, 'lastFireMs');
  if (!MISFIRE_POLICIES.includes(misfire)) throw invalid(`misfire must be one of ${MISFIRE_POLICIES.join(', ')}`);

  const following = (t: number): number | null => nextFireTimes(spec, t, 1)[0] ?? null;
  if (lastFireMs !== null && lastFireMs > nowMs) {
    return {fireAtMs: [], nextFireMs: lastFireMs, followingFireMs: following(lastFireMs), missed: null};
  }
  const base = lastFireMs ?? createdMs;
  const cutoff = nowMs - MISFIRE_TOLERANCE_MS; // fire times before this are missed

  const fireAtMs: number[] = [];
  let missed: Plan['missed'] = null;
  const first = nextFireTimes(spec, base, 1)[0];
  if (first !== undefined && first < cutoff) {
    const lastMissed = lastFireAtOrBefore(spec, Math.ceil(cutoff) - 1) ?? first;
    missed = {count: countMissed(spec, base, cutoff), firstMs: first, lastMs: lastMissed};
    if (misfire === 'fire-once') fireAtMs.push(lastMissed);
  }
  // Due within the tolerance, then the next future one.
  const upcoming = nextFireTimes(spec, Math.max(base, Math.ceil(cutoff) - 1), MAX_PLANNED_OCCURRENCES);
  const dueNow = upcoming.filter((t) => t <= nowMs);
  const next = upcoming.find((t) => t > nowMs);
  if (next === undefined) {
    throw invalid(`schedule ${JSON.stringify(spec.expr)} has no fire time after ${new Date(nowMs).toISOString()} within reach`);
  }
  fireAtMs.push(...dueNow.slice(-2), next);
  return {fireAtMs, nextFireMs: next, followingFireMs: following(next), missed};
}

/**
 * Overlap policy: true when an occurrence that is due now must not run because the previous
 * occurrence of the same schedule is unfinished (`submitted`, `running` or `failed`) and the policy
 * is `skip`. `previous` is null/undefined when there is no previous occurrence.
 */
export function shouldSkipForOverlap(policy: OverlapPolicy, previous: TaskState | null | undefined): boolean {
  if (!OVERLAP_POLICIES.includes(policy)) throw invalid(`overlap must be one of ${OVERLAP_POLICIES.join(', ')}`);
  if (policy === 'allow' || previous === null || previous === undefined) return false;
  if (!isTaskState(previous)) throw invalid(`unknown task state ${JSON.stringify(previous)}`);
  return !isTerminal(previous);
}

export const SCHEDULE_NAME_RE = /^[a-z0-9][a-z0-9_.-]{0,63}$/;

/** Throws invalid_input unless `name` is 1–64 of a-z 0-9 _ . - starting with a letter or digit. */
export function validateScheduleName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0) throw invalid('schedule name is required');
  if (name.length > 64) throw invalid('schedule name is longer than 64 characters');
  if (!SCHEDULE_NAME_RE.test(name)) {
    throw invalid(
      `schedule name ${JSON.stringify(name)} is not valid: use lower-case letters, digits, "_", "." and "-", starting with a letter or digit (e.g. nightly-report)`,
    );
  }
  return name;
}

/** What a caller gives to define a cron schedule. */
export interface CronInput {
  name: string;
  /** 5-field cron expression or nickname (see parse.ts). */
  cron: string;
  /** IANA zone the expression is read in; required (no implicit UTC). */
  tz: string;
  /** Task type of the occurrences (`domain_action`). */
  type: string;
  payload?: JsonObject;
  pool?: PoolName;
  /** `high`, `normal` (default) or `low`: the level of every occurrence. */
  priority?: Priority;
  overlap?: OverlapPolicy;
  misfire?: MisfirePolicy;
  /** Retries of each occurrence; default: the task default from config. */
  maxRetries?: number;
  /** Per-attempt timeout of each occurrence (ms or `30s`); default: the handler's, else config. */
  timeout?: number | string;
  /** The key of every occurrence (TaskSpec.key, e.g. `tenant:42`); default: none. */
  key?: string;
}

/** A validated schedule definition, normalised. */
export interface ValidCronInput {
  name: string;
  /** The normalised expression (5 fields, single spaces, nickname expanded). */
  cron: string;
  /** The validated zone name (see zone.ts). */
  tz: string;
  type: string;
  /** Canonical JSON text of the payload (`{}` when none). */
  payload: string;
  pool: PoolName;
  priority: Priority;
  overlap: OverlapPolicy;
  misfire: MisfirePolicy;
  /** null: the task default. */
  maxRetries: number | null;
  /** null: the default. */
  timeoutMs: number | null;
  /** The key of every occurrence; null: none. */
  key: string | null;
  spec: CronSpec;
}

const CRON_INPUT_FIELDS = new Set([
  'name',
  'cron',
  'tz',
  'type',
  'payload',
  'pool',
  'priority',
  'overlap',
  'misfire',
  'maxRetries',
  'timeout',
  'key',
]);

/**
 * Validates a schedule definition, or throws invalid_input naming the bad field. Unknown fields are
 * refused (typos must not pass silently). `nowMs` (the current time) is the reference of the "fires
 * within 5 years" check (see parseSchedule).
 */
export function validateCronInput(input: unknown, options: {payloadLimitBytes: number; nowMs: number}): ValidCronInput {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) throw invalid('a cron schedule must be an object');
  const s = input as Record<string, unknown>;
  for (const k of Object.keys(s)) if (!CRON_INPUT_FIELDS.has(k)) throw invalid(`unknown cron schedule field "${k}"`);
  const name = validateScheduleName(s.name);
  if (typeof s.cron !== 'string') throw invalid('cron is required: a cron expression such as "30 2 * * *"');
  if (typeof s.tz !== 'string') throw invalid('tz is required: an IANA time zone such as Europe/Berlin or UTC');
  const spec = parseSchedule(s.cron, s.tz, {nowMs: options.nowMs});
  const type = validateTypeName(s.type);
  const payload = validatePayload(s.payload, options.payloadLimitBytes);
  const pool = (s.pool ?? 'io') as PoolName;
  if (!(POOLS as readonly unknown[]).includes(pool)) throw invalid(`pool must be one of ${POOLS.join(', ')}`);
  const priority = validatePriority(s.priority);
  const overlap = (s.overlap ?? DEFAULT_OVERLAP) as OverlapPolicy;
  if (!OVERLAP_POLICIES.includes(overlap)) throw invalid(`overlap must be one of ${OVERLAP_POLICIES.join(', ')}`);
  const misfire = (s.misfire ?? DEFAULT_MISFIRE) as MisfirePolicy;
  if (!MISFIRE_POLICIES.includes(misfire)) throw invalid(`misfire must be one of ${MISFIRE_POLICIES.join(', ')}`);
  let maxRetries: number | null = null;
  if (s.maxRetries !== undefined) {
    if (typeof s.maxRetries !== 'number' || !Number.isInteger(s.maxRetries) || s.maxRetries < 0 || s.maxRetries > MAX_RETRIES_LIMIT) {
      throw invalid(`maxRetries must be a whole number from 0 to ${MAX_RETRIES_LIMIT}`);
    }
    maxRetries = s.maxRetries;
  }
  const timeoutMs = s.timeout === undefined ? null : parseDuration(s.timeout, 'timeout');
  if (timeoutMs !== null && timeoutMs < 1) throw invalid('timeout must be at least 1ms');
  const key = s.key === undefined ? null : validateTaskKey(s.key);
  return {name, cron: spec.expr, tz: spec.tz, type, payload, pool, priority, overlap, misfire, maxRetries, timeoutMs, key, spec};
}
